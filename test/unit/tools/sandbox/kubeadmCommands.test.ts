// How the sandbox reads kubeadm's rendered command lines and puts its own
// values in (src/tools/sandbox/kubeadmCommands.ts, kubeadmRender.ts). That the
// running processes are kubeadm's render minus the named flags:
// test/e2e/kubeadmManifests.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import {
  APISERVER_SUBSTITUTED_FLAGS,
  CONTROLLER_MANAGER_SUBSTITUTED_FLAGS,
  kubeadmRenderConfig,
  kubeadmRenderPatches,
  parseKubeadmCommand,
  substituteFlags,
} from '../../../../src/tools/sandbox/kubeadmCommands.js';
import { renderCacheFile, staticPodCommand } from '../../../../src/tools/sandbox/kubeadmRender.js';

const named = { 'secure-port': 'why', 'kubelet-client-key': 'why', 'runtime-config': 'why' } as const;
const rendered = parseKubeadmCommand([
  'kube-apiserver',
  '--allow-privileged=true',
  '--kubelet-client-key=/k',
  '--secure-port=6443',
  '--secure-port=6444',
]).flags;

describe("reading kubeadm's command lines", () => {
  it('reads --name=value flags in order, keeping the last value of a flag given twice at its first place', () => {
    const { program, flags } = parseKubeadmCommand(['kube-apiserver', '--a=1', '--b=x=y', '--a=2', '--c=']);
    assert.equal(program, 'kube-apiserver');
    assert.deepEqual(
      [...flags],
      [
        ['a', '2'],
        ['b', 'x=y'],
        ['c', ''],
      ],
    );
  });

  it('refuses what kubeadm does not write: a flag without a value, a positional argument, an empty command', () => {
    for (const arg of ['--a', 'positional', '-v=2']) assert.throws(() => parseKubeadmCommand(['kube-apiserver', arg]), /expected --name=value/, arg);
    assert.throws(() => parseKubeadmCommand([]), /empty command/);
  });

  it("takes a static pod's first container command", () => {
    const manifest = 'apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: kube-apiserver\n    command:\n    - kube-apiserver\n    - --a=1\n';
    assert.deepEqual(staticPodCommand(manifest, 'kube-apiserver'), ['kube-apiserver', '--a=1']);
    assert.throws(() => staticPodCommand('kind: Pod\n', 'kube-apiserver'), /no container command/);
  });
});

describe("putting the sandbox's values into kubeadm's flags", () => {
  it("replaces a named flag at kubeadm's place and keeps every other flag as rendered", () => {
    assert.deepEqual(substituteFlags(rendered, named, { 'secure-port': '40001', 'kubelet-client-key': '/s/k' }), [
      '--allow-privileged=true',
      '--kubelet-client-key=/s/k',
      '--secure-port=40001',
    ]);
  });

  it('leaves a named flag out when its value is undefined', () => {
    assert.deepEqual(substituteFlags(rendered, named, { 'kubelet-client-key': undefined }), ['--allow-privileged=true', '--secure-port=6444']);
  });

  it('appends a named flag kubeadm does not set, after kubeadm flags', () => {
    assert.deepEqual(substituteFlags(rendered, named, { 'runtime-config': 'batch/v1=false' }).at(-1), '--runtime-config=batch/v1=false');
  });

  it('refuses to set a flag that is not in the named list', () => {
    assert.throws(() => substituteFlags(rendered, named, { 'allow-privileged': 'false' } as never), /not in the list/);
  });

  it('names a reason for every flag it substitutes', () => {
    for (const list of [APISERVER_SUBSTITUTED_FLAGS, CONTROLLER_MANAGER_SUBSTITUTED_FLAGS]) {
      for (const [flag, why] of Object.entries(list)) assert.ok(why.length > 10, flag);
    }
  });
});

describe('what kubeadm renders the sandbox from', () => {
  it('pins kubernetesVersion, the Service range, an external etcd without TLS files and names the node, CRI socket and patches', () => {
    const [init, cluster] = parseAllDocuments(kubeadmRenderConfig('v1.36.3', '/r/patches')).map((d) => d.toJSON());
    assert.deepEqual(init.patches, { directory: '/r/patches' });
    assert.equal(init.kind, 'InitConfiguration');
    assert.equal(init.nodeRegistration.criSocket, 'unix:///var/run/containerd/containerd.sock');
    assert.equal(cluster.kind, 'ClusterConfiguration');
    assert.equal(cluster.kubernetesVersion, 'v1.36.3');
    assert.equal(cluster.networking.serviceSubnet, '10.0.0.0/24');
    assert.deepEqual(cluster.etcd, { external: { endpoints: ['http://127.0.0.1:2379'] } });
  });

  it("patches with mvproxy's kubeadm patch, and with the endpoint reconciler's only for `none`", () => {
    assert.deepEqual(Object.keys(kubeadmRenderPatches('lease')), ['kube-apiserver+json.json']);
    assert.deepEqual(Object.keys(kubeadmRenderPatches('none')), ['kube-apiserver+json.json', 'kube-apiserver1+json.json']);
    assert.match(JSON.stringify(kubeadmRenderPatches('lease')), /--secure-port=6444/);
  });

  it('caches a render beside the kubeadm binary, one file per version and options', () => {
    const a = renderCacheFile('/c/kubernetes/v1.36.3/kubeadm', { version: 'v1.36.3', endpointReconciler: 'none' });
    assert.match(a, /^\/c\/kubernetes\/v1\.36\.3\/kubeadm-render\/[0-9a-f]{16}\.json$/);
    assert.notEqual(a, renderCacheFile('/c/kubernetes/v1.36.3/kubeadm', { version: 'v1.36.3', endpointReconciler: 'lease' }));
    assert.equal(a, renderCacheFile('/c/kubernetes/v1.36.3/kubeadm', { version: 'v1.36.3', endpointReconciler: 'none' }));
  });
});
