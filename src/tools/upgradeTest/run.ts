// One run of one mode: a fresh sandbox of three apiservers at the older
// version of a pair (pairs.ts) behind the simulated load balancer,
// continuous load, each apiserver upgraded to the newer version by the
// operator's procedure (procedure.ts), a read-back of every acknowledged
// write, the rollback, a last read-back, and the judgement.
import { envoyAdminGet } from '../../util/envoyAdmin.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InstalledComponents } from '../install/index.js';
import { Sandbox } from '../sandbox/sandbox.js';
import { call, waitInSync, withAdminClient } from '../../entry/adminClient.js';
import { Balancer, type Entry } from './balancer.js';
import type { ChartBand } from './chart.js';
import { ClusterReader } from './cluster.js';
import { HEALTH_CHECK } from './healthCheck.js';
import { Ledger } from './ledger.js';
import { Load } from './load.js';
import { operatorDrains, sandboxModeOf, throughSidecars, type TestMode } from './modes.js';
import type { RequestRecord, ResourceKey } from './observations.js';
import { answersByClass, judgeMode, judgeWatch, perSecond, type ModeObservations, type ModeOutcome } from './outcomes.js';
import type { VersionPair } from './pairs.js';
import { PodLoad } from './podLoad.js';
import { Operator } from './procedure.js';
import { ServedSetObserver } from './servedSets.js';
import { runStories } from './stories.js';
import { NO_STORY_RESOURCE } from './storyJudgement.js';
import { Timeline } from './timeline.js';
import { discoveryLoop, Watcher } from './watch.js';
import { setTimeout as sleep } from 'node:timers/promises';

export const APISERVERS = ['kas-a', 'kas-b', 'kas-c'];
/**
 * kas-c, upgraded last: its (old) controller-manager leads while kas-a alone
 * serves what is new, as a leader on a node not yet upgraded does in a real
 * upgrade. On kas-a's node it would talk to the sole server itself and never
 * meet the skew the stories are about.
 */
export const DEFAULT_CONTROLLER_MANAGER_NODE = 'kas-c';
/** As production apiservers behind a load balancer run: after SIGTERM they keep serving this long with /readyz failing. */
export const SHUTDOWN_DELAY_SECONDS = 2;
/** How often each apiserver's own discovery is read (servedSets.ts). */
export const SERVED_SET_READING_INTERVAL_MS = 500;

export interface RunOptions {
  components: InstalledComponents;
  /** One apiserver upgraded and rolled back, lighter load: for the test suite. */
  short: boolean;
  pair: VersionPair;
  /**
   * The apiserver whose node runs kube-controller-manager (through its endpoint);
   * default the one upgraded last, whose controller-manager meets the skew.
   */
  controllerManagerNode?: string;
  progress: (line: string) => void;
}

export async function runMode(mode: TestMode, opts: RunOptions): Promise<{ outcome: ModeOutcome; band: ChartBand }> {
  const log = (line: string): void => opts.progress(`[${mode}] ${line}`);
  const dir = mkdtempSync(join(tmpdir(), `mvproxy-upgrade-${mode}-`));
  const { older } = opts.pair;
  log(`starting ${APISERVERS.length} apiservers ${older} in ${dir}`);
  const sandbox = await Sandbox.up({
    dir,
    apiservers: APISERVERS.map((name) => ({ name, version: older, shutdownDelaySeconds: SHUTDOWN_DELAY_SECONDS })),
    components: opts.components,
    mode: sandboxModeOf(mode),
    // KEP-4020's victims, the real ones: the stories (stories.ts) judge what its namespace controller and garbage collector did.
    controllerManager: true,
    controllerManagerNode: opts.controllerManagerNode ?? DEFAULT_CONTROLLER_MANAGER_NODE,
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

/** The controller-manager's version and whether it runs, once the run is over. */
function controllerManagerAtEnd(sandbox: Sandbox): Pick<ModeObservations, 'controllerManagerAtEnd'> {
  const cm = sandbox.state().controllerManager;
  return cm ? { controllerManagerAtEnd: { version: cm.version, running: cm.running } } : {};
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

async function exercise(sandbox: Sandbox, mode: TestMode, opts: RunOptions, log: (line: string) => void): Promise<{ outcome: ModeOutcome; band: ChartBand }> {
  const state = sandbox.state();
  const adminSocket = state.controlPlane?.adminSocket;
  const entries: Entry[] = state.apiservers.map((a) => ({ name: a.name, url: throughSidecars(mode) ? (a.sidecar ?? a.direct) : a.direct }));
  const { resources } = opts.pair;
  const cluster = new ClusterReader(sandbox);
  const creds = { ca: state.ca, token: sandbox.adminBearerToken(), cert: state.clientCerts.admin };
  await cluster.prepare(entries, creds);
  const admin = async (verb: 'Drain' | 'Undrain', apiserver: string): Promise<void> => {
    if (!adminSocket) throw new Error('mvproxy-drain: the sandbox has no control plane');
    await withAdminClient(adminSocket, async (c) => {
      await call(c, verb, { apiserver });
      await waitInSync(c, 60_000);
    });
  };
  if (adminSocket) await withAdminClient(adminSocket, (c) => waitInSync(c, 60_000));

  const loadStart = loadavg()[0] ?? 0;
  const start = performance.now();
  const now = (): number => Math.round((performance.now() - start) * 10) / 10;
  const timeline = new Timeline();
  for (const e of entries) timeline.enter(e.name, 0);
  const rotation: NonNullable<ModeOutcome['rotation']> = [];
  const balancer = new Balancer(entries, creds, {
    healthCheck: HEALTH_CHECK,
    now,
    onRotation: (name, inRotation, t, reason) => {
      if (inRotation) timeline.enter(name, t);
      else timeline.leave(name, t);
      rotation.push({ entry: name, t_s: Math.round(t) / 1000, in: inRotation, reason });
    },
  });
  const observer = new ServedSetObserver(sandbox, timeline, now, SERVED_SET_READING_INTERVAL_MS, resources);
  await observer.start();
  const ledger = new Ledger();
  const records: RequestRecord[] = [];
  const load = new Load(balancer, ledger, { workersPerKind: opts.short ? 2 : 3, thinkMs: 25, now, prefix: mode, resources });
  const watchers = [new Watcher(balancer, 'configmaps', 'token', now, records, []), new Watcher(balancer, 'widgets', 'cert', now, records, [])];
  await Promise.all(watchers.map((w) => w.start()));
  load.start();
  // Pods' clients through the `kubernetes` Service: as much a part of the cluster's load as the load balancer's.
  const pods = await PodLoad.start(sandbox, cluster, { resources, now, workers: opts.short ? 1 : 2, thinkMs: 100 });
  const discovery = discoveryLoop(balancer, now, records, 250);
  const operator = new Operator({
    sandbox,
    balancer,
    cluster,
    ledger,
    load,
    timeline,
    observer,
    now,
    log,
    holdMs: opts.short ? 4000 : 5000,
    ...(operatorDrains(mode) ? { drain: admin } : {}),
  });

  await operator.hold();
  const order = opts.short ? APISERVERS.slice(0, 1) : APISERVERS;
  let stories: ModeObservations['stories'] = { skipped: NO_STORY_RESOURCE };
  for (const a of order) {
    // The first upgrade also kills the controller-manager (SIGKILL, while that apiserver is down), as replacing a
    // static pod does; its node's own upgrade (the full run) replaces it at the new version. It must come back and
    // its controllers must still do the stories' work.
    const crash = a === order[0] ? { afterStop: () => sandbox.killControllerManager() } : {};
    await operator.step(a, opts.pair.older, opts.pair.newer, crash);
    // The first apiserver upgraded is then the only one serving the story resource, the others still old.
    const resource = opts.pair.storyResource;
    if (a === order[0] && resource !== undefined) {
      stories = await runStories({ cluster, balancer, operator, resource, server: a, version: opts.pair.newer, now, log });
    }
  }
  await operator.readBackServed(opts.short ? 'read back (one upgraded)' : 'read back (all upgraded)', resources);
  for (const a of [...order].reverse()) await operator.step(a, opts.pair.newer, opts.pair.older);

  await load.stop();
  if (pods instanceof PodLoad) await pods.stop();
  await discovery.stop();
  // Let the watchers catch up with the last writes before judging them.
  const watchStart = Object.fromEntries(watchers.map((w) => [w.resourceKey, w.startedAt])) as Partial<Record<ResourceKey, number>>;
  const events = () => watchers.flatMap((w) => w.events);
  const deadline = Date.now() + 15_000;
  while (judgeWatch(ledger, events(), watchStart).missed.length > 0 && Date.now() < deadline) await sleep(200);
  await Promise.all(watchers.map((w) => w.stop()));
  balancer.close();
  const durationMs = now();
  await operator.readBackServed('read back (all rolled back)', resources);
  await observer.stop();
  const podRecords = pods instanceof PodLoad ? pods.records : [];
  const all = [...records, ...load.records, ...podRecords].sort((a, b) => a.t0 - b.t0);
  const outcome = judgeMode(
    {
      requests: all,
      watchEvents: events(),
      watchStart,
      brokenWatches: watchers.flatMap((w) => w.broken),
      watchesEndedByServer: watchers.reduce((n, w) => n + w.endedByServer, 0),
      watchRelists: watchers.reduce((n, w) => n + w.relists, 0),
      checks: operator.checks,
      steps: operator.steps,
      durationMs,
      stories,
      controllerManagerRestarts: sandbox.state().controllerManager?.restarts ?? 0,
      ...controllerManagerAtEnd(sandbox),
    },
    timeline,
    ledger,
  );
  outcome.served_changes = timeline.servedChanges().map((c) => ({ apiserver: c.apiserver, t_s: Math.round(c.t) / 1000, resources: c.resources }));
  outcome.rotation = rotation;
  outcome.in_cluster =
    pods instanceof PodLoad
      ? { requests: podRecords.length, answers: answersByClass(podRecords), endpoint_changes: pods.endpointChanges }
      : { skipped: pods.skipped };
  outcome.served_set_failed_readings = observer.failedReadings;
  outcome.load_average = { start: loadStart, end: loadavg()[0] ?? 0 };
  if (throughSidecars(mode)) outcome.sidecar_counters = await sidecarCounters(sandbox);
  log(`done: ${JSON.stringify({ ...outcome, steps: undefined, examples: undefined, served_changes: undefined, rotation: undefined, stories: undefined })}`);
  return { outcome, band: { mode, perSecond: perSecond(all, timeline, ledger), marks: operator.marks } };
}
