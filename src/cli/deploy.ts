// `mvproxy deploy kubeadm`: writes, per control-plane node, the files that
// node needs (static pods, replica config, sidecar bootstrap, kubeadm patch)
// under OUT/NODE/ at their paths on the node (docs/kubeadm.md).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { isIP } from 'node:net';
import { kubeadmLayout, nodeServeConfig, renderKubeadmNode, type KubeadmNode, type RenderedFile } from '../deploy/kubeadm.js';
import type { JsonValue } from '../xds/bootstrap.js';
import { repoFile } from '../util/protoRoot.js';
import { KUBEADM_SERVICE_SUBNET, kubernetesServiceIp } from '../deploy/serviceRange.js';

const HEADER = '# Rendered by `mvproxy deploy kubeadm` (docs/kubeadm.md): render again rather than edit.\n';

/** `NAME=IP` or `NAME=IP,HOSTNAME`. */
export function parseNodeFlag(value: string): KubeadmNode {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)=([^,]+)(?:,(.+))?$/.exec(value);
  if (!m || isIP(m[3] ?? '') === 0) throw new Error(`--node ${JSON.stringify(value)} is not NAME=IP[,HOSTNAME] (NAME a DNS label, IP an address)`);
  return { name: m[1] ?? '', ip: m[3] ?? '', ...(m[4] ? { hostname: m[4] } : {}) };
}

/** The mvproxy image this checkout builds (deploy/Dockerfile): `mvproxy:<package version>`. */
export function defaultImage(): string {
  const pkg = JSON.parse(readFileSync(repoFile('package.json'), 'utf8')) as { version: string };
  return `mvproxy:${pkg.version}`;
}

export async function fileText(file: RenderedFile): Promise<string> {
  if (file.format === 'json') return `${JSON.stringify(file.content, null, 2)}\n`;
  const { dumpYaml } = await import('@kubernetes/client-node');
  return HEADER + dumpYaml(file.content, { noRefs: true, lineWidth: -1 });
}

export async function runDeploy(args: string[]): Promise<number> {
  const [target, ...rest] = args;
  if (target !== 'kubeadm')
    throw new Error(
      'usage: mvproxy deploy kubeadm --node NAME=IP[,HOSTNAME] ... --out DIR [--image IMAGE] [--envoy-image IMAGE] [--envoy-concurrency N] [--no-publish-kubernetes-service] [--service-cidr CIDR]',
    );
  const { values } = parseArgs({
    args: rest,
    options: {
      node: { type: 'string', multiple: true },
      out: { type: 'string' },
      image: { type: 'string' },
      'envoy-image': { type: 'string' },
      'envoy-concurrency': { type: 'string' },
      // Publishing is the default (every pod through a sidecar); --no-... renders the adoption step before the switch (docs/kubeadm.md).
      'publish-kubernetes-service': { type: 'boolean', default: true },
      // kubeadm's networking.serviceSubnet: its first address is the kubernetes Service's ClusterIP.
      'service-cidr': { type: 'string', default: KUBEADM_SERVICE_SUBNET },
    },
    strict: true,
    allowNegative: true,
  });
  const nodes = (values.node ?? []).map(parseNodeFlag);
  if (nodes.length === 0) throw new Error('give every control-plane node: --node NAME=IP[,HOSTNAME] (once per node)');
  if (!values.out) throw new Error('--out DIR is required');
  const envoyConcurrency = values['envoy-concurrency'] === undefined ? undefined : Number(values['envoy-concurrency']);
  if (envoyConcurrency !== undefined && !(Number.isInteger(envoyConcurrency) && envoyConcurrency >= 1))
    throw new Error("--envoy-concurrency must be a positive integer (the sidecar's Envoy worker threads)");
  const layout = kubeadmLayout(nodes, {
    image: values.image ?? defaultImage(),
    ...(values['envoy-image'] ? { envoyImage: values['envoy-image'] } : {}),
    ...(envoyConcurrency === undefined ? {} : { envoyConcurrency }),
    ...(values['publish-kubernetes-service']
      ? { tuning: { publishKubernetesService: true, kubernetesServiceIp: kubernetesServiceIp(values['service-cidr']) } }
      : {}),
  });
  for (const node of nodes) {
    for (const file of renderKubeadmNode(layout, node.name)) {
      const target = join(values.out, node.name, file.path);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, await fileText(file));
    }
  }
  // Once for the cluster, when publishing: mvproxy's own slices, which the operator creates before the replicas publish (docs/kubeadm.md).
  const first = nodes[0];
  if (layout.tuning.publishKubernetesService && first) {
    const { OWN_SLICES_MANIFEST, serviceObjectsForConfig } = await import('../serve/kubernetesServiceManifest.js');
    const content = serviceObjectsForConfig(nodeServeConfig(layout, first.name), 'mvproxy-slices') as JsonValue | undefined;
    if (content) writeFileSync(join(values.out, OWN_SLICES_MANIFEST), await fileText({ path: OWN_SLICES_MANIFEST, format: 'yaml', content }));
  }
  process.stdout.write(`wrote the files of ${nodes.map((n) => n.name).join(', ')} under ${values.out}/NODE/ (each at its path on that node)\n`);
  return 0;
}
