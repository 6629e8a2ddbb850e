// Observations + timeline -> the counts the issue asks for: pure. What an
// apiserver serves comes from the timeline's readings of its own discovery
// (observed, never assumed from its version).
import type { Ledger, LostWrite } from './ledger.js';
import type { BrokenWatch, RequestRecord, ResourceKey, StepRecord, WatchEventRecord, WriteRecord } from './observations.js';
import type { NoStories, StoriesRecord, StoryCounts } from './storyJudgement.js';
import type { Timeline } from './timeline.js';

/**
 * What became of one request, as the picture shows it. The two "5xx with /
 * without Retry-After" are 5xx while no apiserver in service served the
 * resource (allowed); "5xx while served" is a 5xx although one did (never
 * allowed).
 */
export const CATEGORIES = [
  'ok',
  'expected 4xx',
  'spurious 404',
  'incomplete discovery',
  '5xx with Retry-After',
  '5xx without Retry-After',
  '5xx while served',
  'transport error',
] as const;
export type Category = (typeof CATEGORIES)[number];

const OBJECT_VERBS = new Set(['get', 'update', 'delete']);

/**
 * Every answer by class and code: `2xx`, `304`, each 4xx code, each 5xx code
 * with or without Retry-After, and `transport error`. Nothing is lumped: a
 * 401 from the identity filter, a 409 or a 429 is counted under its own code.
 */
export function answerClass(r: Pick<RequestRecord, 'status' | 'retryAfter'>): string {
  if (r.status === 0) return 'transport error';
  if (r.status >= 200 && r.status < 300) return '2xx';
  if (r.status >= 500) return `${r.status} ${r.retryAfter ? 'with' : 'without'} Retry-After`;
  return String(r.status);
}

/** How many answers fell in each class (answerClass), classes sorted. */
export function answersByClass(requests: readonly RequestRecord[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const r of requests) counts.set(answerClass(r), (counts.get(answerClass(r)) ?? 0) + 1);
  return Object.fromEntries([...counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Some apiserver in service for the whole request was observed serving what it asked for (for discovery: answering discovery at all). */
export function servedDuring(r: RequestRecord, timeline: Timeline): boolean {
  if (r.resource === '/api' || r.resource === '/apis') return timeline.answeringThroughout(r.t0, r.t1);
  return timeline.servedThroughout(r.resource, r.t0, r.t1);
}

/** A 404 is spurious when an in-service apiserver served the resource for the whole request and, for one object, the ledger knows it existed throughout. */
export function isSpurious404(r: RequestRecord, timeline: Timeline, ledger: Ledger): boolean {
  if (r.status !== 404 || r.resource === '/api' || r.resource === '/apis') return false;
  if (!timeline.servedThroughout(r.resource, r.t0, r.t1)) return false;
  if (!OBJECT_VERBS.has(r.verb)) return true;
  return r.name !== undefined && ledger.knownToExistThroughout(r.resource, r.name, r.t0, r.t1);
}

/** Groups an aggregated /apis answer lacks although an in-service apiserver was observed listing them for the whole request. */
export function missingGroups(r: RequestRecord, timeline: Timeline): string[] {
  if (r.verb !== 'discovery' || r.resource !== '/apis' || r.status !== 200 || r.groups === undefined) return [];
  const listed = new Set(r.groups);
  return [...timeline.groupsThroughout(r.t0, r.t1)].filter((g) => !listed.has(g)).sort();
}

/** First whether anything answered, then whether an apiserver in service served it, then what was answered. */
export function categorize(r: RequestRecord, timeline: Timeline, ledger: Ledger): Category {
  if (r.status === 0) return 'transport error';
  if (r.status >= 500) {
    if (servedDuring(r, timeline)) return '5xx while served';
    return r.retryAfter ? '5xx with Retry-After' : '5xx without Retry-After';
  }
  if (isSpurious404(r, timeline, ledger)) return 'spurious 404';
  if (missingGroups(r, timeline).length > 0) return 'incomplete discovery';
  if (r.status >= 400) return 'expected 4xx';
  return 'ok';
}

export interface WatchJudgement {
  missed: Array<{ resource: ResourceKey; name: string; type: string; rv?: string }>;
  duplicated: Array<{ resource: ResourceKey; name: string; type: string; rv: string }>;
  /** Acknowledged creates and updates after the watch began whose answer carried no resourceVersion: their event cannot be looked for. */
  unverifiable: WriteRecord[];
}

/**
 * Every acknowledged write to a watched resource made after its watch began
 * must arrive exactly once: creates and updates as ADDED/MODIFIED carrying the
 * acknowledged resourceVersion, deletes as a DELETED event for the name
 * (every name is created once, so one DELETED per name).
 */
export function judgeWatch(ledger: Ledger, events: readonly WatchEventRecord[], watchStart: Partial<Record<ResourceKey, number>>): WatchJudgement {
  const seen = new Map<string, number>();
  const deleted = new Set<string>();
  const duplicated: WatchJudgement['duplicated'] = [];
  for (const e of events) {
    const k = `${e.resource}/${e.name}/${e.rv}/${e.type}`;
    const n = (seen.get(k) ?? 0) + 1;
    seen.set(k, n);
    if (n === 2) duplicated.push({ resource: e.resource, name: e.name, type: e.type, rv: e.rv });
    if (e.type === 'DELETED') deleted.add(`${e.resource}/${e.name}`);
  }
  const arrived = new Set([...seen.keys()].map((k) => k.split('/').slice(0, 3).join('/')));
  const missed: WatchJudgement['missed'] = [];
  const unverifiable: WriteRecord[] = [];
  for (const w of ledger.all()) {
    const start = watchStart[w.resource];
    if (start === undefined || w.t0 < start || w.outcome !== 'ack') continue;
    if (w.verb === 'delete') {
      if (!deleted.has(`${w.resource}/${w.name}`)) missed.push({ resource: w.resource, name: w.name, type: 'DELETED' });
    } else if (w.rv === undefined) {
      unverifiable.push(w);
    } else if (!arrived.has(`${w.resource}/${w.name}/${w.rv}`)) {
      missed.push({ resource: w.resource, name: w.name, type: w.verb === 'create' ? 'ADDED' : 'MODIFIED', rv: w.rv });
    }
  }
  return { missed, duplicated, unverifiable };
}

/** A read-back of every object of some resources, compared with the ledger (the writes begun before `at`). */
export interface CheckRecord {
  label: string;
  at: number;
  resources: ResourceKey[];
  /** The apiserver each resource was read from (one observed serving it). */
  readFrom: Partial<Record<ResourceKey, string>>;
  lost: LostWrite[];
}

/** Acknowledged writes no check read back: a check of their resource began after them (the ledger folds the writes begun before a check). */
export function notReadBack(writes: readonly WriteRecord[], checks: readonly CheckRecord[]): WriteRecord[] {
  return writes.filter((w) => w.outcome === 'ack' && !checks.some((c) => c.at > w.t0 && c.resources.includes(w.resource)));
}

export interface ModeObservations {
  requests: readonly RequestRecord[];
  watchEvents: readonly WatchEventRecord[];
  watchStart: Partial<Record<ResourceKey, number>>;
  brokenWatches: readonly BrokenWatch[];
  /** Watches the server ended cleanly (not cut by the load balancer): their clients resumed; not a failure. */
  watchesEndedByServer: number;
  watchRelists: number;
  checks: readonly CheckRecord[];
  steps: StepRecord[];
  durationMs: number;
  /** KEP-4020's stories (stories.ts), when the pair has a story resource. */
  stories?: { counts: StoryCounts; record: StoriesRecord } | NoStories;
  /** How often the sandbox restarted kube-controller-manager (it exits when it loses its apiserver; it is killed in the first upgrade; it is replaced at its node's version). */
  controllerManagerRestarts?: number;
  /** Its version and whether it runs at the end. */
  controllerManagerAtEnd?: { version: string; running: boolean };
}

/** One run of one mode, as the JSON records it (times in seconds since the mode's start unless named _ms). */
export interface ModeOutcome {
  // The keys.
  spurious_404: number;
  lost_writes: number;
  missed_watch_events: number;
  /** Every 5xx: while served or not. */
  errors_5xx: number;
  errors_5xx_without_retry_after: number;
  incomplete_discovery: number;
  requests: number;
  /** Every answer by class and code (answerClass): the counts above are parts of these. */
  answers: Record<string, number>;
  // The invariants every mode is held to (INVARIANTS in summary.ts): each must be 0.
  errors_transport: number;
  /** Watch streams that broke after their 200, not cut by the load balancer. */
  watches_broken: number;
  /** Watches that had to re-list (410 Gone): with one etcd a resumed watch never needs to. */
  watch_relists: number;
  /** 5xx although an apiserver in service was observed serving the resource for the whole request. */
  errors_5xx_while_served: number;
  /** Acknowledged writes no check read back. */
  acknowledged_writes_not_read_back: number;
  /** Acknowledged creates and updates whose answer carried no resourceVersion. */
  acknowledged_without_resource_version: number;
  // KEP-4020's stories (stories.ts, storyJudgement.ts), judged from what the real kube-controller-manager did: mvproxy claims 0 (MVPROXY_CLAIMS).
  /** Namespaces deleted by a story that went while objects of theirs were still stored. */
  namespaces_left_with_garbage: number;
  /** Namespaces deleted by a story still there once the allowance after the sole server's return had passed. */
  namespaces_stuck_terminating: number;
  /** ConfigMaps gone while their owner (only one apiserver serves it) still existed. */
  dependents_wrongly_deleted: number;
  /** What the stories were judged on, or why none ran. */
  stories?: StoriesRecord | NoStories;
  // Extras.
  /** How often the sandbox restarted kube-controller-manager: killed in the first upgrade, replaced at its node's version, or exited on losing leader election. */
  controller_manager_restarts: number;
  /** Its version and whether it ran once the run was over: it came back after every restart. */
  controller_manager_at_end?: { version: string; running: boolean };
  watch_events_missed: number;
  watch_events_duplicated: number;
  /** Watches the server ended cleanly; their clients resumed (not a failure). */
  watches_ended_by_server: number;
  writes_acknowledged: number;
  spurious_404_by_resource: Partial<Record<ResourceKey, number>>;
  /** Each read-back: when, of what, from which apiserver, and what was missing. */
  checks: Array<{ label: string; at_s: number; resources: ResourceKey[]; read_from: Partial<Record<ResourceKey, string>>; lost: number }>;
  duration_s: number;
  steps: StepRecord[];
  /** Each change of what an apiserver's own discovery listed (of the test's resources), as observed. */
  served_changes?: Array<{ apiserver: string; t_s: number; resources: ResourceKey[] }>;
  /** The pods' part of the load (podLoad.ts, counted in everything above too): their answers, and each change of the `kubernetes` Service's ready endpoints they followed. */
  in_cluster?: { requests: number; answers: Record<string, number>; endpoint_changes: Array<{ t_s: number; endpoints: string[] }> } | { skipped: string };
  /** Each entry point's moves in and out of the load balancer's rotation, and why. */
  rotation?: Array<{ entry: string; t_s: number; in: boolean; reason: string }>;
  /** Readings of a running apiserver's discovery that failed (the last reading held). */
  served_set_failed_readings?: number;
  /** The machine's 1-minute load average at the mode's start and end (2 cores here: above 2 means starved). */
  load_average?: { start: number; end: number };
  /** Modes through sidecars: each sidecar's Envoy counters that explain failures (ext_proc fallbacks to the local document, routes to missing clusters). */
  sidecar_counters?: Record<string, Record<string, number>>;
  /** A few of each problem, with when, where and what was answered: the evidence. */
  examples: Record<string, unknown[]>;
}

const EXAMPLES = 5;
const seconds = (ms: number): number => Math.round(ms / 100) / 10;

export function judgeMode(o: ModeObservations, timeline: Timeline, ledger: Ledger): ModeOutcome {
  const categories = o.requests.map((r) => categorize(r, timeline, ledger));
  const withCategory = (c: Category): RequestRecord[] => o.requests.filter((_, i) => categories[i] === c);
  const spurious = withCategory('spurious 404');
  const byResource: Partial<Record<ResourceKey, number>> = {};
  for (const r of spurious) if (r.resource !== '/api' && r.resource !== '/apis') byResource[r.resource] = (byResource[r.resource] ?? 0) + 1;
  const fivexx = o.requests.filter((r) => r.status >= 500);
  const without = fivexx.filter((r) => !r.retryAfter);
  const whileServed = withCategory('5xx while served');
  const incomplete = withCategory('incomplete discovery');
  const transport = withCategory('transport error');
  const watch = judgeWatch(ledger, o.watchEvents, o.watchStart);
  const acknowledged = ledger.all().filter((w) => w.outcome === 'ack');
  const withoutRv = acknowledged.filter((w) => w.verb !== 'delete' && w.rv === undefined);
  const unread = notReadBack(ledger.all(), o.checks);
  const lost = o.checks.flatMap((c) => c.lost);
  const stories = o.stories === undefined || 'skipped' in o.stories ? undefined : o.stories;
  const storiesRecord = o.stories === undefined ? undefined : 'skipped' in o.stories ? o.stories : o.stories.record;
  return {
    spurious_404: spurious.length,
    lost_writes: lost.length,
    missed_watch_events: watch.missed.length + watch.duplicated.length,
    errors_5xx: fivexx.length,
    errors_5xx_without_retry_after: without.length,
    incomplete_discovery: incomplete.length,
    requests: o.requests.length,
    answers: answersByClass(o.requests),
    errors_transport: transport.length,
    watches_broken: o.brokenWatches.length,
    watch_relists: o.watchRelists,
    errors_5xx_while_served: whileServed.length,
    acknowledged_writes_not_read_back: unread.length,
    acknowledged_without_resource_version: withoutRv.length,
    namespaces_left_with_garbage: stories?.counts.namespaces_left_with_garbage ?? 0,
    namespaces_stuck_terminating: stories?.counts.namespaces_stuck_terminating ?? 0,
    dependents_wrongly_deleted: stories?.counts.dependents_wrongly_deleted ?? 0,
    ...(storiesRecord === undefined ? {} : { stories: storiesRecord }),
    controller_manager_restarts: o.controllerManagerRestarts ?? 0,
    ...(o.controllerManagerAtEnd ? { controller_manager_at_end: o.controllerManagerAtEnd } : {}),
    watch_events_missed: watch.missed.length,
    watch_events_duplicated: watch.duplicated.length,
    watches_ended_by_server: o.watchesEndedByServer,
    writes_acknowledged: acknowledged.length,
    spurious_404_by_resource: byResource,
    checks: o.checks.map((c) => ({ label: c.label, at_s: seconds(c.at), resources: c.resources, read_from: c.readFrom, lost: c.lost.length })),
    duration_s: seconds(o.durationMs),
    steps: o.steps,
    examples: {
      spurious_404: spurious.slice(0, EXAMPLES),
      errors_5xx_while_served: whileServed.slice(0, EXAMPLES),
      errors_5xx_without_retry_after: without.slice(0, EXAMPLES),
      errors_transport: transport.slice(0, EXAMPLES),
      watches_broken: o.brokenWatches.slice(0, EXAMPLES),
      incomplete_discovery: incomplete.slice(0, EXAMPLES).map((r) => ({ ...r, groups: undefined, missing: missingGroups(r, timeline) })),
      lost_writes: lost.slice(0, EXAMPLES),
      acknowledged_writes_not_read_back: unread.slice(0, EXAMPLES),
      acknowledged_without_resource_version: withoutRv.slice(0, EXAMPLES),
      watch_missed: watch.missed.slice(0, EXAMPLES),
      watch_duplicated: watch.duplicated.slice(0, EXAMPLES),
    },
  };
}

/** Requests per second and category, for the picture. */
export function perSecond(
  requests: readonly RequestRecord[],
  timeline: Timeline,
  ledger: Ledger,
): Array<{ second: number; category: Category; count: number }> {
  const counts = new Map<string, number>();
  for (const r of requests) {
    const k = `${Math.floor(r.t1 / 1000)}|${categorize(r, timeline, ledger)}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts.entries()].map(([k, count]) => {
    const [second, category] = k.split('|') as [string, Category];
    return { second: Number(second), category, count };
  });
}
