// `mvproxy-dev bench --only watch-scale`: what a large cluster puts through one
// sidecar. Thousands of nodes, each one connection with its own token, HTTP/1.1
// (one watch) or HTTP/2 (several), every watch selective as a kubelet's is,
// held through each side in turn (direct to the apiserver, the minimal Envoy,
// the sidecar) at one apiserver: each side's memory per connection and per
// watch, the delay of event delivery at a stated write rate (the machine's
// CPU shown unsaturated), and the proxy's CPU per event delivered.
//
// The sandbox is on loopback: in the node layout the host reaches the nodes
// through relays that run in this very process, which would carry (and pay for)
// every one of these connections; one sidecar's work is the same either way.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { httpsRequest } from '../../util/https.js';
import { ensureComponents } from '../install/index.js';
import { Sandbox } from '../sandbox/sandbox.js';
import { serviceAccountToken } from '../sandbox/serviceAccount.js';
import { startBareEnvoy } from './bareEnvoy.js';
import { percentile } from './load.js';
import { processCpuSeconds, statusKb } from './procStat.js';
import { preciseNowMs, SENT_ANNOTATION, WatchFleet, type WatchNode } from './watchClients.js';

const VERSION = 'v1.37.2';
const NAMESPACE = 'watch-scale';
/** What the watchers may do: read pods, as a kubelet's watch does. */
const WATCHER_ROLE = 'watch-scale-pods';
const SIDES = ['direct', 'minimal', 'sidecar'] as const;
type Side = (typeof SIDES)[number];

export interface WatchScaleOptions {
  /** Nodes: one connection each. */
  nodes: number;
  /** Watches an HTTP/2 node holds on its one connection (every other node is HTTP/1.1, one watch). */
  watchesPerH2Node: number;
  writesPerSecond: number;
  writeSeconds: number;
  progress: (line: string) => void;
}

export interface SideFigures {
  connections: number;
  watches: number;
  /** The proxy's resident memory (kB) idle, with every connection and its first watch, and with every watch. */
  rssKb?: { idle: number; connections: number; watches: number };
  memoryPerConnectionKb?: number;
  memoryPerExtraWatchKb?: number;
  writes: number;
  eventsExpected: number;
  eventsReceived: number;
  delayMs: { p50: number; p99: number; max: number };
  proxyCpuUsPerEvent?: number;
  /** The whole machine's CPU busy share over the write window (2 cores: 1 is both saturated). */
  machineBusyShare: number;
  /** This process (watch clients and writer) over the write window, cores. */
  clientCores: number;
  watchFailures: string[];
  failed: number;
}

export async function runWatchScaleBench(o: WatchScaleOptions): Promise<{ summary: Record<string, number>; watchScale: Record<string, unknown> }> {
  const components = await ensureComponents({ kubernetesVersions: [VERSION], log: o.progress });
  const sandbox = await Sandbox.up({
    dir: mkdtempSync(join(tmpdir(), 'mvproxy-bench-watch-scale-')),
    apiservers: [
      { name: 'kas-a', version: VERSION },
      { name: 'kas-b', version: VERSION },
    ],
    components,
    mode: 'mvproxy',
    network: 'loopback',
    controllerManager: false,
    progress: o.progress,
  });
  const bare = await startBareEnvoy({
    envoy: components.envoy,
    dir: sandbox.state().dir,
    pki: sandbox.pkiFiles(),
    servingName: 'kas-a',
    upstreamPort: sandbox.apiserverPort('kas-a'),
  });
  try {
    const state = sandbox.state();
    const a = state.apiservers[0];
    if (!a?.sidecar) throw new Error('internal: no sidecar for kas-a');
    const ca = readFileSync(state.ca);
    const names = Array.from({ length: o.nodes }, (_, i) => `node-${i}`);
    const writer = await podWriter(a.direct, state.ca, sandbox.adminBearerToken(), names);
    const nodes = await makeNodes(a.kubeconfig.direct, o);
    const bases: Record<Side, { url: string; pid?: number }> = {
      direct: { url: a.direct },
      minimal: { url: bare.url, ...(bare.pid === undefined ? {} : { pid: bare.pid }) },
      sidecar: { url: a.sidecar, ...(sandbox.sidecarPid('kas-a') === undefined ? {} : { pid: sandbox.sidecarPid('kas-a') as number }) },
    };
    const sides: Partial<Record<Side, SideFigures>> = {};
    for (const side of SIDES) {
      o.progress(`watch-scale: ${side}: ${nodes.length} connections, ${nodes.reduce((n, x) => n + x.watches, 0)} watches`);
      sides[side] = await measureSide(bases[side], ca, nodes, writer, o);
    }
    return { summary: watchScaleSummary(sides), watchScale: { options: { ...o, progress: undefined }, version: VERSION, sides } };
  } finally {
    await bare.stop();
    await sandbox.down();
  }
}

/** The nodes: half HTTP/2 with several watches, half HTTP/1.1 with one, each its own token. */
async function makeNodes(adminKubeconfig: string, o: WatchScaleOptions): Promise<WatchNode[]> {
  const nodes: WatchNode[] = [];
  for (let start = 0; start < o.nodes; start += 32) {
    const batch = Array.from({ length: Math.min(32, o.nodes - start) }, (_, k) => start + k);
    const tokens = await Promise.all(
      batch.map(() => serviceAccountToken(adminKubeconfig, { namespace: NAMESPACE, name: 'watcher', clusterRole: WATCHER_ROLE, expirationSeconds: 7200 })),
    );
    batch.forEach((i, k) => {
      const h2 = i % 2 === 0;
      nodes.push({ name: `node-${i}`, token: tokens[k] ?? '', protocol: h2 ? 'h2' : 'http1', watches: h2 ? o.watchesPerH2Node : 1 });
    });
  }
  return nodes;
}

interface PodWriter {
  /** The collection's resourceVersion now: watches opened from it see only later writes. */
  resourceVersion(): Promise<string>;
  /** Stamps the node's pod with the send time; resolves when acknowledged. */
  touch(node: string): Promise<void>;
}

/** One pod bound to each node, created once (directly at the apiserver, as the admin); writes are merge patches of its annotation. */
async function podWriter(direct: string, ca: string, token: string, nodeNames: string[]): Promise<PodWriter> {
  const call = async (method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<string> => {
    const res = await httpsRequest(
      `${direct}${path}`,
      { ca },
      {
        method,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': contentType },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      },
    );
    if (res.status >= 300 && res.status !== 409) throw new Error(`${method} ${path}: ${res.status} ${res.body.slice(0, 200)}`);
    return res.body;
  };
  const pods = `/api/v1/namespaces/${NAMESPACE}/pods`;
  await call('POST', '/api/v1/namespaces', { metadata: { name: NAMESPACE } });
  // No controller-manager runs here: it would make this service account (admission looks the pods' up) and fill
  // the aggregated roles (`view` is empty without it), so both are made here.
  await call('POST', `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`, { metadata: { name: 'default' } });
  await call('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    metadata: { name: WATCHER_ROLE },
    rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }],
  });
  for (let start = 0; start < nodeNames.length; start += 32) {
    await Promise.all(
      nodeNames
        .slice(start, start + 32)
        .map((node) =>
          call('POST', pods, { metadata: { name: `pod-${node}` }, spec: { nodeName: node, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } }),
        ),
    );
  }
  return {
    resourceVersion: async () => (JSON.parse(await call('GET', `${pods}?limit=1`)) as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
    touch: async (node) => {
      await call(
        'PATCH',
        `${pods}/pod-${node}`,
        { metadata: { annotations: { [SENT_ANNOTATION]: preciseNowMs().toFixed(3) } } },
        'application/merge-patch+json',
      );
    },
  };
}

/** Resident memory of a process, kB. */
const rssKb = (pid: number): number => statusKb(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS');

/** Busy and total jiffies of the whole machine (/proc/stat's cpu line). */
function machineJiffies(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((s, v) => s + v, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Opens tasks `limit` at a time. */
async function pooled<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await task(items[next++] as T);
    }),
  );
}

async function measureSide(base: { url: string; pid?: number }, ca: Buffer, nodes: WatchNode[], writer: PodWriter, o: WatchScaleOptions): Promise<SideFigures> {
  const fleet = new WatchFleet(base.url, ca, NAMESPACE);
  try {
    const rv = await writer.resourceVersion();
    const idle = base.pid === undefined ? undefined : rssKb(base.pid);
    await pooled(nodes, 50, (node) => fleet.open(node, 1, rv));
    await sleep(3000);
    const connected = base.pid === undefined ? undefined : rssKb(base.pid);
    await pooled(
      nodes.filter((n) => n.watches > 1),
      50,
      (node) => fleet.open(node, node.watches - 1, rv),
    );
    await sleep(3000);
    const watching = base.pid === undefined ? undefined : rssKb(base.pid);
    const watches = nodes.reduce((n, x) => n + x.watches, 0);
    if (fleet.stats.open !== watches) throw new Error(`${fleet.stats.open} of ${watches} watches open: ${fleet.stats.failures.join('; ')}`);

    fleet.resetCounts();
    const cpu0 = base.pid === undefined ? 0 : processCpuSeconds(base.pid);
    const machine0 = machineJiffies();
    const client0 = process.cpuUsage();
    const started = Date.now();
    let writes = 0;
    let eventsExpected = 0;
    const watchesOf = new Map(nodes.map((n) => [n.name, n.watches]));
    // Writes at the stated rate, in order over the nodes, each acknowledged before the next is due.
    const total = o.writesPerSecond * o.writeSeconds;
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / o.writesPerSecond;
      if (Date.now() < due) await sleep(due - Date.now());
      const node = nodes[i % nodes.length]?.name ?? '';
      await writer.touch(node);
      writes++;
      eventsExpected += watchesOf.get(node) ?? 0;
    }
    const windowMs = Date.now() - started;
    const machine1 = machineJiffies();
    const client = process.cpuUsage(client0);
    const cpu1 = base.pid === undefined ? 0 : processCpuSeconds(base.pid);
    await sleep(3000); // stragglers
    const delays = [...fleet.stats.delaysMs].sort((x, y) => x - y);
    const events = fleet.stats.events;
    return {
      connections: nodes.length,
      watches,
      ...(idle !== undefined && connected !== undefined && watching !== undefined
        ? {
            rssKb: { idle, connections: connected, watches: watching },
            memoryPerConnectionKb: round1((connected - idle) / nodes.length),
            memoryPerExtraWatchKb: round1((watching - connected) / Math.max(1, watches - nodes.length)),
          }
        : {}),
      writes,
      eventsExpected,
      eventsReceived: events,
      delayMs: { p50: round2(percentile(delays, 50)), p99: round2(percentile(delays, 99)), max: round2(delays.at(-1) ?? Number.NaN) },
      ...(base.pid === undefined ? {} : { proxyCpuUsPerEvent: Math.round(((cpu1 - cpu0) * 1e6) / Math.max(1, events)) }),
      machineBusyShare: round2((machine1.busy - machine0.busy) / Math.max(1, machine1.total - machine0.total)),
      clientCores: round2((client.user + client.system) / 1000 / windowMs),
      watchFailures: fleet.stats.failures,
      failed: fleet.stats.failed + Math.max(0, eventsExpected - events),
    };
  } finally {
    fleet.close();
    await sleep(5000);
  }
}

const round1 = (n: number): number => Math.round(n * 10) / 10;
const round2 = (n: number): number => Math.round(n * 100) / 100;

/** Pure: the flat figures, the sidecar over the minimal Envoy (the floor) and over direct. */
export function watchScaleSummary(sides: Partial<Record<Side, SideFigures>>): Record<string, number> {
  const out: Record<string, number | undefined> = {};
  for (const [side, f] of Object.entries(sides) as Array<[Side, SideFigures]>) {
    Object.assign(out, {
      [`watch_scale_${side}_delay_p50_ms`]: f.delayMs.p50,
      [`watch_scale_${side}_delay_p99_ms`]: f.delayMs.p99,
      [`watch_scale_${side}_memory_per_connection_kb`]: f.memoryPerConnectionKb,
      [`watch_scale_${side}_memory_per_extra_watch_kb`]: f.memoryPerExtraWatchKb,
      [`watch_scale_${side}_cpu_us_per_event`]: f.proxyCpuUsPerEvent,
      [`watch_scale_${side}_machine_busy_share`]: f.machineBusyShare,
    });
  }
  const { sidecar, minimal, direct } = sides;
  const ratio = (x: number | undefined, y: number | undefined): number | undefined =>
    x === undefined || y === undefined || y === 0 ? undefined : Math.round((x / y) * 100) / 100;
  Object.assign(out, {
    watch_scale_connections: sidecar?.connections,
    watch_scale_watches: sidecar?.watches,
    watch_scale_memory_per_connection_vs_minimal_envoy: ratio(sidecar?.memoryPerConnectionKb, minimal?.memoryPerConnectionKb),
    watch_scale_memory_per_extra_watch_vs_minimal_envoy: ratio(sidecar?.memoryPerExtraWatchKb, minimal?.memoryPerExtraWatchKb),
    watch_scale_delay_p50_vs_minimal_envoy: ratio(sidecar?.delayMs.p50, minimal?.delayMs.p50),
    watch_scale_delay_p99_vs_minimal_envoy: ratio(sidecar?.delayMs.p99, minimal?.delayMs.p99),
    watch_scale_delay_p50_vs_direct: ratio(sidecar?.delayMs.p50, direct?.delayMs.p50),
    watch_scale_delay_p99_vs_direct: ratio(sidecar?.delayMs.p99, direct?.delayMs.p99),
    watch_scale_cpu_per_event_vs_minimal_envoy: ratio(sidecar?.proxyCpuUsPerEvent, minimal?.proxyCpuUsPerEvent),
  });
  return Object.fromEntries(Object.entries(out).filter((e): e is [string, number] => e[1] !== undefined && Number.isFinite(e[1])));
}
