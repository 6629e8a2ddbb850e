// Issue 12: one control-plane replica beside each apiserver, as on a kubeadm
// cluster. Every sidecar prefers its own node's replica (Unix socket) and
// fails over to the others (mutual TLS); drains are shared through the
// Kubernetes API. Times are printed as diagnostics, not asserted.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { SandboxControlPlaneState } from '../../src/tools/sandbox/state.js';
import { startTestSandbox, eventually, tokenClient, apiserverNamed, type TestSandbox } from '../support/sandbox.js';
import { envoyAdminJson } from '../support/envoyAdmin.js';
import type { ConfigDump } from '../support/envoy.js';
import { TYPE_URL } from '../../src/xds/snapshot.js';

const execFileAsync = promisify(execFile);
const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';
const MIGRATIONS = '/apis/storagemigration.k8s.io/v1/storageversionmigrations';

describe('three apiservers, three control-plane replicas', () => {
  let tb: TestSandbox;

  const replica = (node: string): SandboxControlPlaneState => {
    const found = tb.state().controlPlanes?.find((r) => r.name === `mvproxy-${node}`);
    if (!found) throw new Error(`no replica beside ${node}`);
    return found;
  };
  const admin = async (node: string, ...args: string[]): Promise<string> =>
    (await execFileAsync(process.execPath, [CLI, 'admin', '--socket', replica(node).adminSocket, ...args], { timeout: 30_000 })).stdout;
  /** The replica's /status: cheaper to poll than the CLI. */
  const dump = async (node: string) =>
    (await (await fetch(`${replica(node).admin}/status`)).json()) as { draining: string[]; xds: Record<string, { connected: number }> };
  /** The sidecars streaming from the replica beside `node`. */
  const connectedTo = async (node: string): Promise<string[]> => {
    return Object.entries((await dump(node)).xds)
      .filter(([, x]) => x.connected > 0)
      .map(([name]) => name)
      .sort();
  };
  const through = (name: string) => tokenClient(tb.state(), apiserverNamed(tb.state(), name).sidecar ?? '', tb.sandbox.adminBearerToken());

  before(async () => {
    tb = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3' },
        { name: 'kas-b', version: 'v1.36.3' },
        { name: 'kas-c', version: 'v1.37.2' },
      ],
      { controlPlaneReplicas: 'per-apiserver' },
    );
    await eventually(async () => assert.equal((await through('kas-a')('GET', MIGRATIONS)).status, 200));
  });
  after(() => tb?.sandbox.down());

  it('each sidecar streams from the replica on its own node', async () => {
    for (const node of ['kas-a', 'kas-b', 'kas-c']) assert.deepEqual(await connectedTo(node), [node]);
  });

  it('a drain asked on one replica shows in the status of every other', async (t) => {
    await admin('kas-a', 'drain', 'kas-c');
    const asked = performance.now();
    for (const node of ['kas-b', 'kas-c']) {
      await eventually(async () => assert.deepEqual((await dump(node)).draining, ['kas-c']), 10_000, 10);
    }
    t.diagnostic(`drain seen by both other replicas ${Math.round(performance.now() - asked)} ms after it was written`);
    await admin('kas-b', 'undrain', 'kas-c', '--wait');
    for (const node of ['kas-a', 'kas-c']) {
      await eventually(async () => assert.deepEqual((await dump(node)).draining, []), 10_000, 10);
    }
  });

  it('drain --wait asked of one replica returns only once the sidecars of the other replicas have ACKed the drain', async () => {
    // What kas-b's Envoy itself runs, read on its admin interface: the replicas' bookkeeping is what is under test.
    const kasBRoutes = async (): Promise<string[]> => {
      const dump = await envoyAdminJson<ConfigDump>(
        apiserverNamed(tb.state(), 'kas-b').sidecarAdminSocket ?? '',
        '/config_dump?resource=dynamic_route_configs',
      );
      return [...new Set(dump.configs.map((c) => String(c['version_info'])))].sort();
    };
    /** The routes kas-a's replica wants kas-b's Envoy to run. */
    const wantedByKasA = async (): Promise<string[]> => {
      const status = JSON.parse(await admin('kas-a', 'status', '-o', 'json')) as {
        sidecars: Array<{ node: string; xds: Array<{ type_url: string; version_desired: string }> }>;
      };
      const kasB = status.sidecars.find((s) => s.node === 'kas-b');
      return (kasB?.xds ?? []).filter((t) => t.type_url === TYPE_URL.route).map((t) => t.version_desired);
    };
    const configMapsAtKasB = async () => JSON.parse(await admin('kas-a', 'explain', 'kas-b', CONFIGMAPS, '-o', 'json')) as { rule: string; reason: string };
    // A drain that changes nothing (kas-b already not ready, or no peer available to take over) returns at once and
    // proves nothing: first kas-b serves ConfigMaps itself, not drained, and its Envoy runs what kas-a wants.
    await eventually(async () => {
      const plan = await configMapsAtKasB();
      assert.ok(plan.rule === 'served-locally' && !/draining/.test(plan.reason), plan.reason);
      assert.deepEqual(await kasBRoutes(), await wantedByKasA());
    });
    const before = await kasBRoutes();
    // kas-b's sidecar streams from kas-b's replica; the drain is asked of kas-a's.
    await admin('kas-a', 'drain', 'kas-b', '--wait');
    const drained = await kasBRoutes();
    const plan = await configMapsAtKasB();
    assert.equal(plan.rule, 'drained-to-peers', `the drain left kas-b's plan as it was: ${plan.reason}`);
    assert.notDeepEqual(drained, before, "kas-b's Envoy runs the drained routes when --wait returns");
    assert.match(await admin('kas-a', 'status'), /^kas-b\s+via mvproxy-kas-b\s+yes/m);
    await admin('kas-a', 'undrain', 'kas-b', '--wait');
    assert.notDeepEqual(await kasBRoutes(), drained, "kas-b's Envoy runs the undrained routes when --wait returns");
  });

  it("killing kas-a's replica under load fails no request, and its sidecar fails over and keeps receiving changes", async (t) => {
    const failures: string[] = [];
    let sent = 0;
    let running = true;
    const load = (async () => {
      while (running) {
        for (const path of [CONFIGMAPS, MIGRATIONS]) {
          const res = await through('kas-a')('GET', path).catch((err: Error) => ({ status: 0, body: err.message }));
          sent++;
          if (res.status !== 200) failures.push(`${path}: ${res.status} ${res.body.slice(0, 200)}`);
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    await tb.sandbox.killControlPlane('kas-a');
    const killed = performance.now();
    await eventually(
      async () => {
        const elsewhere = [...(await connectedTo('kas-b')), ...(await connectedTo('kas-c'))];
        assert.ok(elsewhere.includes('kas-a'), `kas-a's sidecar is connected nowhere else: ${elsewhere.join(', ')}`);
      },
      20_000,
      20,
    );
    t.diagnostic(`kas-a's sidecar streamed from another replica ${Math.round(performance.now() - killed)} ms after its own was killed`);
    // A change made now reaches kas-a's sidecar through the other replica: drain kas-c, then StorageVersionMigrations (only kas-c serves them) still go to it.
    await admin('kas-b', 'drain', 'kas-a', '--wait');
    await admin('kas-b', 'undrain', 'kas-a', '--wait');
    await new Promise((r) => setTimeout(r, 500));
    running = false;
    await load;
    assert.ok(sent > 20, `only ${sent} requests sent`);
    assert.deepEqual(failures, []);
    await tb.sandbox.restartControlPlane('kas-a');
  });

  it("kas-a's sidecar and replica restarted together, with kas-b and kas-c down, serve kas-a's own requests", async (t) => {
    await tb.sandbox.stopApiserver('kas-b');
    await tb.sandbox.stopApiserver('kas-c');
    await tb.sandbox.killControlPlane('kas-a');
    await tb.sandbox.stopSidecar('kas-a');
    const restarted = tb.sandbox.restartControlPlane('kas-a');
    const started = performance.now();
    // Resolves once the sidecar serves kas-a's /readyz.
    await tb.sandbox.startSidecar('kas-a');
    t.diagnostic(`kas-a's sidecar served kas-a ${Math.round(performance.now() - started)} ms after it started with its replica (target 2 s)`);
    await restarted;
    assert.equal((await through('kas-a')('GET', CONFIGMAPS)).status, 200);
    await Promise.all([tb.sandbox.startApiserver('kas-b'), tb.sandbox.startApiserver('kas-c')]);
    await eventually(async () => assert.equal((await through('kas-a')('GET', MIGRATIONS)).status, 200));
  });
});
