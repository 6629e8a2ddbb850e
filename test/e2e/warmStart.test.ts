// Issue 12: a sidecar that starts while its control-plane replica is starting
// (and while the other apiservers are down) serves its own apiserver: from the
// model the replica kept (warm), or, with nothing kept, from a plan that sends
// everything to its own apiserver (cold). How fast is a figure, not an
// assertion: it is printed here as a diagnostic (target 2 s). A sidecar that
// already runs a configuration is sent neither the cold plan nor the kept one
// before the replica has read the cluster afresh: a kept state older than
// what the sidecar holds never rolls it back (test/unit/servers/adsOrdering.test.ts
// for the rule, the last test here with a real replica and Envoy).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { envoyAdminJson } from '../support/envoyAdmin.js';
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

  it('warm, with a sidecar that holds a newer configuration: the replica does not roll it back before it has synced', async (t) => {
    const socket = kasA.sidecarAdminSocket ?? '';
    /** The sidecar's route configuration: its version and how many times Envoy applied one. */
    const routes = async (): Promise<{ version: string; reloads: number }> => {
      const { stats } = await envoyAdminJson<{ stats: Array<{ name: string; value: number | string }> }>(
        socket,
        '/stats?format=json&filter=\\.rds\\..*\\.(config_reload|version_text)$',
      );
      const reloads = stats.filter((s) => s.name.endsWith('.config_reload')).reduce((sum, s) => sum + Number(s.value), 0);
      return { version: String(stats.find((s) => s.name.endsWith('.version_text'))?.value ?? ''), reloads };
    };
    const before = await routes();
    await tb.sandbox.killControlPlane();
    // An older kept state: from before kas-b's discovery was read (kas-a's sidecar would answer StorageVersionMigrations itself).
    const file = tb.state().controlPlane?.warmStartFile ?? '';
    const kept = JSON.parse(readFileSync(file, 'utf8')) as { savedAt: number; model: { apiservers: Array<Record<string, unknown>> } };
    for (const a of kept.model.apiservers) {
      if ((a['endpoint'] as { name: string }).name !== 'kas-b') continue;
      delete a['discovery'];
      delete a['discoveryEtag'];
      a['servedSet'] = [];
    }
    kept.savedAt = Date.now();
    writeFileSync(file, JSON.stringify(kept));
    // Through the restart and the replica's first read of the cluster, the sidecar keeps routing StorageVersionMigrations to kas-b.
    const statuses: number[] = [];
    const seen = new Set<string>();
    let restarting = true;
    const watching = (async () => {
      while (restarting) {
        statuses.push((await api('GET', SVM_LIST)).status);
        seen.add((await routes()).version);
      }
    })();
    const warmStarts = (): number => readFileSync(join(tb.state().logs, 'mvproxy.log'), 'utf8').split('serving the last kept state until synced').length;
    const warmStartsBefore = warmStarts();
    await tb.sandbox.restartControlPlane();
    await eventually(async () => assert.ok(warmStarts() > warmStartsBefore, 'the replica started warm'));
    // Long enough for the sidecar to reconnect and the replica to sync. (Here the replica reads the cluster within
    // a second of starting, usually before the sidecar reconnects; that an unsynced replica sends a sidecar holding a
    // configuration nothing at all is test/unit/servers/adsOrdering.test.ts.)
    await new Promise((resolve) => setTimeout(resolve, 5000));
    restarting = false;
    await watching;
    const after = await routes();
    t.diagnostic(`routes before ${JSON.stringify(before)}, after ${JSON.stringify(after)}, seen ${[...seen].join(',')}; ${statuses.length} requests`);
    assert.deepEqual([...seen], [before.version], 'the sidecar ran no other route configuration');
    assert.equal(after.reloads, before.reloads, 'Envoy applied no route configuration');
    assert.ok(statuses.length > 0 && statuses.every((status) => status === 200), `StorageVersionMigrations through kas-a: ${statuses.join(',')}`);
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
