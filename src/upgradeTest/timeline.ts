// Which apiserver is in service when, and what it serves: pure. An
// apiserver is in service from the moment the operator puts it (back) in the
// load balancer's rotation until the moment the operator begins taking it
// out; what it serves follows from the version it runs in that interval.
import type { ResourceKey } from './observations.js';

export interface ServiceInterval {
  apiserver: string;
  version: string;
  resources: ReadonlySet<ResourceKey>;
  /** API groups it lists in discovery (besides the core group). */
  groups: ReadonlySet<string>;
  from: number;
  /** Infinity while it is still in service. */
  to: number;
}

export class Timeline {
  private readonly intervals: ServiceInterval[] = [];

  /** `apiserver` (running `version`) enters service at `t`. */
  enter(apiserver: string, version: string, served: { resources: Iterable<ResourceKey>; groups: Iterable<string> }, t: number): void {
    if (this.open(apiserver)) throw new Error(`${apiserver} is already in service`);
    this.intervals.push({ apiserver, version, resources: new Set(served.resources), groups: new Set(served.groups), from: t, to: Number.POSITIVE_INFINITY });
  }

  /** `apiserver` leaves service at `t` (the operator begins taking it out). */
  leave(apiserver: string, t: number): void {
    const interval = this.open(apiserver);
    if (!interval) throw new Error(`${apiserver} is not in service`);
    interval.to = t;
  }

  all(): readonly ServiceInterval[] {
    return this.intervals;
  }

  /** The apiservers in service for the whole of [t0, t1]. */
  throughout(t0: number, t1: number): ServiceInterval[] {
    return this.intervals.filter((i) => i.from <= t0 && i.to >= t1);
  }

  /** Some apiserver was in service serving `resource` for the whole of [t0, t1]. */
  servedThroughout(resource: ResourceKey, t0: number, t1: number): boolean {
    return this.throughout(t0, t1).some((i) => i.resources.has(resource));
  }

  /** Every group some apiserver in service for the whole of [t0, t1] lists in discovery. */
  groupsThroughout(t0: number, t1: number): Set<string> {
    return new Set(this.throughout(t0, t1).flatMap((i) => [...i.groups]));
  }

  private open(apiserver: string): ServiceInterval | undefined {
    return this.intervals.find((i) => i.apiserver === apiserver && i.to === Number.POSITIVE_INFINITY);
  }
}
