// Issue 12, item 5: `mvproxy deploy kubeadm` (src/deploy/kubeadm.ts). That the
// sandbox runs what it renders, and that apiservers accept it:
// test/e2e/kubeadmManifests.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseNodeFlag } from '../../../src/cli/deploy.js';
import {
  apiserverPatch,
  controlPlanePod,
  hostMounts,
  kubeadmLayout,
  nodeServeConfig,
  nodeSidecarBootstrap,
  renderKubeadmNode,
  sidecarPod,
} from '../../../src/deploy/kubeadm.js';
import { parseServeConfig } from '../../../src/serve/config.js';
import type { JsonObject } from '../../../src/xds/bootstrap.js';

const cli = fileURLToPath(new URL('../../../src/cli/main.js', import.meta.url));
const example = fileURLToPath(new URL('../../../../deploy/kubeadm', import.meta.url));
const NODE_FLAGS = ['--node', 'cp-1=10.0.0.11', '--node', 'cp-2=10.0.0.12', '--node', 'cp-3=10.0.0.13'];
const layout = kubeadmLayout(
  [
    { name: 'cp-1', ip: '10.0.0.11' },
    { name: 'cp-2', ip: '10.0.0.12' },
    { name: 'cp-3', ip: '10.0.0.13' },
  ],
  { image: 'mvproxy:0.1.0' },
);

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

type Container = { command: string[]; env?: Array<{ name: string; value: string }>; volumeMounts: Array<{ mountPath: string; readOnly: boolean }> };
const containerOf = (pod: JsonObject): Container => (pod['spec'] as { containers: Container[] }).containers[0] ?? { command: [], volumeMounts: [] };
type ControlPlaneCluster = { load_assignment: { endpoints: Array<{ priority: number; lb_endpoints: Array<{ endpoint: { address: JsonObject } }> }> } };

describe('mvproxy deploy kubeadm', () => {
  it('the committed example (deploy/kubeadm) is what the command renders for cp-1, cp-2, cp-3', () => {
    const out = mkdtempSync(join(tmpdir(), 'mvproxy-deploy-'));
    execFileSync(process.execPath, [cli, 'deploy', 'kubeadm', ...NODE_FLAGS, '--out', out]);
    const rendered = filesUnder(out);
    assert.deepEqual(
      // The example publishes (the default): kubernetes-mvproxy-slices.yaml beside the nodes' folders.
      filesUnder(example).filter((f) => f !== 'README.md'),
      rendered,
    );
    for (const f of rendered) assert.equal(readFileSync(join(example, f), 'utf8'), readFileSync(join(out, f), 'utf8'), f);
  });

  it("every node's config is one mvproxy serve accepts", () => {
    for (const node of ['cp-1', 'cp-2', 'cp-3']) assert.doesNotThrow(() => parseServeConfig(nodeServeConfig(layout, node), '/', false), node);
  });

  it("moves each apiserver to 6444 on its node's address and gives 6443 to the sidecar, with the node's own kubeadm files", () => {
    const config = nodeServeConfig(layout, 'cp-2') as { apiservers: Array<{ name: string; address: string; sidecar: JsonObject }> };
    assert.deepEqual(config.apiservers[1], {
      name: 'cp-2',
      hostname: 'cp-2',
      address: '10.0.0.12:6444',
      sidecar: { listen: '10.0.0.12:6443', servingCert: '/etc/kubernetes/pki/apiserver.crt', servingKey: '/etc/kubernetes/pki/apiserver.key' },
    });
    assert.deepEqual(nodeServeConfig(layout, 'cp-2')['tls'], {
      clientCa: '/etc/kubernetes/pki/ca.crt',
      frontProxyClientCert: '/etc/kubernetes/pki/front-proxy-client.crt',
      frontProxyClientKey: '/etc/kubernetes/pki/front-proxy-client.key',
      peerCa: '/etc/kubernetes/pki/ca.crt',
    });
  });

  it("each replica serves its node's sidecar on the Unix socket and the others over mutual TLS on its node's address, under its own name", () => {
    const config = nodeServeConfig(layout, 'cp-3') as { xds: { unixSocket: string; tcp: { listen: string } }; replicaName: string };
    assert.equal(config.xds.unixSocket, '/run/mvproxy/xds.sock');
    assert.equal(config.xds.tcp.listen, '10.0.0.13:18000');
    assert.equal(config.replicaName, 'mvproxy-cp-3');
  });

  it("each sidecar's bootstrap tries its own replica (Unix socket) first, then the other nodes' replicas in order", () => {
    const clusters = (nodeSidecarBootstrap(layout, 'cp-2')['static_resources'] as { clusters: ControlPlaneCluster[] }).clusters;
    const endpoints = clusters[0]?.load_assignment.endpoints.map((e) => [e.priority, e.lb_endpoints[0]?.endpoint.address]);
    assert.deepEqual(endpoints, [
      [0, { pipe: { path: '/run/mvproxy/xds.sock' } }],
      [1, { socket_address: { address: '10.0.0.11', port_value: 18000 } }],
      [2, { socket_address: { address: '10.0.0.13', port_value: 18000 } }],
    ]);
  });

  it('the sidecar bootstrap is what `mvproxy bootstrap` prints for the same node, sockets and failover replicas', () => {
    const printed = execFileSync(
      process.execPath,
      [
        cli,
        'bootstrap',
        '--node',
        'cp-1',
        '--xds-socket',
        '/run/mvproxy/xds.sock',
        '--failover',
        '10.0.0.12:18000',
        '--failover',
        '10.0.0.13:18000',
        '--xds-ca',
        '/etc/mvproxy/pki/xds-ca.crt',
        '--xds-cert',
        '/etc/mvproxy/pki/xds-client.crt',
        '--xds-key',
        '/etc/mvproxy/pki/xds-client.key',
        '--xds-server-name',
        'mvproxy-xds',
        '--admin-socket',
        '/run/mvproxy/envoy-admin.sock',
        '--stats-port',
        '9465',
      ],
      { encoding: 'utf8' },
    );
    assert.deepEqual(JSON.parse(printed), nodeSidecarBootstrap(layout, 'cp-1'));
  });

  it("the sidecar pod runs Envoy itself (not the image's entrypoint, which drops root) from the node's bootstrap", () => {
    assert.deepEqual(containerOf(sidecarPod(layout, 'cp-1')).command, [
      'envoy',
      '-c',
      '/etc/mvproxy/envoy.json',
      '--use-dynamic-base-id',
      '-l',
      'warning',
      '--drain-time-s',
      '10',
      '--drain-strategy',
      'immediate',
      '--concurrency',
      '2',
    ]);
  });

  it("the sidecar's Envoy runs two worker threads unless told otherwise (each worker's WASM VMs hold their own copy of the documents)", () => {
    const concurrencyOf = (pod: JsonObject): string | undefined => {
      const command = containerOf(pod).command;
      return command[command.indexOf('--concurrency') + 1];
    };
    assert.equal(concurrencyOf(sidecarPod(layout, 'cp-2')), '2');
    const sixteen = kubeadmLayout([{ name: 'cp-1', ip: '10.0.0.11' }], { image: 'mvproxy:0.1.0', envoyConcurrency: 16 });
    assert.equal(concurrencyOf(sidecarPod(sixteen, 'cp-1')), '16');
  });

  it('mvproxy deploy kubeadm --envoy-concurrency N renders N worker threads into every sidecar pod, and refuses what is not a positive integer', () => {
    const out = mkdtempSync(join(tmpdir(), 'mvproxy-deploy-'));
    execFileSync(process.execPath, [cli, 'deploy', 'kubeadm', ...NODE_FLAGS, '--envoy-concurrency', '4', '--out', out]);
    for (const node of ['cp-1', 'cp-2', 'cp-3']) {
      const manifest = readFileSync(join(out, node, 'etc/kubernetes/manifests/mvproxy-sidecar.yaml'), 'utf8');
      assert.match(manifest, /- '--concurrency'\n\s+- '4'\n/, node);
    }
    assert.throws(() => execFileSync(process.execPath, [cli, 'deploy', 'kubeadm', ...NODE_FLAGS, '--envoy-concurrency', '0', '--out', out], { stdio: 'pipe' }));
  });

  it('the control-plane pod runs `mvproxy serve` with the node config, and may write only its sockets, warm start and the reload marker beside the certificates', () => {
    const c = containerOf(controlPlanePod(layout, 'cp-1'));
    assert.deepEqual(c.command, [
      'node',
      '--optimize-for-size',
      '--max-semi-space-size=1',
      '/opt/mvproxy/dist/src/cli/main.js',
      'serve',
      '--config=/etc/mvproxy/mvproxy.json',
      '--log-level=warn',
    ]);
    assert.deepEqual(c.env, [
      { name: 'MALLOC_ARENA_MAX', value: '2' },
      { name: 'MALLOC_MMAP_THRESHOLD_', value: '131072' },
    ]);
    assert.deepEqual(
      c.volumeMounts.map((m) => [m.mountPath, m.readOnly]),
      [
        ['/etc/kubernetes/pki', false],
        ['/etc/mvproxy', true],
        ['/run/mvproxy', false],
        ['/var/lib/mvproxy', false],
      ],
    );
  });

  it('the kube-apiserver patch adds the new port and certificate UIDs, and moves the named probe port with it', () => {
    assert.deepEqual(apiserverPatch(layout, 'cp-1'), [
      { op: 'test', path: '/spec/containers/0/name', value: 'kube-apiserver' },
      { op: 'add', path: '/spec/containers/0/command/-', value: '--secure-port=6444' },
      { op: 'add', path: '/spec/containers/0/command/-', value: '--requestheader-uid-headers=X-Remote-Uid' },
      { op: 'test', path: '/spec/containers/0/ports/0/name', value: 'probe-port' },
      { op: 'replace', path: '/spec/containers/0/ports/0/containerPort', value: 6444 },
    ]);
  });

  it("publishing (the default) every replica publishes the nodes' sidecars, and a second patch turns the apiservers' endpoint reconciler off", () => {
    const publishing = kubeadmLayout(
      [
        { name: 'cp-1', ip: '10.0.0.11' },
        { name: 'cp-2', ip: '10.0.0.12' },
      ],
      { image: 'mvproxy:0.1.0', tuning: { publishKubernetesService: true, kubernetesServiceIp: '10.96.0.1' } },
    );
    const config = parseServeConfig(nodeServeConfig(publishing, 'cp-2'), '/', false);
    assert.deepEqual(config.kubernetesService?.plan, {
      family: 'IPv4',
      sidecarPort: 6443,
      apiserverPort: 6444,
      targets: [
        { name: 'cp-1', sidecarIp: '10.0.0.11', apiserverIp: '10.0.0.11' },
        { name: 'cp-2', sidecarIp: '10.0.0.12', apiserverIp: '10.0.0.12' },
      ],
    });
    const patch = renderKubeadmNode(publishing, 'cp-1').find((f) => f.path === '/etc/mvproxy/kubeadm-patches/kube-apiserver1+json.json');
    assert.deepEqual(patch?.content, [
      { op: 'test', path: '/spec/containers/0/name', value: 'kube-apiserver' },
      { op: 'add', path: '/spec/containers/0/command/-', value: '--endpoint-reconciler-type=none' },
    ]);
    assert.equal(nodeServeConfig(layout, 'cp-1')['kubernetesService'], undefined, 'off unless asked for');
  });

  it('mounts only the topmost folders, writable when anything under them is written', () => {
    assert.deepEqual(hostMounts(['/a/b/c.crt', '/a/d.json', '/ab/x'], ['/a/b/e/s.sock', '/r/s.sock']), [
      { dir: '/a', writable: true },
      { dir: '/ab', writable: false },
      { dir: '/r', writable: true },
    ]);
  });

  it('takes nodes as NAME=IP[,HOSTNAME] and refuses anything else', () => {
    assert.deepEqual(parseNodeFlag('cp-1=10.0.0.11'), { name: 'cp-1', ip: '10.0.0.11' });
    assert.deepEqual(parseNodeFlag('cp-1=fd00::1,cp-1.example'), { name: 'cp-1', ip: 'fd00::1', hostname: 'cp-1.example' });
    for (const bad of ['cp-1', 'CP=10.0.0.1', 'cp-1=node-a', '=10.0.0.1']) assert.throws(() => parseNodeFlag(bad), /NAME=IP/, bad);
  });
});
