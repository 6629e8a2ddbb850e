// KEP-4020's two victims, the real ones: kube-controller-manager's namespace
// controller and garbage collector, run as kubeadm runs them on the node of
// the older apiserver and connected through its sidecar. Skew: kas-a
// (v1.36.3) serves no batch/v1 (--runtime-config), kas-b (v1.37.2) does, so
// Jobs exist only behind a peer of the controller-manager's apiserver.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync } from 'node:fs';
import { ensureComponents } from '../../src/tools/install/index.js';
import { startTestSandbox, eventually, serviceAccountToken, tokenClient, apiserverNamed, type TestSandbox } from '../support/sandbox.js';

const job = (name: string) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name },
  // Suspended: no pods (no scheduler or kubelet here); the Job is only an object the controllers must find.
  spec: { suspend: true, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } } },
});

describe("KEP-4020's clients: the real kube-controller-manager through the older apiserver's sidecar", { timeout: 600_000 }, () => {
  let tb: TestSandbox;
  let token: string;
  const viaPeer = () => tokenClient(tb.state(), apiserverNamed(tb.state(), 'kas-b').direct, token);
  const viaSidecar = () => tokenClient(tb.state(), apiserverNamed(tb.state(), 'kas-a').sidecar ?? '', token);

  before(async () => {
    tb = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3', runtimeConfig: 'batch/v1=false' },
        { name: 'kas-b', version: 'v1.37.2' },
      ],
      { controllerManager: true },
    );
    token = await serviceAccountToken(tb.state(), 'kep-clients', 'cluster-admin');
    // The garbage collector acts once it has synced its monitors, after it holds the leader lease.
    await eventually(async () => {
      const lease = await viaPeer()('GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager');
      assert.equal(lease.status, 200, 'kube-controller-manager holds no lease yet');
    }, 120_000);
  });

  after(async () => {
    await tb?.sandbox.down();
  });

  it('runs through the sidecar of the older apiserver, at its version', () => {
    const cm = tb.state().controllerManager;
    assert.ok(cm);
    assert.equal(cm.version, 'v1.36.3');
    // Its node's endpoint as seen on that node: the sidecar at NODE:6443.
    const kasA = apiserverNamed(tb.state(), 'kas-a');
    assert.equal(cm.server, kasA.inNamespace?.sidecar);
    assert.equal(cm.server, `https://${kasA.nodeAddress}:6443`);
  });

  it('deletes a namespace that holds Jobs only the peer serves, and leaves none of them behind', async () => {
    const ns = 'kep-namespace';
    assert.equal((await viaPeer()('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })).status, 201);
    for (const name of ['one', 'two']) assert.equal((await viaPeer()('POST', `/apis/batch/v1/namespaces/${ns}/jobs`, job(name))).status, 201);
    assert.equal((await viaSidecar()('DELETE', `/api/v1/namespaces/${ns}`)).status, 200);
    await eventually(
      async () => {
        assert.equal((await viaPeer()('GET', `/api/v1/namespaces/${ns}`)).status, 404, 'the namespace is still there');
      },
      180_000,
      1000,
    );
    const left = await viaPeer()('GET', `/apis/batch/v1/namespaces/${ns}/jobs`);
    assert.equal(left.status, 200);
    assert.deepEqual((JSON.parse(left.body) as { items: unknown[] }).items, [], 'Jobs of the deleted namespace are still stored');
  });

  it('keeps a dependent of a Job only the peer serves while that peer restarts, and collects it once the Job is gone', async () => {
    const ns = 'kep-gc';
    assert.equal((await viaPeer()('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })).status, 201);
    const owner = await viaPeer()('POST', `/apis/batch/v1/namespaces/${ns}/jobs`, job('owner'));
    assert.equal(owner.status, 201);
    const uid = (JSON.parse(owner.body) as { metadata: { uid: string } }).metadata.uid;
    const dependent = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'dependent', ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'owner', uid }] },
    };
    assert.equal((await viaSidecar()('POST', `/api/v1/namespaces/${ns}/configmaps`, dependent)).status, 201);
    // The only apiserver serving Jobs goes away and comes back: the garbage collector must not take that for the owner's deletion.
    await tb.sandbox.stopApiserver('kas-b');
    await sleep(20_000);
    await tb.sandbox.startApiserver('kas-b');
    await sleep(30_000);
    assert.equal((await viaSidecar()('GET', `/api/v1/namespaces/${ns}/configmaps/dependent`)).status, 200, 'the dependent was deleted while its owner exists');
    // The collector is alive and sees the owner: deleting it does collect the dependent.
    assert.equal((await viaPeer()('DELETE', `/apis/batch/v1/namespaces/${ns}/jobs/owner?propagationPolicy=Background`)).status, 200);
    await eventually(
      async () => {
        assert.equal((await viaSidecar()('GET', `/api/v1/namespaces/${ns}/configmaps/dependent`)).status, 404, 'the dependent outlived its owner');
      },
      120_000,
      1000,
    );
  });

  it('is upgraded with its node: once kas-a runs v1.37.2, a v1.37.2 controller-manager takes the leader lease', async () => {
    const components = await ensureComponents({ kubernetesVersions: ['v1.37.2'], log: () => undefined });
    const holder = async (): Promise<string> => {
      const lease = await viaPeer()('GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager');
      assert.equal(lease.status, 200, lease.body);
      return (JSON.parse(lease.body) as { spec: { holderIdentity: string } }).spec.holderIdentity;
    };
    const before = await holder();
    await tb.sandbox.stopApiserver('kas-a');
    await tb.sandbox.startApiserver('kas-a', { version: 'v1.37.2', runtimeConfig: 'batch/v1=false' });
    await eventually(async () => {
      const pid = tb.sandbox.controllerManagerPid();
      assert.ok(pid !== undefined, 'the controller-manager does not run');
      assert.equal(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0], components.kubernetes['v1.37.2']?.kubeControllerManager);
    }, 10_000);
    assert.equal(tb.state().controllerManager?.version, 'v1.37.2');
    // A new process holds the lease once the old holder's has run out.
    await eventually(async () => assert.notEqual(await holder(), before), 120_000, 1000);
  });
});
