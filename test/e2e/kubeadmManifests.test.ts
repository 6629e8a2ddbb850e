// Issue 12, item 5: what `mvproxy deploy kubeadm` renders is what the sandbox
// runs, and a real apiserver of each version accepts it. The sandbox runs one
// control-plane replica per apiserver (as the static pods do); rendered for
// the sandbox's own ports, files and PKI, the replicas' configs and command
// lines and the sidecars' bootstraps and command lines equal what is running.
// The static pods (as Pods in kube-system), the kubeadm-patched kube-apiserver
// pod and deploy/rbac.yaml pass server-side dry-run on v1.36.3 and v1.37.2.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileText } from '../../src/cli/deploy.js';
import {
  apiserverPatch,
  controlPlanePod,
  kubeadmLayout,
  nodeServeConfig,
  nodeSidecarBootstrap,
  renderKubeadmNode,
  sidecarPod,
  type DeployLayout,
} from '../../src/deploy/kubeadm.js';
import { DEFAULT_ENVOY_CONCURRENCY, IMAGE_PROGRAM } from '../../src/deploy/replica.js';
import { SANDBOX_REPLICA_TUNING, SANDBOX_XDS_SERVER_NAME } from '../../src/tools/sandbox/controlPlanes.js';
import { SANDBOX_KUBERNETES_SERVICE_IP } from '../../src/tools/sandbox/pki.js';
import type { JsonObject } from '../../src/xds/bootstrap.js';
import { repoFile } from '../../src/util/protoRoot.js';
import { serviceObjectsForConfig } from '../../src/serve/kubernetesServiceManifest.js';
import { kubeadmApiserverPod } from '../support/kubeadmApiserverPod.js';
import { startTestSandbox, apiserverNamed, type TestSandbox } from '../support/sandbox.js';

const NODES = ['kas-a', 'kas-b'];
const hostPort = (url: string): string => new URL(url).host;

/** The arguments of a running process (after the program), by /proc. */
function argsOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
}

/** The process whose arguments include `arg`. */
function processWith(arg: string): string[] {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = argsOf(Number(entry));
      if (args.includes(arg)) return args;
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no process runs with ${arg}`);
}

const container = (pod: JsonObject): { command: string[] } => (pod['spec'] as { containers: Array<{ command: string[] }> }).containers[0] ?? { command: [] };

describe('kubeadm manifests rendered for the sandbox (v1.36.3 and v1.37.2, a replica per apiserver)', () => {
  let tb: TestSandbox;
  let layout: DeployLayout;
  let out: string;

  /** The sandbox as a DeployLayout: its ports, files and PKI, as the state file and the PKI name them. */
  function sandboxLayout(): DeployLayout {
    const state = tb.state();
    const pki = tb.sandbox.pkiFiles();
    return {
      nodes: NODES.map((name) => {
        const a = apiserverNamed(state, name);
        const replica = state.controlPlanes?.find((r) => r.name === `mvproxy-${name}`);
        const serving = pki.serving[name];
        const xdsClient = pki.xdsClients[name];
        if (!replica?.xdsTcp || !serving || !xdsClient || !a.sidecar || !a.sidecarAdminSocket) throw new Error(`the sandbox lacks a part of ${name}`);
        // Where the sandbox keeps the kubeconfig and the warm start is its own choice: read from the config it wrote.
        const written = JSON.parse(readFileSync(replica.config, 'utf8')) as { kubeconfig: string; warmStartFile: string };
        // In the node layout each node's own address, as the replicas see it, and published there.
        const address = hostPort(a.inNamespace?.direct ?? a.direct);
        const sidecarListen = hostPort(a.inNamespace?.sidecar ?? a.sidecar);
        return {
          apiserver: {
            name,
            hostname: a.hostname,
            address,
            sidecarListen,
            ...(a.inNamespace ? { publish: address, sidecarPublish: sidecarListen } : {}),
            servingCert: serving.cert,
            servingKey: serving.key,
          },
          xdsTcpListen: replica.xdsTcp,
          adminListen: hostPort(replica.admin),
          statsPort: Number(new URL(a.sidecarStats ?? '').port),
          files: {
            config: replica.config,
            bootstrap: join(state.dir, `envoy-${name}.json`),
            kubeconfig: written.kubeconfig,
            xdsSocket: replica.xdsSocket,
            adminSocket: replica.adminSocket,
            envoyAdminSocket: a.sidecarAdminSocket,
            warmStartFile: written.warmStartFile,
            xdsServerCert: pki.xdsServer.cert,
            xdsServerKey: pki.xdsServer.key,
            xdsCa: pki.ca.cert,
            xdsClientCert: xdsClient.cert,
            xdsClientKey: xdsClient.key,
          },
        };
      }),
      tls: { clientCa: pki.ca.cert, frontProxyClientCert: pki.frontProxyClient.cert, frontProxyClientKey: pki.frontProxyClient.key, peerCa: pki.peerCa },
      xdsServerName: SANDBOX_XDS_SERVER_NAME,
      image: 'mvproxy:0.1.0',
      envoyImage: 'docker.io/envoyproxy/envoy:v1.40.0',
      logLevel: 'info',
      drainSeconds: 1,
      envoyConcurrency: DEFAULT_ENVOY_CONCURRENCY,
      tuning: {
        ...SANDBOX_REPLICA_TUNING,
        ...(state.network?.mode === 'namespace' ? { publishKubernetesService: true, kubernetesServiceIp: SANDBOX_KUBERNETES_SERVICE_IP } : {}),
      },
    };
  }

  /** Writes a rendered object as `mvproxy deploy kubeadm` would, returns its path. */
  async function write(name: string, content: JsonObject, format: 'yaml' | 'json' = 'yaml'): Promise<string> {
    const path = join(out, name);
    writeFileSync(path, await fileText({ path, format, content }));
    return path;
  }

  async function dryRun(version: string, file: string): Promise<string> {
    const kas = tb.state().apiservers.find((a) => a.version === version);
    assert.ok(kas, `no apiserver at ${version}`);
    const res = await tb.kubectl(kas.kubeconfig.direct, ['apply', '--dry-run=server', '-f', file]);
    assert.equal(res.code, 0, `${file} refused by ${version}: ${res.stderr}`);
    return res.stdout;
  }

  before(async () => {
    tb = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3' },
        { name: 'kas-b', version: 'v1.37.2' },
      ],
      { controlPlaneReplicas: 'per-apiserver' },
    );
    layout = sandboxLayout();
    out = mkdtempSync(join(tmpdir(), 'mvproxy-kubeadm-'));
    // A pod needs its service account; the sandbox runs no controller-manager to make kube-system's default one.
    const first = apiserverNamed(tb.state(), 'kas-a');
    const sa = await tb.kubectl(first.kubeconfig.direct, ['create', 'serviceaccount', 'default', '-n', 'kube-system']);
    assert.ok(sa.code === 0 || /already exists/.test(sa.stderr), sa.stderr);
  });
  after(() => tb?.sandbox.down());

  it("each replica's config file is the rendered one", () => {
    for (const name of NODES) {
      const file = layout.nodes.find((n) => n.apiserver.name === name)?.files.config ?? '';
      assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), nodeServeConfig(layout, name), name);
    }
  });

  it("each replica runs the control-plane pod's command line", () => {
    for (const name of NODES) {
      const [program, ...args] = container(controlPlanePod(layout, name)).command;
      assert.equal(program, 'node');
      // node FLAGS PROGRAM serve --config=...: the same flags before the program, the same arguments after it.
      const at = args.indexOf(IMAGE_PROGRAM);
      assert.ok(at >= 0, 'the pod runs the program the image installs');
      const [flags, serve] = [args.slice(0, at), args.slice(at + 1)];
      const running = processWith(serve[1] ?? '');
      assert.deepEqual(running.slice(1, 1 + flags.length), flags, name);
      assert.deepEqual(running.slice(2 + flags.length), serve, name);
    }
  });

  it("each sidecar's bootstrap is the rendered one: its own replica first, the other as failover", () => {
    for (const name of NODES) {
      const file = layout.nodes.find((n) => n.apiserver.name === name)?.files.bootstrap ?? '';
      assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), nodeSidecarBootstrap(layout, name), name);
    }
  });

  it("each sidecar runs the sidecar pod's Envoy command line", () => {
    for (const name of NODES) {
      const [program, ...args] = container(sidecarPod(layout, name)).command;
      assert.equal(program, 'envoy');
      const pid = tb.sandbox.sidecarPid(name);
      assert.ok(pid, `no sidecar of ${name}`);
      assert.deepEqual(argsOf(pid).slice(1), args, name);
    }
  });

  for (const version of ['v1.36.3', 'v1.37.2']) {
    it(`the static pods rendered for the sandbox pass server-side dry-run as Pods in kube-system on ${version}`, async () => {
      for (const name of NODES) {
        for (const [kind, pod] of [
          ['control-plane', controlPlanePod(layout, name)],
          ['sidecar', sidecarPod(layout, name)],
        ] as const) {
          assert.match(await dryRun(version, await write(`${name}-${kind}.yaml`, pod)), /created \(server dry run\)/);
        }
      }
    });

    it(`the example for a 3-node kubeadm cluster (deploy/kubeadm) passes server-side dry-run on ${version}`, async () => {
      const example = kubeadmLayout(
        [
          { name: 'cp-1', ip: '10.0.0.11' },
          { name: 'cp-2', ip: '10.0.0.12' },
          { name: 'cp-3', ip: '10.0.0.13' },
        ],
        { image: 'mvproxy:0.1.0' },
      );
      for (const node of ['cp-1', 'cp-2', 'cp-3']) {
        for (const file of renderKubeadmNode(example, node).filter((f) => f.path.endsWith('.yaml'))) {
          const committed = repoFile(join('deploy/kubeadm', node, file.path));
          assert.match(await dryRun(version, committed), /created \(server dry run\)/, committed);
        }
      }
    });

    it(`kubeadm's kube-apiserver pod with the rendered patch passes server-side dry-run on ${version}, on the new port`, async () => {
      const kas = apiserverNamed(tb.state(), 'kas-a');
      const pod = await write('kube-apiserver.yaml', kubeadmApiserverPod('10.0.0.11', `registry.k8s.io/kube-apiserver:${version}`));
      const patch = await write('kube-apiserver+json.json', apiserverPatch(layout, 'kas-a') as unknown as JsonObject, 'json');
      const patched = await tb.kubectl(kas.kubeconfig.direct, ['patch', '--local', '-f', pod, '--type', 'json', '--patch-file', patch, '-o', 'json']);
      assert.equal(patched.code, 0, patched.stderr);
      const result = JSON.parse(patched.stdout) as { spec: { containers: Array<{ command: string[]; ports: Array<{ containerPort: number }> }> } };
      const apiserverPort = Number(new URL(kas.inNamespace?.direct ?? kas.direct).port);
      const c = result.spec.containers[0];
      assert.equal(c?.command.filter((a) => a.startsWith('--secure-port=')).at(-1), `--secure-port=${apiserverPort}`, 'the last --secure-port wins');
      assert.ok(c?.command.includes('--requestheader-uid-headers=X-Remote-Uid'));
      assert.equal(c?.ports[0]?.containerPort, apiserverPort, 'the probes follow the named port');
      assert.match(await dryRun(version, await write('kube-apiserver-patched.json', result as unknown as JsonObject, 'json')), /created \(server dry run\)/);
    });

    it(`deploy/rbac.yaml passes server-side dry-run on ${version}`, async () => {
      const output = await dryRun(version, repoFile('deploy/rbac.yaml'));
      // The ClusterRole and its binding, and a Role and its binding in kube-system (the records).
      assert.equal(output.match(/\(server dry run\)/g)?.length, 4, output);
    });

    it(`deploy/rbac-publish.yaml and the kubeadm switch's slices pass server-side dry-run on ${version}`, async () => {
      const output = await dryRun(version, repoFile('deploy/rbac-publish.yaml'));
      // A Role and its binding each in default (the kubernetes Service's objects, Events) and kube-system (the liveness record).
      assert.equal(output.match(/\(server dry run\)/g)?.length, 4, output);
      const example = kubeadmLayout([{ name: 'cp-1', ip: '10.0.0.11' }], { image: 'mvproxy:0.1.0' });
      const slices = serviceObjectsForConfig(
        { ...nodeServeConfig(example, 'cp-1'), kubernetesService: { publish: true, clusterIp: '10.96.0.1' } },
        'mvproxy-slices',
      );
      assert.ok(slices, 'a publishing config has slices of its own');
      const created = await dryRun(version, await write('kubernetes-mvproxy-slices.json', slices as JsonObject, 'json'));
      assert.equal(created.match(/\(server dry run\)/g)?.length, 2, created);
    });
  }
});
