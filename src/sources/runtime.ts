// Injection seams shared by the sources: a clock and timers, so every poll,
// backoff, expiry and grace period can be driven by a fake in unit tests.

/** Epoch milliseconds. */
export type Clock = () => number;

/** Opaque handle returned by Timers.setTimeout. */
export type TimerHandle = unknown;

export interface Timers {
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const systemClock: Clock = () => Date.now();

export const systemTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * A sleep that stop() can cut short. Resolves true when the time elapsed,
 * false when cancelled.
 */
export class CancellableSleep {
  private pending = new Map<TimerHandle, (elapsed: boolean) => void>();

  constructor(private readonly timers: Timers) {}

  sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const handle = this.timers.setTimeout(() => {
        this.pending.delete(handle);
        resolve(true);
      }, ms);
      this.pending.set(handle, resolve);
    });
  }

  cancelAll(): void {
    for (const [handle, resolve] of this.pending) {
      this.timers.clearTimeout(handle);
      resolve(false);
    }
    this.pending.clear();
  }
}

/** Exponential backoff: initial, doubling, capped; reset after a success. */
export class Backoff {
  private current: number;

  constructor(
    private readonly initialMs = 500,
    private readonly maxMs = 30_000,
  ) {
    this.current = initialMs;
  }

  next(): number {
    const delay = this.current;
    this.current = Math.min(this.current * 2, this.maxMs);
    return delay;
  }

  reset(): void {
    this.current = this.initialMs;
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
