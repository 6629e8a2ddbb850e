// `mvproxy-dev bench --only fanout`: one control-plane replica serving many
// sidecars (issue 12, "Many sidecars"). A sandbox of three apiservers
// (v1.36.3, v1.37.2, v1.37.2) with their real Envoy sidecars, plus N
// simulated nodes (adsClients.ts), each a simulated Envoy ADS client on the
// replica's Unix socket with a node id of its own (sim-001, ...) running the
// config of one of the three sidecars in turn (node.metadata `apiserver`),
// as Envoys beside the real ones would.
//
// The change: kas-c restarted with storagemigration.k8s.io/v1 back on (after
// an untimed restart with it off), which changes the plans of kas-a's and
// kas-c's sidecars, and so the config of the two thirds of the nodes that run
// theirs. The clock starts at the first answer of kas-c's own discovery
// (profile=nopeer, polled directly every 3 ms) that shows the change, the
// triggering event as convergence.ts, and stops at the last ACK of the new config by
// any node: the simulated ones' own ACK times, the real sidecars' xDS
// update_time stats (read once everything is quiet). Then N CRDs spread over
// G groups, one more change with them (the merged documents in the push are
// then large), the documents' sizes, the largest xDS responses, the real
// sidecars' memory and the replica's peak RSS (VmHWM).
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureComponents } from '../install/index.js';
import { Sandbox } from '../sandbox/sandbox.js';
import type { SandboxState } from '../sandbox/state.js';
import { envoyAdminGet } from '../../util/envoyAdmin.js';
import { httpsRequest } from '../../util/https.js';
import { connectSimulatedEnvoys, waitForEvery, type SimulatedEnvoy } from './adsClients.js';
import { type Distribution, discoveryListsGroup, distribution } from './convergenceProbes.js';
import { replicaMemoryFloorMb } from './memoryFloor.js';
import { XDS_PUSH_ORDER, XDS_TYPE_URL } from './xdsTypes.js';
import { DOCUMENT_PUSH_BUDGET_BYTES } from '../../entry/controlPlane.js';
import { createCrds, mergedApisSizes, processMemory, sidecarMemory, type MergedApisSizes, type ProcessMemory } from './documentScale.js';
import { processCpuTicks, USER_HZ } from './procStat.js';
import { AGGREGATED_DISCOVERY_NOPEER_JSON } from '../../entry/discovery.js';
import { POLL_MS } from './convergence.js';

export interface FanoutOptions {
  nodes: number;
  /** Served-set changes timed before the CRDs are created. */
  changes: number;
  crds: number;
  /** Groups the CRDs are spread over. */
  crdGroups: number;
  progress: (line: string) => void;
}

const VERSIONS = { 'kas-a': 'v1.36.3', 'kas-b': 'v1.37.2', 'kas-c': 'v1.37.2' } as const;
const RESTARTED = 'kas-c';
const GROUP = 'storagemigration.k8s.io';
/** Nothing received for this long after the last response: the change has settled. */
const QUIET_MS = 3000;
/** Bounds on waits that would otherwise hang a broken run (not figures). */
const SETTLE_CAP_MS = 120_000;

/** One timed change. */
export interface FanoutSample {
  resourceOff: boolean;
  withCrds: boolean;
  /**
   * From the change (kas-c's own discovery showing it, as the bench saw it;
   * or the first simulated node's final ACK if that came first) to the last
   * node's ACK of the new config.
   */
  ms: number;
  /** From the first to the last final ACK after the clock started: the push itself. */
  spreadMs: number;
  /** Simulated nodes whose config the change altered (those of the sidecars whose plan changed). */
  nodesChanged: number;
  /** Of those, the ones whose final ACK came before the bench saw the change (the replica saw it first). */
  early: number;
  /** Simulated streams that failed and were opened again meanwhile (as Envoy would). */
  reconnects: number;
  /** CPU the replica spent from the restart to the settled state. */
  controlPlaneCpuMs: number;
  loadAverage: number[];
}

export interface FanoutFigures {
  nodes: number;
  realSidecars: string[];
  crds: number;
  samples: FanoutSample[];
  /** Change to the last ACK, over the changes timed without CRDs: count, p50, p90, max. */
  ms: Distribution;
  /** First to last final ACK (the push itself), over the same changes. */
  spreadMs: Distribution;
  withCrdsMs?: number;
  crdGroups: number;
  /** With the CRDs: the merged /apis kas-a's sidecar serves, as sent. */
  mergedApis?: MergedApisSizes;
  /** Per xDS type, the largest response any simulated node received (the ECDS ones carry every document set of a sidecar, and the module once per filter). */
  largestResponseBytes: Record<string, number>;
  /** The real sidecars' Envoy memory at the end, with the CRDs. */
  sidecarMemory: Record<string, ProcessMemory>;
  /** The replica's memory at the end of each phase (connected, changes, crds created, change with crds). */
  memoryByPhase: Record<string, ProcessMemory>;
  /** VmHWM of the replica at the end, MB (2^20 bytes). */
  peakRssMb: number;
  /** VmRSS at the end, MB. */
  rssMb: number;
  /** VmHWM of the same program, flags and environment loaded and idle, with no cluster and no streams (memoryFloor.ts), MB. */
  floorRssMb: number;
  method: string;
}

export async function runFanoutBench(opts: FanoutOptions): Promise<FanoutFigures> {
  const components = await ensureComponents({ kubernetesVersions: [...new Set(Object.values(VERSIONS))], log: opts.progress });
  opts.progress(`starting a sandbox of ${Object.keys(VERSIONS).length} apiservers with ${opts.nodes} simulated nodes ...`);
  const sandbox = await Sandbox.up({
    dir: mkdtempSync(join(tmpdir(), 'mvproxy-bench-fanout-')),
    apiservers: Object.entries(VERSIONS).map(([name, version]) => ({ name, version })),
    components,
    mode: 'mvproxy',
    progress: opts.progress,
  });
  let clients: SimulatedEnvoy[] = [];
  try {
    const state = sandbox.state();
    const controlPlanePid = sandbox.controlPlanePid();
    const socket = state.controlPlane?.xdsSocket;
    if (!socket || controlPlanePid === undefined) throw new Error('internal: the sandbox has no control plane');
    const nodes = Array.from({ length: opts.nodes }, (_, i) => `sim-${String(i + 1).padStart(3, '0')}`);
    const sidecars = state.apiservers.map((a) => a.name);
    clients = connectSimulatedEnvoys(`unix://${socket}`, nodes, { reconnect: true, sidecars });
    await waitForEvery(clients, (c) => XDS_PUSH_ORDER.every((url) => c.acked.has(url)), SETTLE_CAP_MS);
    await quiet(clients);
    opts.progress(`${nodes.length} simulated nodes connected and ACKed their first config`);
    // The replica's memory at the end of each phase: which one raised its peak.
    const memoryByPhase: Record<string, ProcessMemory> = { connected: processMemory(controlPlanePid) };
    const token = sandbox.adminBearerToken();
    const samples: FanoutSample[] = [];
    for (let i = 0; i < opts.changes; i++) {
      // Only turning it on changes every node after the clock starts: turning it
      // off, the nodes' final plans are reached while kas-c is down already.
      await timeChange(sandbox, state, token, clients, controlPlanePid, true, false);
      const s = await timeChange(sandbox, state, token, clients, controlPlanePid, false, false);
      samples.push(s);
      opts.progress(`  change ${i + 1} (${GROUP} back on): ${describe(s)}`);
    }
    memoryByPhase['changes'] = processMemory(controlPlanePid);
    let withCrds: FanoutSample | undefined;
    let mergedApis: MergedApisSizes | undefined;
    if (opts.crds > 0) {
      opts.progress(`creating ${opts.crds} CRDs over ${opts.crdGroups} groups ...`);
      await createCrds(state, token, opts.crds, opts.crdGroups, opts.progress);
      await quiet(clients);
      memoryByPhase['crds created'] = processMemory(controlPlanePid);
      await timeChange(sandbox, state, token, clients, controlPlanePid, true, true);
      withCrds = await timeChange(sandbox, state, token, clients, controlPlanePid, false, true);
      opts.progress(`  change with ${opts.crds} CRDs (${GROUP} back on): ${describe(withCrds)}`);
      memoryByPhase['change with crds'] = processMemory(controlPlanePid);
      mergedApis = await mergedApisSizes(state, state.apiservers[0]?.sidecar ?? '', token);
      opts.progress(
        `  merged /apis: ${mergedApis.groups} groups, ${mergedApis.json} bytes JSON, ${mergedApis.protobuf} protobuf, ${mergedApis.jsonGzip} gzipped JSON`,
      );
    }
    const largestResponseBytes: Record<string, number> = {};
    for (const url of XDS_PUSH_ORDER) largestResponseBytes[url] = Math.max(0, ...clients.map((c) => c.largestResponseBytes.get(url) ?? 0));
    const memory = processMemory(controlPlanePid);
    const floorRssMb = await replicaMemoryFloorMb();
    return {
      ...fanoutFigures(samples),
      nodes: nodes.length,
      realSidecars: state.apiservers.map((a) => a.name),
      crds: opts.crds,
      samples: withCrds ? [...samples, withCrds] : samples,
      ...(withCrds ? { withCrdsMs: withCrds.ms } : {}),
      crdGroups: opts.crdGroups,
      ...(mergedApis ? { mergedApis } : {}),
      largestResponseBytes,
      sidecarMemory: sidecarMemory(sandbox, sidecars),
      memoryByPhase,
      peakRssMb: memory.peakRssMb,
      rssMb: memory.rssMb,
      floorRssMb,
      method:
        `${nodes.length} simulated nodes running the configs of ${sidecars.join(', ')} in turn (node.metadata apiserver), beside the real sidecars; ` +
        `kas-c restarted with ${GROUP}/v1 off (untimed), then on (timed: kas-a's and kas-c's plans change, kas-b's does not); clock from the first answer of kas-c's own nopeer discovery (polled directly every ${POLL_MS} ms) showing the change ` +
        `(or from the first simulated node's final ACK, when the replica saw the change first) until the last ACK of the settled config by every node ` +
        `(simulated nodes whose ACKed versions changed: their ACK times; real sidecars: Envoy's xDS update_time stats; every node of a sidecar checked to end on the same versions); spread: first to last changed simulated node's final ACK; ` +
        `settled = nothing sent for ${QUIET_MS} ms; peak RSS = VmHWM of the replica after all changes, with the CRDs; floor = VmHWM of a process with the replica's flags and environment that loads its program and libraries and stays idle`,
    };
  } finally {
    for (const c of clients) c.close();
    await sandbox.down();
  }
}

/** Pure: the figures over the samples taken without CRDs (nearest rank; at ~30 samples a p99 would be the max: it is named max). */
export function fanoutFigures(samples: readonly FanoutSample[]): Pick<FanoutFigures, 'ms' | 'spreadMs'> {
  return { ms: distribution(samples.map((s) => s.ms)), spreadMs: distribution(samples.map((s) => s.spreadMs)) };
}

/** The bench summary's figures (absent ones left out). */
export function fanoutSummary(f: FanoutFigures): Record<string, number> {
  const out: Record<string, number | undefined> = {
    [`fanout_${f.nodes}_nodes_samples`]: f.ms.samples,
    [`fanout_${f.nodes}_nodes_p50_ms`]: f.ms.p50Ms,
    [`fanout_${f.nodes}_nodes_p90_ms`]: f.ms.p90Ms,
    [`fanout_${f.nodes}_nodes_max_ms`]: f.ms.maxMs,
    [`fanout_${f.nodes}_nodes_spread_p50_ms`]: f.spreadMs.p50Ms,
    [`fanout_${f.nodes}_nodes_spread_max_ms`]: f.spreadMs.maxMs,
    [`fanout_${f.nodes}_nodes_${f.crds}_crds_ms`]: f.withCrdsMs,
    control_plane_peak_rss_mb: f.peakRssMb,
    control_plane_floor_rss_mb: f.floorRssMb,
    fanout_crds: f.crds,
    fanout_crd_groups: f.crdGroups,
    merged_apis_groups: f.mergedApis?.groups,
    merged_apis_json_bytes: f.mergedApis?.json,
    merged_apis_protobuf_bytes: f.mergedApis?.protobuf,
    merged_apis_json_gzip_bytes: f.mergedApis?.jsonGzip,
    ecds_largest_response_bytes: f.largestResponseBytes[XDS_TYPE_URL.extensionConfig],
    xds_largest_response_bytes: Math.max(0, ...Object.values(f.largestResponseBytes)),
    document_push_budget_bytes: DOCUMENT_PUSH_BUDGET_BYTES,
    sidecar_peak_rss_mb_max: Math.max(0, ...Object.values(f.sidecarMemory).map((m) => m.peakRssMb)),
  };
  return Object.fromEntries(Object.entries(out).filter((e): e is [string, number] => e[1] !== undefined && Number.isFinite(e[1])));
}

function describe(s: FanoutSample): string {
  return (
    `${s.ms} ms to every ACK of the ${s.nodesChanged} nodes whose config changed (push spread ${s.spreadMs} ms${s.early ? `, ${s.early} nodes ahead of the clock` : ''}` +
    `${s.reconnects ? `, ${s.reconnects} streams reconnected` : ''}), ` +
    `control plane CPU ${s.controlPlaneCpuMs} ms, load average ${s.loadAverage.join(' ')}`
  );
}

async function timeChange(
  sandbox: Sandbox,
  state: SandboxState,
  token: string,
  clients: SimulatedEnvoy[],
  pid: number,
  resourceOff: boolean,
  withCrds: boolean,
): Promise<FanoutSample> {
  const kasC = state.apiservers.find((a) => a.name === RESTARTED);
  if (!kasC) throw new Error(`internal: no ${RESTARTED}`);
  const cpuBefore = cpuMs(pid);
  const reconnects = (): number => clients.reduce((n, c) => n + c.reconnects, 0);
  const reconnectsBefore = reconnects();
  const versionsBefore = new Map(clients.map((c) => [c, ackedVersions(c)]));
  await sandbox.stopApiserver(RESTARTED);
  const starting = sandbox.startApiserver(RESTARTED, { runtimeConfig: resourceOff ? `${GROUP}/v1=false` : '' });
  const startFailed = starting.then(
    () => undefined,
    (err: unknown) => err,
  );
  const getDiscovery = () =>
    httpsRequest(
      `${kasC.direct}/apis`,
      { ca: state.ca },
      { headers: { authorization: `Bearer ${token}`, accept: AGGREGATED_DISCOVERY_NOPEER_JSON }, timeoutMs: 2000 },
    );
  // The clock (as convergence.ts): the first answer of kas-c's own discovery that shows the change, polled directly.
  let t0 = 0;
  let t0Wall = 0;
  const deadline = performance.now() + SETTLE_CAP_MS;
  while (t0 === 0) {
    if (performance.now() > deadline) throw new Error(`${RESTARTED} did not come back with the change`);
    const sent = performance.now();
    const sentWall = Date.now();
    const discovery = await getDiscovery().catch(() => undefined);
    if (discovery?.status === 200) {
      const serves = discoveryListsGroup(discovery.body, GROUP);
      if (serves !== resourceOff) {
        t0 = sent;
        t0Wall = sentWall;
      }
    }
    if (t0 === 0) await sleep(POLL_MS);
  }
  const err = await startFailed;
  if (err !== undefined) throw err;
  await quiet(clients);
  assertSidecarsAgree(clients);
  // The nodes of a sidecar whose plan the change left alone (kas-b's) have nothing new to ACK.
  const changed = clients.filter((c) => ackedVersions(c) !== versionsBefore.get(c));
  if (changed.length === 0) throw new Error(`restarting ${RESTARTED} changed no simulated node's config`);
  const finals = changed.map((c) => Math.max(...XDS_PUSH_ORDER.map((url) => c.acked.get(url)?.at ?? 0)));
  const real = await Promise.all(state.apiservers.map((a) => (a.sidecarAdminSocket ? lastXdsUpdate(a.sidecarAdminSocket) : Promise.resolve(0))));
  // A real sidecar whose config did not change (kas-b) last updated before the clock started.
  const realFinals = real.filter((wall) => wall >= t0Wall).map((wall) => t0 + (wall - t0Wall));
  const all = [...finals, ...realFinals];
  return {
    resourceOff,
    withCrds,
    // The replica may read kas-c's discovery before the bench's poll does:
    // the clock then starts at the first simulated node's final ACK.
    ms: Math.round(Math.max(...all) - Math.min(t0, ...finals)),
    spreadMs: Math.round(Math.max(...finals) - Math.min(...finals)),
    nodesChanged: changed.length,
    early: finals.filter((at) => at < t0).length,
    reconnects: reconnects() - reconnectsBefore,
    controlPlaneCpuMs: cpuMs(pid) - cpuBefore,
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

/** A simulated node's ACKed versions, in push order, as one string. */
function ackedVersions(client: SimulatedEnvoy): string {
  return XDS_PUSH_ORDER.map((url) => client.acked.get(url)?.version ?? '').join(' ');
}

/** Every node of a sidecar ended on the same versions (one left behind would show as a stale config). */
function assertSidecarsAgree(clients: readonly SimulatedEnvoy[]): void {
  const bySidecar = new Map<string, string>();
  for (const c of clients) {
    const sidecar = c.sidecar ?? c.node;
    const versions = ackedVersions(c);
    const first = bySidecar.get(sidecar);
    if (first === undefined) bySidecar.set(sidecar, versions);
    else if (first !== versions)
      throw new Error(`simulated node ${c.node} runs other versions of ${sidecar}'s config than its other nodes: ${versions} vs ${first}`);
  }
}

/** Resolves once no simulated node has received anything for QUIET_MS. */
async function quiet(clients: SimulatedEnvoy[]): Promise<void> {
  const deadline = performance.now() + SETTLE_CAP_MS;
  let count = -1;
  for (;;) {
    const now = clients.reduce((n, c) => n + c.responses, 0);
    if (now === count) return;
    if (performance.now() > deadline) throw new Error('the simulated nodes never went quiet');
    count = now;
    await sleep(QUIET_MS);
  }
}

/** The newest xDS update_time (epoch ms) an Envoy reports, over CDS, EDS, LDS and RDS. */
async function lastXdsUpdate(adminSocket: string): Promise<number> {
  const text = await envoyAdminGet(adminSocket, '/stats?filter=update_time$');
  let newest = 0;
  for (const line of text.split('\n')) {
    const value = Number(line.split(': ')[1]);
    if (Number.isFinite(value) && value > newest) newest = value;
  }
  return newest;
}

/** User plus system CPU time of a process, ms. */
function cpuMs(pid: number): number {
  return processCpuTicks(pid) * (1000 / USER_HZ);
}
