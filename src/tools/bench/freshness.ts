// `mvproxy-dev bench --only freshness` (issue 28, item 2): how long after a
// CRD is created (or deleted) on an apiserver directly its group is listed
// (or gone) through every proxy path, measured from the same event as each
// apiserver's own listing, side by side with upstream's Mixed Version Proxy:
// - mvproxy: each apiserver's sidecar, its merged /apis; upstream: each
//   apiserver's own merged /apis (its peer-aggregated discovery);
// - the clock starts when the create (delete) request is sent to kas-a;
//   every path and every apiserver's own document (profile=nopeer, directly)
//   is polled on its own keep-alive connection, every POLL_MS, and a source
//   shows the change at the sending of its first answer that shows it;
// - cases: the control plane up; paused (SIGSTOP) for the sample (a CRD
//   created and one deleted during the pause; upstream has no control plane
//   and runs the same steps); and with `crds` CRDs in place, control plane up.
// The target: never later than the apiserver behind the path lists it
// (lag <= 0 at the polls' resolution). Then Envoy's memory of one sidecar
// with those CRDs, at each asked worker count (--concurrency).
import { mkdtempSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_NOPEER_JSON, AGGREGATED_DISCOVERY_PROTOBUF } from '../../entry/discovery.js';
import { envoyAdminGet } from '../../util/envoyAdmin.js';
import { ensureComponents } from '../install/index.js';
import { Sandbox } from '../sandbox/sandbox.js';
import type { SandboxState } from '../sandbox/state.js';
import { CRDS_PATH, createCrds, namespacedCrd, processMemory, type ProcessMemory } from './documentScale.js';
import { type ChangeFigures, changeFigures, type FreshnessSample, freshnessSummary, type PathTiming } from './freshnessProbes.js';

export interface FreshnessOptions {
  /** Samples per case, change and side. */
  samples: number;
  /** A path that has not shown a change this long after it counts at this value (and as capped). */
  capMs: number;
  /** CRDs in place for the last case and the memory figures, over `crdGroups` groups. */
  crds: number;
  crdGroups: number;
  /** Envoy worker counts (--concurrency) of the memory figures. */
  envoyConcurrencies: number[];
  progress: (line: string) => void;
}

export const FRESHNESS_CASES = ['up', 'paused', 'crds'] as const;
type FreshnessCase = (typeof FRESHNESS_CASES)[number];
type Side = 'mvproxy' | 'upstream';

const VERSIONS = { 'kas-a': 'v1.36.3', 'kas-b': 'v1.37.2' } as const;
/** Between the answer to one poll of a source and the sending of the next. */
export const FRESHNESS_POLL_MS = 10;
/** How long a side may take to list a CRD created before a sample (not timed). */
const SETTLE_MS = 60_000;

interface Bed {
  side: Side;
  sandbox: Sandbox;
  state: SandboxState;
  token: string;
  ca: Buffer;
  agent: Agent;
}

interface EnvoyMemory extends ProcessMemory {
  /** Envoy's `server.memory_allocated` and `server.memory_heap_size` (its allocator's figures), MB. */
  allocatedMb: number;
  heapSizeMb: number;
}

export interface FreshnessFigures {
  summary: Record<string, number>;
  freshness: {
    method: string;
    capMs: number;
    pollMs: number;
    samples: number;
    crds: number;
    cases: Record<string, Record<string, Partial<Record<FreshnessSample['change'], ChangeFigures>>>>;
    raw: Record<string, Record<string, FreshnessSample[]>>;
    memory: Record<string, EnvoyMemory>;
  };
}

export async function runFreshnessBench(opts: FreshnessOptions): Promise<FreshnessFigures> {
  const components = await ensureComponents({ kubernetesVersions: Object.values(VERSIONS), log: opts.progress });
  const beds: Bed[] = [];
  try {
    // One after the other: two sets of apiservers starting at once on a small machine time out.
    for (const side of ['mvproxy', 'upstream'] as const) {
      opts.progress(`starting the ${side} sandbox ...`);
      const sandbox = await Sandbox.up({
        dir: mkdtempSync(join(tmpdir(), `mvproxy-bench-freshness-${side}-`)),
        apiservers: Object.entries(VERSIONS).map(([name, version]) => ({ name, version })),
        components,
        mode: side,
        progress: opts.progress,
      });
      const state = sandbox.state();
      beds.push({ side, sandbox, state, token: sandbox.adminBearerToken(), ca: readFileSync(state.ca), agent: new Agent({ keepAlive: true }) });
    }
    const raw: FreshnessFigures['freshness']['raw'] = {};
    let memory: Record<string, EnvoyMemory> = {};
    for (const caseName of FRESHNESS_CASES) {
      if (caseName === 'crds') {
        for (const bed of beds) {
          opts.progress(`creating ${opts.crds} CRDs over ${opts.crdGroups} groups in the ${bed.side} sandbox ...`);
          await createCrds(bed.state, bed.token, opts.crds, opts.crdGroups, opts.progress, pathOf(bed, 'kas-a'));
        }
      }
      raw[caseName] = {};
      for (const bed of beds) {
        opts.progress(
          `timing ${opts.samples} CRD creations and deletions, ${caseName === 'crds' ? `with ${opts.crds} CRDs` : `control plane ${caseName}`}, ${bed.side} ...`,
        );
        const samples: FreshnessSample[] = [];
        for (let i = 0; i < opts.samples; i++) samples.push(...(await sample(bed, caseName, i, opts.capMs, opts.progress)));
        (raw[caseName] as Record<string, FreshnessSample[]>)[bed.side] = samples;
      }
    }
    const mv = beds.find((b) => b.side === 'mvproxy');
    if (mv) memory = await sidecarMemoryByConcurrency(mv, opts);
    const cases = Object.fromEntries(
      Object.entries(raw).map(([caseName, sides]) => [
        caseName,
        Object.fromEntries(
          Object.entries(sides).map(([side, samples]) => [
            side,
            Object.fromEntries(
              (['created', 'deleted'] as const)
                .map((change) => [change, samples.filter((s) => s.change === change)] as const)
                .filter(([, ofChange]) => ofChange.length > 0)
                .map(([change, ofChange]) => [change, changeFigures(ofChange, 'kas-a', opts.capMs)]),
            ),
          ]),
        ),
      ]),
    );
    const summary = {
      freshness_samples: opts.samples,
      freshness_poll_ms: FRESHNESS_POLL_MS,
      freshness_crds: opts.crds,
      ...freshnessSummary(cases),
      ...Object.fromEntries(
        Object.entries(memory).flatMap(([n, m]) => [
          [`sidecar_rss_mb_concurrency_${n}`, m.rssMb],
          [`sidecar_allocated_mb_concurrency_${n}`, m.allocatedMb],
        ]),
      ),
    };
    return {
      summary,
      freshness: { method: METHOD, capMs: opts.capMs, pollMs: FRESHNESS_POLL_MS, samples: opts.samples, crds: opts.crds, cases, raw, memory },
    };
  } finally {
    for (const bed of beds) {
      bed.agent.destroy();
      await bed.sandbox.down();
    }
  }
}

const METHOD =
  'Clock: the sending of the create (delete) request of a CRD to kas-a directly. Sources, each polled on its own keep-alive connection, ' +
  `${FRESHNESS_POLL_MS} ms after its previous answer: each apiserver's own /apis (profile=nopeer, directly) and each proxy path's merged /apis (mvproxy: the apiserver's sidecar; upstream: the apiserver itself, peer-aggregated). ` +
  'A source shows the change at the sending of its first answer that lists the group (created) or no longer does (deleted). ' +
  'every = until every proxy path showed it; local = until kas-a itself did; lag = the largest (path - its own apiserver) over paths, > 0 being staler than the apiserver behind the path. ' +
  'Cases: up; paused (mvproxy: the control plane stopped with SIGSTOP before the change and resumed after the sample; a CRD created before the pause is deleted in it; upstream runs the same steps); crds (that many CRDs in place, control plane up). ' +
  'A CRD deleted in a sample was created before it and listed through every path first. Figures: p50, p90 (nearest rank), max; a path that never showed it counts at the cap.';

/** Where `apiserver`'s merged /apis is read on a side: its sidecar (mvproxy) or itself (upstream). */
function pathOf(bed: Bed, apiserver: string): string {
  const a = bed.state.apiservers.find((x) => x.name === apiserver);
  const base = bed.side === 'mvproxy' ? a?.sidecar : a?.direct;
  if (!base) throw new Error(`internal: no path to ${apiserver} in the ${bed.side} sandbox`);
  return base;
}

function directOf(bed: Bed, apiserver: string): string {
  const a = bed.state.apiservers.find((x) => x.name === apiserver);
  if (!a) throw new Error(`internal: no apiserver ${apiserver}`);
  return a.direct;
}

/** One request on the bed's keep-alive agent; resolves with status and body. */
function send(bed: Bed, url: string, method: string, accept: string, body?: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca: bed.ca,
        agent: bed.agent,
        headers: { authorization: `Bearer ${bed.token}`, accept, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${url}`)));
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const crd = (group: string): unknown => namespacedCrd(group, 'widgets', 'Widget');

const lists = (body: string, group: string): boolean => body.includes(`"${group}"`);

/**
 * Polls `url` until its /apis shows the change: the sending time of the first answer that does, from `t0`;
 * past the cap, what the last answer was instead (a status, or an error).
 */
async function firstShowing(
  bed: Bed,
  url: string,
  accept: string,
  shows: (body: string) => boolean,
  t0: number,
  capMs: number,
): Promise<{ ms: number } | { last: string }> {
  let last = 'no answer';
  for (;;) {
    const sent = performance.now();
    if (sent - t0 > capMs) return { last };
    const res = await send(bed, url, 'GET', accept).catch((err: Error) => err);
    if (!(res instanceof Error) && res.status === 200 && shows(res.body)) return { ms: Math.round(sent - t0) };
    last = res instanceof Error ? `error: ${res.message}` : `${res.status}, not showing it (answered in ${Math.round(performance.now() - sent)} ms)`;
    await sleep(FRESHNESS_POLL_MS);
  }
}

/** Sends `change` and times, per apiserver, its own document and its proxy path showing it. */
async function timeChange(bed: Bed, change: FreshnessSample['change'], group: string, capMs: number): Promise<FreshnessSample> {
  const shows = change === 'created' ? (body: string) => lists(body, group) : (body: string) => !lists(body, group);
  const t0 = performance.now();
  const sent =
    change === 'created'
      ? send(bed, directOf(bed, 'kas-a') + CRDS_PATH, 'POST', 'application/json', crd(group))
      : send(bed, `${directOf(bed, 'kas-a')}${CRDS_PATH}/widgets.${group}`, 'DELETE', 'application/json');
  const paths = await Promise.all(
    Object.keys(VERSIONS).map(async (apiserver): Promise<PathTiming> => {
      const [own, through] = await Promise.all([
        firstShowing(bed, `${directOf(bed, apiserver)}/apis`, AGGREGATED_DISCOVERY_NOPEER_JSON, shows, t0, capMs),
        firstShowing(bed, `${pathOf(bed, apiserver)}/apis`, AGGREGATED_DISCOVERY_JSON, shows, t0, capMs),
      ]);
      return {
        apiserver,
        ...('ms' in own ? { ownMs: own.ms } : { ownLast: own.last }),
        ...('ms' in through ? { throughMs: through.ms } : { throughLast: through.last }),
      };
    }),
  );
  const res = await sent;
  if (res.status !== (change === 'created' ? 201 : 200)) throw new Error(`${change} ${group}: ${res.status} ${res.body.slice(0, 300)}`);
  return { change, group, paths };
}

/** Until every proxy path of the bed lists (or does not list) `group`; false when one never did within SETTLE_MS. */
async function untilEveryPath(bed: Bed, group: string, listed: boolean): Promise<boolean> {
  const deadline = performance.now() + SETTLE_MS;
  for (const apiserver of Object.keys(VERSIONS)) {
    for (;;) {
      const res = await send(bed, `${pathOf(bed, apiserver)}/apis`, 'GET', AGGREGATED_DISCOVERY_JSON).catch(() => undefined);
      if (res?.status === 200 && lists(res.body, group) === listed) break;
      if (performance.now() > deadline) return false;
      await sleep(100);
    }
  }
  return true;
}

/** Until the mvproxy control plane's /status shows every sidecar connected with every type ACKed. */
async function controlPlaneInSync(bed: Bed): Promise<void> {
  const admin = bed.state.controlPlane?.admin;
  if (!admin) return;
  const deadline = performance.now() + SETTLE_MS;
  for (;;) {
    const status = (await (await fetch(`${admin}/status`)).json().catch(() => undefined)) as
      | { xds: Record<string, { connected: boolean; types: Record<string, { versionSent?: string; versionAcked?: string }> }> }
      | undefined;
    const nodes = Object.values(status?.xds ?? {});
    if (nodes.length > 0 && nodes.every((n) => n.connected && Object.values(n.types).every((t) => t.versionAcked === t.versionSent))) return;
    if (performance.now() > deadline) throw new Error('the control plane never got back in sync');
    await sleep(100);
  }
}

/** One sample: a CRD created (timed) and one made before the sample deleted (timed), the control plane paused around both for `paused`. */
async function sample(bed: Bed, caseName: FreshnessCase, i: number, capMs: number, progress: (line: string) => void): Promise<FreshnessSample[]> {
  const base = `${caseName}${i}.freshness.mvproxy.example`;
  const [created, deleted] = [`new-${base}`, `old-${base}`];
  const res = await send(bed, directOf(bed, 'kas-a') + CRDS_PATH, 'POST', 'application/json', crd(deleted));
  if (res.status !== 201) throw new Error(`creating ${deleted}: ${res.status} ${res.body.slice(0, 300)}`);
  // A path that never lists it (upstream's peer-aggregated discovery, seen with 2,000 CRDs) leaves nothing to time its deletion from.
  const settled = await untilEveryPath(bed, deleted, true);
  if (!settled) progress(`  ${bed.side}: a path never listed ${deleted} within ${SETTLE_MS / 1000} s; only the creation of ${created} is timed`);
  await controlPlaneInSync(bed);
  const pause = caseName === 'paused' && bed.side === 'mvproxy';
  if (pause) bed.sandbox.pauseControlPlane();
  try {
    const creation = await timeChange(bed, 'created', created, capMs);
    return settled ? [creation, await timeChange(bed, 'deleted', deleted, capMs)] : [creation];
  } finally {
    if (pause) bed.sandbox.resumeControlPlane();
  }
}

/** Envoy's own allocator figures from its admin socket, MB. */
async function envoyAllocator(adminSocket: string): Promise<{ allocatedMb: number; heapSizeMb: number }> {
  const text = await envoyAdminGet(adminSocket, '/stats?filter=^server\\.memory_');
  const stat = (name: string): number => Number(new RegExp(`^server\\.${name}: (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { allocatedMb: Math.round(stat('memory_allocated') / 2 ** 20), heapSizeMb: Math.round(stat('memory_heap_size') / 2 ** 20) };
}

/**
 * kas-a's sidecar restarted at each worker count, given its documents by the
 * control plane, then asked for every document in both formats on many
 * connections (so that every worker serves some), then measured.
 */
async function sidecarMemoryByConcurrency(bed: Bed, opts: FreshnessOptions): Promise<Record<string, EnvoyMemory>> {
  const out: Record<string, EnvoyMemory> = {};
  const a = bed.state.apiservers.find((x) => x.name === 'kas-a');
  if (!a?.sidecar || !a.sidecarAdminSocket) throw new Error('internal: no sidecar of kas-a');
  const lastGroup = `g${(opts.crds - 1) % opts.crdGroups}.fanout.mvproxy.example`;
  for (const concurrency of opts.envoyConcurrencies) {
    opts.progress(`kas-a's sidecar with ${opts.crds} CRDs at --concurrency ${concurrency}: its memory ...`);
    await bed.sandbox.stopSidecar('kas-a');
    await bed.sandbox.startSidecar('kas-a', { envoyConcurrency: concurrency });
    if (!(await untilEveryPath(bed, lastGroup, true))) throw new Error(`the restarted sidecar of kas-a never listed ${lastGroup}`);
    await controlPlaneInSync(bed);
    const accepts = [AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_PROTOBUF];
    const fresh = { ...bed, agent: new Agent({ keepAlive: false }) };
    for (let round = 0; round < 4; round++)
      await Promise.all(
        Array.from({ length: 4 * concurrency }, (_, k) =>
          send(fresh, `${a.sidecar}${k % 4 < 2 ? '/apis' : '/api'}`, 'GET', accepts[k % 2] ?? '').catch(() => undefined),
        ),
      );
    await sleep(1000);
    const pid = bed.sandbox.sidecarPid('kas-a');
    if (pid === undefined) throw new Error('internal: the sidecar of kas-a is not running');
    out[String(concurrency)] = { ...processMemory(pid), ...(await envoyAllocator(a.sidecarAdminSocket)) };
    opts.progress(`  RSS ${out[String(concurrency)]?.rssMb} MB, allocated ${out[String(concurrency)]?.allocatedMb} MB`);
  }
  return out;
}
