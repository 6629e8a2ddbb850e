// A request deadline that a stall of mvproxy's own event loop does not trip.
// Node runs expired timers before it reads sockets: after the process stood
// still (starved of CPU on a loaded node, or busy with a long task), a plain
// deadline fires before the answer that came in meanwhile is read, and a slow
// control plane blames the apiservers for its own stall (every one at once).
// A deadline that fires later than it was due by more than a scheduling
// hiccup was stalled: it waits out the time it lost, so the answer already
// waiting is read first, and an apiserver times out only on time mvproxy
// itself was running.
import { systemClock, systemTimers, type Clock, type Timers } from './runtime.js';

/** Lateness of a timer that still counts as on time (event-loop jitter, garbage collection). */
export const STALL_TOLERANCE_MS = 100;

export interface Deadline {
  cancel(): void;
}

/** Calls `onExpire` once `ms` of time not lost to stalls has passed, unless cancelled first. */
export function startDeadline(ms: number, onExpire: () => void, timers: Timers = systemTimers, clock: Clock = systemClock): Deadline {
  let dueAt = clock() + ms;
  const check = (): void => {
    const lateBy = clock() - dueAt;
    if (lateBy <= STALL_TOLERANCE_MS) {
      onExpire();
      return;
    }
    const wait = Math.min(lateBy, ms);
    dueAt = clock() + wait;
    handle = timers.setTimeout(check, wait);
  };
  let handle = timers.setTimeout(check, ms);
  return { cancel: () => timers.clearTimeout(handle) };
}
