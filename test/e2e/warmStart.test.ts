// Issue 12: a sidecar that starts while its control-plane replica is starting
// (and while the other apiservers are down) serves its own apiserver: from the
// model the replica kept (warm), or, with nothing kept, from a plan that sends
// everything to its own apiserver (cold). How fast is a figure, not an
// assertion: it is printed here as a diagnostic (target 2 s). (That a sidecar
// already running a config is not sent the cold plan: test/unit/servers/ads.test.ts.)
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxApiserverState } from '../../src/tools/sandbox/state.js';
import { startTestSandbox, tokenClient, eventually, apiserverNamed, type TestSandbox } from '../support/sandbox.js';

const SVM_LIST = '/apis/storagemigration.k8s.io/v1/storageversionmigrations';
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';

describe('a sidecar started while its replica starts, with the other apiserver down', () => {
  let tb: TestSandbox;
  let kasA: SandboxApiserverState;
  let api: ReturnType<typeof tokenClient>;

  before(async () => {
    tb = await startTestSandbox([
      { name: 'kas-a', version: 'v1.36.3' },
      { name: 'kas-b', version: 'v1.37.2' },
    ]);
    kasA = apiserverNamed(tb.state(), 'kas-a');
    api = tokenClient(tb.state(), kasA.sidecar ?? '', tb.sandbox.adminBearerToken());
    // The replica has synced once: kas-a's sidecar reroutes StorageVersionMigrations to kas-b (and kept that model).
    await eventually(async () => assert.equal((await api('GET', SVM_LIST)).status, 200));
  });
  after(() => tb?.sandbox.down());

  /** Kills the replica and kas-a's sidecar, stops kas-b (the apiserver the replica watches through), runs `between`, then starts both again. */
  async function restartTogether(between: () => void = () => undefined): Promise<number> {
    await tb.sandbox.killControlPlane();
    await tb.sandbox.stopSidecar('kas-a');
    await tb.sandbox.stopApiserver('kas-b');
    between();
    const replica = tb.sandbox.restartControlPlane();
    const started = performance.now();
    await tb.sandbox.startSidecar('kas-a');
    const tookMs = performance.now() - started;
    await replica;
    return tookMs;
  }

  async function bringBackKasB(): Promise<void> {
    await tb.sandbox.startApiserver('kas-b');
    await eventually(async () => assert.equal((await api('GET', SVM_LIST)).status, 200));
  }

  it('warm: the replica serves the state it kept, and the sidecar serves its apiserver', async (t) => {
    const tookMs = await restartTogether();
    t.diagnostic(`the sidecar served its apiserver ${Math.round(tookMs)} ms after it started`);
    const log = readFileSync(join(tb.state().logs, 'mvproxy.log'), 'utf8');
    assert.match(log, /serving the last kept state until synced/);
    assert.equal((await api('GET', CONFIGMAPS)).status, 200);
    await bringBackKasB();
  });

  it('malformed: a kept file of the wrong shape is refused, and the replica starts as cold', async () => {
    const kept = tb.state().controlPlane?.warmStartFile ?? '';
    const malformed = { format: 1, savedAt: 1, model: { now: 1, apiservers: [{}], localOnly: [] }, draining: [] };
    await restartTogether(() => writeFileSync(kept, JSON.stringify(malformed)));
    const log = readFileSync(join(tb.state().logs, 'mvproxy.log'), 'utf8');
    assert.match(log, /warm-start file unusable/);
    assert.equal((await api('GET', CONFIGMAPS)).status, 200);
    assert.equal((await api('GET', SVM_LIST)).status, 404);
    await bringBackKasB();
  });

  it('cold: with nothing kept, the sidecar serves everything from its own apiserver', async (t) => {
    const tookMs = await restartTogether(() => tb.sandbox.forgetWarmStart());
    t.diagnostic(`the sidecar served its apiserver ${Math.round(tookMs)} ms after it started`);
    assert.equal((await api('GET', CONFIGMAPS)).status, 200);
    // What the cluster does without mvproxy: kas-a answers for itself.
    assert.equal((await api('GET', SVM_LIST)).status, 404);
    await bringBackKasB();
  });
});
