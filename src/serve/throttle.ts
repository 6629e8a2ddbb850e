// Runs work on the newest of a stream of values, at most once per interval:
// on the next turn of the event loop when the last run is an interval old,
// else when the interval ends. A value that arrives meanwhile replaces the
// one waiting. The control plane reconciles through it: a restarting
// apiserver changes its lease, reachability and readiness in quick
// succession, and a CRD storm changes every apiserver's discovery at each
// poll; one reconcile per change would queue them one behind the other (and
// their garbage is most of the replica's memory).
export class LatestThrottle<T> {
  private pending: { value: T } | undefined;
  private scheduled = false;
  private lastRun = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly run: (value: T) => void,
    private readonly intervalMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  offer(value: T): void {
    this.pending = { value };
    if (this.scheduled) return;
    this.scheduled = true;
    const wait = this.lastRun + this.intervalMs - this.now();
    if (wait <= 0) setImmediate(() => this.fire());
    else setTimeout(() => this.fire(), wait).unref();
  }

  /** The caller ran the work itself with something newer: what waits is dropped, and the interval starts now. */
  supersede(): void {
    this.pending = undefined;
    this.lastRun = this.now();
  }

  /**
   * Runs the work now (the interval starts again): on the value waiting, if
   * one is, since it is newer than any the work has run on; else on
   * `current`, the value the work last ran on. For a caller whose own state
   * changed (not the values'): dropping what waits in favour of `current`
   * would run on an older value, and keep to it until the next offer.
   */
  runNow(current: T | undefined): void {
    const value = this.pending ? this.pending.value : current;
    this.pending = undefined;
    this.lastRun = this.now();
    if (value !== undefined) this.run(value);
  }

  private fire(): void {
    this.scheduled = false;
    const pending = this.pending;
    this.pending = undefined;
    if (!pending) return;
    this.lastRun = this.now();
    this.run(pending.value);
  }
}
