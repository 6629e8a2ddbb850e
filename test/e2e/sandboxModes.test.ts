// Issue 11: the sandbox runs the same apiservers three ways, so mvproxy can be
// compared with no proxy and with kube-apiserver's own Mixed Version Proxy.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { SandboxApiserverState } from '../../src/tools/sandbox/state.js';
import { startTestSandbox, tokenClient, eventually, AGGREGATED_DISCOVERY_NOPEER_ACCEPT, type TestSandbox } from '../support/sandbox.js';
import { AGGREGATED_DISCOVERY_JSON } from '../../src/model/discovery.js';

const SVM_LIST = '/apis/storagemigration.k8s.io/v1/storageversionmigrations';

function withSandbox(mode: 'upstream' | 'none'): { tb: () => TestSandbox; old: () => SandboxApiserverState } {
  let tb: TestSandbox | undefined;
  before(async () => {
    tb = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3' },
        { name: 'kas-b', version: 'v1.37.2' },
      ],
      { mode },
    );
  });
  after(() => tb?.sandbox.down());
  const get = (): TestSandbox => {
    if (!tb) throw new Error('sandbox not started');
    return tb;
  };
  return { tb: get, old: () => get().state().apiservers[0] as SandboxApiserverState };
}

/** What the `kubernetes` Service's Endpoints list: `address:port` of each, sorted. */
async function kubernetesEndpoints(tb: TestSandbox, via: SandboxApiserverState): Promise<string[]> {
  const res = await tokenClient(tb.state(), via.direct, tb.sandbox.adminBearerToken())('GET', '/api/v1/namespaces/default/endpoints/kubernetes');
  assert.equal(res.status, 200, res.body);
  const subsets = (JSON.parse(res.body) as { subsets?: { addresses?: { ip: string }[]; ports?: { port: number }[] }[] }).subsets ?? [];
  return subsets.flatMap((s) => (s.addresses ?? []).flatMap((a) => (s.ports ?? []).map((p) => `${a.ip}:${p.port}`))).sort();
}

/** Every apiserver's lease reconciler (kubeadm's default) lists it, at its node address and port, in the `kubernetes` Service. */
function itPublishesEveryApiserver(tb: () => TestSandbox, old: () => SandboxApiserverState): void {
  it("every apiserver's own lease reconciler lists it in the kubernetes Service, at its node address", async () => {
    await eventually(async () => assert.deepEqual(await kubernetesEndpoints(tb(), old()), ['192.0.2.11:6444', '192.0.2.12:6444']), 30_000);
  });
}

const groups = (body: string): string[] => (JSON.parse(body) as { items: { metadata: { name: string } }[] }).items.map((g) => g.metadata.name);

describe('sandbox mode upstream: kube-apiserver proxies to its peers itself', () => {
  const { tb, old } = withSandbox('upstream');

  itPublishesEveryApiserver(tb, old);

  it('says so in the state file and runs no sidecars or control plane', () => {
    const state = tb().state();
    assert.equal(state.mode, 'upstream');
    assert.equal(state.controlPlane, undefined);
    assert.ok(state.apiservers.every((a) => a.sidecar === undefined));
  });

  it('the v1.36.3 apiserver serves a StorageVersionMigration list by proxying it to v1.37.2', async () => {
    const api = tokenClient(tb().state(), old().direct, tb().sandbox.adminBearerToken());
    // Upstream learns its peers' resources from their leases and discovery: not at once after start.
    const res = await eventually(async () => {
      const answer = await api('GET', SVM_LIST);
      assert.equal(answer.status, 200, answer.body);
      return answer;
    }, 30_000);
    assert.equal((JSON.parse(res.body) as { kind: string }).kind, 'StorageVersionMigrationList');
  });

  it('the v1.36.3 apiserver merges its peer group into /apis, and only without profile=nopeer', async () => {
    const api = tokenClient(tb().state(), old().direct, tb().sandbox.adminBearerToken());
    await eventually(
      async () => assert.ok(groups((await api('GET', '/apis', undefined, { accept: AGGREGATED_DISCOVERY_JSON })).body).includes('storagemigration.k8s.io')),
      30_000,
    );
    assert.ok(!groups((await api('GET', '/apis', undefined, { accept: AGGREGATED_DISCOVERY_NOPEER_ACCEPT })).body).includes('storagemigration.k8s.io'));
  });
});

describe('sandbox mode none: the skew as clients meet it without any proxy', () => {
  const { tb, old } = withSandbox('none');

  itPublishesEveryApiserver(tb, old);

  it('the v1.36.3 apiserver answers 404 for a resource only v1.37.2 serves', async () => {
    const api = tokenClient(tb().state(), old().direct, tb().sandbox.adminBearerToken());
    assert.equal((await api('GET', SVM_LIST)).status, 404);
    assert.equal(tb().state().mode, 'none');
  });
});
