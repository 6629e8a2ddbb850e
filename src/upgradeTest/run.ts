// One mode's run: a fresh sandbox of three v1.36.3 apiservers behind the
// simulated load balancer, continuous load, each apiserver upgraded to
// v1.37.2 the way the mode is operated, a check of every acknowledged write,
// the rollback, a last check, and the judgement.
import { envoyAdminGet } from '../util/envoyAdmin.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InstalledComponents } from '../install/index.js';
import type { SandboxMode } from '../sandbox/options.js';
import { Sandbox } from '../sandbox/sandbox.js';
import { call, waitInSync, withAdminClient } from '../servers/adminClient.js';
import { Balancer, type Entry } from './balancer.js';
import type { ChartBand } from './chart.js';
import { Ledger, type LostWrite } from './ledger.js';
import { Load } from './load.js';
import { RESOURCES, servedByVersion, type RequestRecord, type ResourceKey, type StepRecord } from './observations.js';
import { judgeMode, judgeWatch, perSecond, type ModeOutcome } from './outcomes.js';
import { Timeline } from './timeline.js';
import { discoveryLoop, Watcher } from './watch.js';
import { ClusterReader } from './cluster.js';

export const OLD_VERSION = 'v1.36.3';
export const NEW_VERSION = 'v1.37.2';
const APISERVERS = ['kas-a', 'kas-b', 'kas-c'];
/** As production apiservers behind a load balancer run: after SIGTERM they keep serving this long with /readyz failing. */
const SHUTDOWN_DELAY_SECONDS = 2;

export interface RunOptions {
  components: InstalledComponents;
  /** One apiserver upgraded and rolled back, lighter load: for the test suite. */
  short: boolean;
  progress: (line: string) => void;
}

export async function runMode(mode: SandboxMode, opts: RunOptions): Promise<{ outcome: ModeOutcome; band: ChartBand }> {
  const log = (line: string): void => opts.progress(`[${mode}] ${line}`);
  const dir = mkdtempSync(join(tmpdir(), `mvproxy-upgrade-${mode}-`));
  log(`starting ${APISERVERS.length} apiservers ${OLD_VERSION} in ${dir}`);
  const sandbox = await Sandbox.up({
    dir,
    apiservers: APISERVERS.map((name) => ({ name, version: OLD_VERSION, shutdownDelaySeconds: SHUTDOWN_DELAY_SECONDS })),
    components: opts.components,
    mode,
  });
  // MVPROXY_UPGRADE_TEST_KEEP=1 keeps the sandbox folder (every component's log, each sidecar's Envoy stats): the evidence for a finding.
  const keep = process.env['MVPROXY_UPGRADE_TEST_KEEP'] === '1';
  try {
    return await exercise(sandbox, mode, opts, log);
  } finally {
    if (keep) await saveSidecarStats(sandbox, dir);
    await sandbox.down();
    if (keep) log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

async function saveSidecarStats(sandbox: Sandbox, dir: string): Promise<void> {
  for (const a of sandbox.state().apiservers) {
    if (!a.sidecarAdminSocket) continue;
    const stats = await envoyAdminGet(a.sidecarAdminSocket, '/stats').catch((err: Error) => err.message);
    writeFileSync(join(dir, 'logs', `${a.name}-sidecar-stats.txt`), stats);
  }
}

/** Envoy counters that say why a sidecar answered what it did. */
const SIDECAR_COUNTERS = [
  'http.apiserver.ext_proc.mvproxy.failure_mode_allowed',
  'http.apiserver.ext_proc.mvproxy.message_timeouts',
  'http.apiserver.no_cluster',
  'http.apiserver.downstream_rq_5xx',
];

async function sidecarCounters(sandbox: Sandbox): Promise<Record<string, Record<string, number>>> {
  const counters: Record<string, Record<string, number>> = {};
  for (const a of sandbox.state().apiservers) {
    if (!a.sidecarAdminSocket) continue;
    const text = await envoyAdminGet(a.sidecarAdminSocket, `/stats?filter=${encodeURIComponent('^http\\.apiserver\\.')}`).catch(() => '');
    const values = new Map(text.split('\n').map((line) => line.split(': ') as [string, string]));
    counters[a.name] = Object.fromEntries(SIDECAR_COUNTERS.map((name) => [name.replace('http.apiserver.', ''), Number(values.get(name) ?? 0)]));
  }
  return counters;
}

async function exercise(
  sandbox: Sandbox,
  mode: SandboxMode,
  opts: RunOptions,
  log: (line: string) => void,
): Promise<{ outcome: ModeOutcome; band: ChartBand }> {
  const state = sandbox.state();
  const adminSocket = state.controlPlane?.adminSocket;
  const entries: Entry[] = state.apiservers.map((a) => ({ name: a.name, url: mode === 'mvproxy' ? (a.sidecar ?? a.direct) : a.direct }));
  const cluster = new ClusterReader(sandbox);
  const creds = { ca: state.ca, token: sandbox.adminBearerToken(), cert: state.clientCerts.admin };
  await cluster.prepare(entries, creds);
  const admin = async (verb: 'Drain' | 'Undrain', apiserver: string): Promise<void> => {
    if (!adminSocket) return;
    await withAdminClient(adminSocket, async (c) => {
      await call(c, verb, { apiserver });
      await waitInSync(c, 60_000);
    });
  };
  if (adminSocket) await withAdminClient(adminSocket, (c) => waitInSync(c, 60_000));

  const loadStart = loadavg()[0] ?? 0;
  const start = performance.now();
  const now = (): number => Math.round((performance.now() - start) * 10) / 10;
  const balancer = new Balancer(entries, creds);
  const ledger = new Ledger();
  const timeline = new Timeline();
  for (const name of APISERVERS) timeline.enter(name, OLD_VERSION, servedByVersion(OLD_VERSION), 0);
  const records: RequestRecord[] = [];
  const load = new Load(balancer, ledger, { workersPerKind: opts.short ? 2 : 3, thinkMs: 25, now, prefix: mode });
  const watchers = [new Watcher(balancer, 'configmaps', 'token', now, records, []), new Watcher(balancer, 'widgets', 'cert', now, records, [])];
  await Promise.all(watchers.map((w) => w.start()));
  load.start();
  const discovery = discoveryLoop(balancer, now, records, 250);
  const hold = (): Promise<void> => new Promise((r) => setTimeout(r, opts.short ? 4000 : 5000));
  const steps: StepRecord[] = [];
  const marks: ChartBand['marks'] = [];

  const step = async (apiserver: string, from: string, to: string): Promise<void> => {
    const outAt = now();
    timeline.leave(apiserver, outAt);
    marks.push({ second: outAt / 1000, label: `${apiserver} out` });
    log(`${apiserver}: out of rotation${mode === 'mvproxy' ? ', drain' : ''}`);
    // Out of the rotation first (no new requests reach it), then the drain moves what sidecars send it to peers.
    const takeOut = balancer.takeOut(apiserver);
    await admin('Drain', apiserver);
    await takeOut;
    log(`${apiserver}: stop`);
    await sandbox.stopApiserver(apiserver);
    log(`${apiserver}: start ${to}`);
    await sandbox.startApiserver(apiserver, { version: to });
    await admin('Undrain', apiserver);
    balancer.putBack(apiserver);
    const inAt = now();
    timeline.enter(apiserver, to, servedByVersion(to), inAt);
    marks.push({ second: inAt / 1000, label: `${apiserver} ${to} in` });
    steps.push({ apiserver, from, to, outAt, inAt });
    log(`${apiserver}: back in rotation at ${to}`);
    await hold();
  };
  const check = async (resources: readonly ResourceKey[], label: string): Promise<LostWrite[]> => {
    await load.pause();
    const at = now();
    marks.push({ second: at / 1000, label });
    const lost = ledger.lostWrites(await cluster.snapshot(resources), at);
    log(`${label}: ${lost.length} acknowledged writes missing`);
    load.resume();
    return lost;
  };

  await hold();
  const order = opts.short ? APISERVERS.slice(0, 1) : APISERVERS;
  for (const a of order) await step(a, OLD_VERSION, NEW_VERSION);
  const lostMidpoint = await check(RESOURCES, 'check (all upgraded)');
  for (const a of [...order].reverse()) await step(a, NEW_VERSION, OLD_VERSION);

  await load.stop();
  await discovery.stop();
  // Let the watchers catch up with the last writes before judging them.
  const watchStart = Object.fromEntries(watchers.map((w) => [w.resourceKey, w.startedAt])) as Partial<Record<ResourceKey, number>>;
  const events = () => watchers.flatMap((w) => w.events);
  const deadline = Date.now() + 15_000;
  while (judgeWatch(ledger, events(), watchStart).missed.length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  await Promise.all(watchers.map((w) => w.stop()));
  balancer.close();
  const durationMs = now();
  const lostEnd = await check(
    RESOURCES.filter((r) => r !== 'storageversionmigrations'),
    'check (all rolled back)',
  );
  const all = [...records, ...load.records].sort((a, b) => a.t0 - b.t0);
  const watchRelists = watchers.reduce((n, w) => n + w.relists, 0);
  const outcome = judgeMode({ requests: all, watchEvents: events(), watchStart, lostMidpoint, lostEnd, steps, durationMs, watchRelists }, timeline, ledger);
  outcome.load_average = { start: loadStart, end: loadavg()[0] ?? 0 };
  if (mode === 'mvproxy') outcome.sidecar_counters = await sidecarCounters(sandbox);
  log(`done: ${JSON.stringify({ ...outcome, steps: undefined, examples: undefined })}`);
  return { outcome, band: { mode, perSecond: perSecond(all, timeline, ledger), marks } };
}
