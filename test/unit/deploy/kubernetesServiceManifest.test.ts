// What the operator creates for the `kubernetes` Service, since the replicas
// never create an object (src/deploy/kubernetesServiceManifest.ts), and the
// replica's readiness probe (src/deploy/kubeadm.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { controlPlanePod, kubeadmLayout, nodeServeConfig } from '../../../src/deploy/kubeadm.js';
import { OWN_SLICES_MANIFEST, serviceObjectsForConfig } from '../../../src/serve/kubernetesServiceManifest.js';
import { contentDigest, canonicalObject } from '../../../src/model/publication.js';

const nodes = [
  { name: 'cp-1', ip: '10.0.0.11' },
  { name: 'cp-2', ip: '10.0.0.12' },
];

const cli = fileURLToPath(new URL('../../../src/cli/main.js', import.meta.url));
const render = (...flags: string[]): string => {
  const out = mkdtempSync(join(tmpdir(), 'mvproxy-deploy-'));
  execFileSync(process.execPath, [cli, 'deploy', 'kubeadm', '--node', 'cp-1=10.0.0.11', '--node', 'cp-2=10.0.0.12', '--out', out, ...flags]);
  return out;
};

describe('deploy kubeadm: the kubernetes Service objects the operator creates', () => {
  it('renders no slice for the adoption step (--no-publish-kubernetes-service)', () => {
    assert.equal(readdirSync(render('--no-publish-kubernetes-service')).includes(OWN_SLICES_MANIFEST), false);
  });

  it('by default (publishing), renders mvproxy’s own slices beside the nodes’ directories', () => {
    const text = readFileSync(join(render(), OWN_SLICES_MANIFEST), 'utf8');
    assert.deepEqual(text.match(/^ {6}name: .*$/gm), ['      name: kubernetes-mvproxy-sidecars', '      name: kubernetes-mvproxy-fallback']);
  });

  it('mvproxy’s own slices alone, at the sidecars’ and the apiservers’ port, listing nothing, with a matching mvproxy digest', () => {
    const layout = kubeadmLayout(nodes, { image: 'mvproxy:0.1.0', tuning: { publishKubernetesService: true, kubernetesServiceIp: '10.96.0.1' } });
    const list = serviceObjectsForConfig(nodeServeConfig(layout, 'cp-1'), 'mvproxy-slices') as {
      items: Array<Record<string, unknown> & { metadata: Record<string, unknown> }>;
    };
    assert.deepEqual(
      list.items.map((slice) => [slice.metadata['name'], slice['addressType'], slice['endpoints'], slice['ports']]),
      [
        ['kubernetes-mvproxy-sidecars', 'IPv4', [], [{ name: 'https', port: 6443, protocol: 'TCP' }]],
        ['kubernetes-mvproxy-fallback', 'IPv4', [], [{ name: 'https', port: 6444, protocol: 'TCP' }]],
      ],
    );
    for (const slice of list.items) {
      const annotations = slice.metadata['annotations'] as Record<string, string>;
      assert.equal(annotations['mvproxy.dev/published-content'], contentDigest(canonicalObject('EndpointSlice', slice)));
    }
  });

  it('every object for a cluster where no apiserver ever published (the sandbox); none for a config that does not publish', () => {
    const layout = kubeadmLayout(nodes, { image: 'mvproxy:0.1.0', tuning: { publishKubernetesService: true, kubernetesServiceIp: '10.96.0.1' } });
    const list = serviceObjectsForConfig(nodeServeConfig(layout, 'cp-1'), 'all') as { items: Array<{ kind: string; metadata: { name: string } }> };
    assert.deepEqual(
      list.items.map((o) => `${o.kind}/${o.metadata.name}`),
      ['Endpoints/kubernetes', 'EndpointSlice/kubernetes', 'EndpointSlice/kubernetes-mvproxy-sidecars', 'EndpointSlice/kubernetes-mvproxy-fallback'],
    );
    assert.equal(serviceObjectsForConfig(nodeServeConfig(kubeadmLayout(nodes, { image: 'mvproxy:0.1.0' }), 'cp-1'), 'all'), undefined);
  });
});

describe('deploy kubeadm: the replica’s readiness', () => {
  it('the static pod probes /readyz for readiness and /healthz for liveness: a publisher in trouble is shown, never restarted', () => {
    const pod = controlPlanePod(kubeadmLayout(nodes, { image: 'mvproxy:0.1.0' }), 'cp-1') as {
      spec: { containers: Array<Record<string, { httpGet: { path: string } }>> };
    };
    const [container] = pod.spec.containers;
    assert.equal(container?.['readinessProbe']?.httpGet.path, '/readyz');
    assert.equal(container?.['livenessProbe']?.httpGet.path, '/healthz');
  });
});
