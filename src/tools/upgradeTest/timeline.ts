// Which apiserver is in service when, and what it serves: pure. An
// apiserver is in service while its entry point is in the load balancer's
// rotation (balancer.ts says when it enters and leaves). What it serves is
// observed, never assumed: the run reads each apiserver's own discovery
// (servedSets.ts) every few hundred milliseconds and records each reading
// here; between two readings the last one holds (a failed reading changes
// nothing), and a stopped apiserver serves nothing from the moment it is
// stopped.
import type { ResourceKey } from './observations.js';

export interface ServiceInterval {
  apiserver: string;
  from: number;
  /** Infinity while it is still in service. */
  to: number;
}

/** What one apiserver's own discovery listed. */
export interface ServedSet {
  resources: ReadonlySet<ResourceKey>;
  /** API groups it lists in /apis (the core group is not one). */
  groups: ReadonlySet<string>;
}

export const SERVES_NOTHING: ServedSet = { resources: new Set(), groups: new Set() };

interface Reading extends ServedSet {
  t: number;
}

/** A change of what an apiserver serves, for the record (resources only: the groups follow them). */
export interface ServedChange {
  apiserver: string;
  t: number;
  resources: ResourceKey[];
}

export class Timeline {
  private readonly intervals: ServiceInterval[] = [];
  private readonly readings = new Map<string, Reading[]>();
  private readonly changes: ServedChange[] = [];

  /** `apiserver` enters service at `t`. */
  enter(apiserver: string, t: number): void {
    if (this.open(apiserver)) throw new Error(`${apiserver} is already in service`);
    this.intervals.push({ apiserver, from: t, to: Number.POSITIVE_INFINITY });
  }

  /** `apiserver` leaves service at `t`. */
  leave(apiserver: string, t: number): void {
    const interval = this.open(apiserver);
    if (!interval) throw new Error(`${apiserver} is not in service`);
    interval.to = t;
  }

  /** `apiserver`'s own discovery, read at `t`, listed `served` (SERVES_NOTHING: it did not answer, or was stopped). */
  observe(apiserver: string, t: number, served: ServedSet): void {
    const list = this.readings.get(apiserver) ?? [];
    let i = list.length;
    while (i > 0 && (list[i - 1]?.t ?? 0) > t) i--;
    list.splice(i, 0, { t, resources: served.resources, groups: served.groups });
    this.readings.set(apiserver, list);
    const previous = this.changes.filter((c) => c.apiserver === apiserver).at(-1);
    const resources = [...served.resources].sort();
    if (previous === undefined || previous.resources.join() !== resources.join()) this.changes.push({ apiserver, t, resources });
  }

  all(): readonly ServiceInterval[] {
    return this.intervals;
  }

  /** Every change of what an apiserver was observed to serve, in the order observed. */
  servedChanges(): readonly ServedChange[] {
    return this.changes;
  }

  /** The apiservers in service for the whole of [t0, t1]. */
  throughout(t0: number, t1: number): string[] {
    return [...new Set(this.intervals.filter((i) => i.from <= t0 && i.to >= t1).map((i) => i.apiserver))];
  }

  /** The readings of `apiserver` that say what it served during [t0, t1]: the last one at or before t0 and every later one up to t1; none when nothing was read before t0. */
  readingsDuring(apiserver: string, t0: number, t1: number): ServedSet[] {
    const list = this.readings.get(apiserver) ?? [];
    const before = list.filter((r) => r.t <= t0).at(-1);
    return before === undefined ? [] : [before, ...list.filter((r) => r.t > t0 && r.t <= t1)];
  }

  /** Some apiserver was in service and observed serving `resource` for the whole of [t0, t1]. */
  servedThroughout(resource: ResourceKey, t0: number, t1: number): boolean {
    return this.throughout(t0, t1).some((a) => this.holdsThroughout(a, t0, t1, (s) => s.resources.has(resource)));
  }

  /** Some apiserver was in service and observed answering discovery (serving anything) for the whole of [t0, t1]. */
  answeringThroughout(t0: number, t1: number): boolean {
    return this.throughout(t0, t1).some((a) => this.holdsThroughout(a, t0, t1, (s) => s.resources.size > 0));
  }

  /** Every group some apiserver in service for the whole of [t0, t1] was observed listing throughout. */
  groupsThroughout(t0: number, t1: number): Set<string> {
    const groups = new Set<string>();
    for (const a of this.throughout(t0, t1)) {
      const readings = this.readingsDuring(a, t0, t1);
      const [first, ...rest] = readings;
      for (const g of first?.groups ?? []) if (rest.every((r) => r.groups.has(g))) groups.add(g);
    }
    return groups;
  }

  /** What each apiserver in service at `t` was last observed to serve. */
  servedAt(t: number): Map<string, ServedSet> {
    const served = new Map<string, ServedSet>();
    for (const a of this.throughout(t, t)) served.set(a, this.readingsDuring(a, t, t)[0] ?? SERVES_NOTHING);
    return served;
  }

  private holdsThroughout(apiserver: string, t0: number, t1: number, holds: (s: ServedSet) => boolean): boolean {
    const readings = this.readingsDuring(apiserver, t0, t1);
    return readings.length > 0 && readings.every(holds);
  }

  private open(apiserver: string): ServiceInterval | undefined {
    return this.intervals.find((i) => i.apiserver === apiserver && i.to === Number.POSITIVE_INFINITY);
  }
}

/** The resources that only `leaving` serves among the apiservers in service at `t`: after it leaves, no apiserver in service serves them. */
export function servedOnlyBy(timeline: Timeline, leaving: string, t: number): ResourceKey[] {
  const served = timeline.servedAt(t);
  const others = [...served].filter(([a]) => a !== leaving).flatMap(([, s]) => [...s.resources]);
  return [...(served.get(leaving)?.resources ?? [])].filter((r) => !others.includes(r)).sort();
}
