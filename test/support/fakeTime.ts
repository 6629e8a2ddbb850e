// A clock and timers for the sources (discovery fetcher, watchers, cluster
// observer) that only move when a test says so.
import type { TimerHandle, Timers } from '../../src/sources/runtime.js';

/** Let pending promise callbacks and I/O callbacks run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** A clock and timers that only move when the test says so. */
export class FakeTime implements Timers {
  now = Date.parse('2025-01-01T00:00:00Z');
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; callback: () => void }>();
  readonly clock = (): number => this.now;

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { at: this.now + Math.max(0, ms), callback });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }

  pendingTimers(): number {
    return this.timers.size;
  }

  /** The process stands still for `ms`: the clock moves, then the timers that fell due meanwhile fire, late. */
  async stall(ms: number): Promise<void> {
    this.now += ms;
    await this.advance(0);
  }

  /** Move time forward, firing due timers in order and letting promises settle after each. */
  async advance(ms: number): Promise<void> {
    const target = this.now + ms;
    await settle();
    for (;;) {
      let dueId: number | undefined;
      let dueAt = Number.POSITIVE_INFINITY;
      for (const [id, t] of this.timers) {
        if (t.at <= target && t.at < dueAt) {
          dueAt = t.at;
          dueId = id;
        }
      }
      if (dueId === undefined) break;
      const timer = this.timers.get(dueId);
      this.timers.delete(dueId);
      // Overdue timers (after stall()) fire late, at the current time, as Node's do.
      this.now = Math.max(this.now, dueAt);
      timer?.callback();
      await settle();
    }
    this.now = target;
    await settle();
  }
}
