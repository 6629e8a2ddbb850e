// Observations + timeline -> the counts the issue asks for: pure.
import type { Ledger, LostWrite } from './ledger.js';
import type { RequestRecord, ResourceKey, StepRecord, WatchEventRecord } from './observations.js';
import type { Timeline } from './timeline.js';

/** What became of one request, as the picture shows it. */
export const CATEGORIES = [
  'ok',
  'expected 4xx',
  'spurious 404',
  'incomplete discovery',
  '5xx with Retry-After',
  '5xx without Retry-After',
  'transport error',
] as const;
export type Category = (typeof CATEGORIES)[number];

const OBJECT_VERBS = new Set(['get', 'update', 'delete']);

/** A 404 is spurious when an in-service apiserver served the resource for the whole request and, for one object, the ledger knows it existed throughout. */
export function isSpurious404(r: RequestRecord, timeline: Timeline, ledger: Ledger): boolean {
  if (r.status !== 404 || r.resource === '/api' || r.resource === '/apis') return false;
  if (!timeline.servedThroughout(r.resource, r.t0, r.t1)) return false;
  if (!OBJECT_VERBS.has(r.verb)) return true;
  return r.name !== undefined && ledger.knownToExistThroughout(r.resource, r.name, r.t0, r.t1);
}

/** Groups an aggregated /apis answer lacks although an in-service apiserver listed them for the whole request. */
export function missingGroups(r: RequestRecord, timeline: Timeline): string[] {
  if (r.verb !== 'discovery' || r.resource !== '/apis' || r.status !== 200 || r.groups === undefined) return [];
  const listed = new Set(r.groups);
  return [...timeline.groupsThroughout(r.t0, r.t1)].filter((g) => !listed.has(g)).sort();
}

export function categorize(r: RequestRecord, timeline: Timeline, ledger: Ledger): Category {
  if (r.status === 0) return 'transport error';
  if (r.status >= 500) return r.retryAfter ? '5xx with Retry-After' : '5xx without Retry-After';
  if (isSpurious404(r, timeline, ledger)) return 'spurious 404';
  if (missingGroups(r, timeline).length > 0) return 'incomplete discovery';
  if (r.status >= 400) return 'expected 4xx';
  return 'ok';
}

export interface WatchJudgement {
  missed: Array<{ resource: ResourceKey; name: string; type: string; rv?: string }>;
  duplicated: Array<{ resource: ResourceKey; name: string; type: string; rv: string }>;
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
  for (const w of ledger.all()) {
    const start = watchStart[w.resource];
    if (start === undefined || w.t0 < start || w.outcome !== 'ack') continue;
    if (w.verb === 'delete') {
      if (!deleted.has(`${w.resource}/${w.name}`)) missed.push({ resource: w.resource, name: w.name, type: 'DELETED' });
    } else if (w.rv !== undefined && !arrived.has(`${w.resource}/${w.name}/${w.rv}`)) {
      missed.push({ resource: w.resource, name: w.name, type: w.verb === 'create' ? 'ADDED' : 'MODIFIED', rv: w.rv });
    }
  }
  return { missed, duplicated };
}

export interface ModeOutcome {
  spurious_404: number;
  lost_writes: number;
  missed_watch_events: number;
  errors_5xx: number;
  errors_5xx_without_retry_after: number;
  incomplete_discovery: number;
  requests: number;
  // Extras.
  watch_events_missed: number;
  watch_events_duplicated: number;
  /** Watches that had to re-list (410 Gone): what happened in between is invisible to a watcher. */
  watch_relists: number;
  errors_transport: number;
  spurious_404_by_resource: Partial<Record<ResourceKey, number>>;
  lost_writes_midpoint: number;
  lost_writes_end: number;
  duration_s: number;
  steps: StepRecord[];
  /** The machine's 1-minute load average at the mode's start and end (2 cores here: above 2 means starved). */
  load_average?: { start: number; end: number };
  /** Mode mvproxy: each sidecar's Envoy counters that explain failures (ext_proc fallbacks to the local document, routes to missing clusters). */
  sidecar_counters?: Record<string, Record<string, number>>;
  /** A few of each problem, with when, where and what was answered: the evidence. */
  examples: Record<string, unknown[]>;
}

export interface ModeObservations {
  requests: readonly RequestRecord[];
  watchEvents: readonly WatchEventRecord[];
  watchStart: Partial<Record<ResourceKey, number>>;
  lostMidpoint: readonly LostWrite[];
  lostEnd: readonly LostWrite[];
  steps: StepRecord[];
  durationMs: number;
  watchRelists: number;
}

const EXAMPLES = 5;

export function judgeMode(o: ModeObservations, timeline: Timeline, ledger: Ledger): ModeOutcome {
  const categories = o.requests.map((r) => categorize(r, timeline, ledger));
  const withCategory = (c: Category): RequestRecord[] => o.requests.filter((_, i) => categories[i] === c);
  const spurious = withCategory('spurious 404');
  const byResource: Partial<Record<ResourceKey, number>> = {};
  for (const r of spurious) if (r.resource !== '/api' && r.resource !== '/apis') byResource[r.resource] = (byResource[r.resource] ?? 0) + 1;
  const fivexx = o.requests.filter((r) => r.status >= 500);
  const without = fivexx.filter((r) => !r.retryAfter);
  const incomplete = withCategory('incomplete discovery');
  const watch = judgeWatch(ledger, o.watchEvents, o.watchStart);
  return {
    spurious_404: spurious.length,
    lost_writes: o.lostMidpoint.length + o.lostEnd.length,
    missed_watch_events: watch.missed.length + watch.duplicated.length,
    errors_5xx: fivexx.length,
    errors_5xx_without_retry_after: without.length,
    incomplete_discovery: incomplete.length,
    requests: o.requests.length,
    watch_events_missed: watch.missed.length,
    watch_events_duplicated: watch.duplicated.length,
    watch_relists: o.watchRelists,
    errors_transport: withCategory('transport error').length,
    spurious_404_by_resource: byResource,
    lost_writes_midpoint: o.lostMidpoint.length,
    lost_writes_end: o.lostEnd.length,
    duration_s: Math.round(o.durationMs / 100) / 10,
    steps: o.steps,
    examples: {
      spurious_404: spurious.slice(0, EXAMPLES),
      errors_5xx_without_retry_after: without.slice(0, EXAMPLES),
      errors_transport: withCategory('transport error').slice(0, EXAMPLES),
      incomplete_discovery: incomplete.slice(0, EXAMPLES).map((r) => ({ ...r, groups: undefined, missing: missingGroups(r, timeline) })),
      lost_writes: [...o.lostMidpoint, ...o.lostEnd].slice(0, EXAMPLES),
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
