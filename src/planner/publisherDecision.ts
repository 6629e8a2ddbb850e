// Pure: the publisher's rules about other writers and about being seen
// (issue 29), on injected monotonic times.
//
// Never worse than upstream's reconciler:
// - content naming an address outside the configuration is replaced at the
//   next round (every PROBE_INTERVAL_MS), however often it comes back, as
//   upstream's lease reconciler replaces foreign content every 10 s;
// - content of an apiserver still on the lease reconciler (configured
//   apiservers at their own address and port only: the no-proxy state) is
//   held, not fought (LeaseHold);
// - replicas whose configurations differ write nothing (ConfigMismatch, in
//   the publisher with LivenessLedger.planDisagreements): neither is known
//   to be right, and what is published stays.

/** The first hold after lease content came back over this replica's own; each further one doubles, up to LEASE_HOLD_MAX_MS. */
export const LEASE_HOLD_FIRST_MS = 30_000;
export const LEASE_HOLD_MAX_MS = 300_000;
/** A retry's content must stay this long (two of the lease reconciler's 10 s periods) before the replica counts as publishing again. */
export const LEASE_CONFIRM_MS = 20_000;

/** `began`: this round starts a hold (lease content came back over this replica's own). */
export type LeaseAction = { act: 'write'; retry: boolean } | { act: 'hold'; until: number; began: boolean };

/**
 * The rule for lease content (one replica's, in memory):
 * - the first found while this replica has not had its own content in place
 *   (upstream's leftovers at the takeover) is written over;
 * - found again after this replica's content was in place means an apiserver
 *   still on the lease reconciler: hold, writing nothing, for 30 s, then
 *   write once (a retry); found again after a retry, hold twice as long (up
 *   to 5 min);
 * - a round that finds every object as this replica wants it resets the hold
 *   to 30 s; after a retry, only once the retry's content has stayed
 *   LEASE_CONFIRM_MS (two of the reconciler's 10 s periods: it would have
 *   rewritten it by then).
 * So a replica resumes by itself at the first retry after the apiserver
 * leaves the lease reconciler: within 5 min, within 30 s of a first hold.
 */
export class LeaseHold {
  private ownInPlace = false;
  private until?: number;
  private retriedAt?: number;
  private nextHoldMs = LEASE_HOLD_FIRST_MS;

  constructor(
    private readonly firstMs = LEASE_HOLD_FIRST_MS,
    private readonly maxMs = LEASE_HOLD_MAX_MS,
  ) {
    this.nextHoldMs = firstMs;
  }

  /** A round found lease content at `now`: what to do about it. */
  leaseFound(now: number): LeaseAction {
    if (this.until !== undefined) {
      if (now < this.until) return { act: 'hold', until: this.until, began: false };
      this.until = undefined;
      this.retriedAt = now;
      return { act: 'write', retry: true };
    }
    if (!this.ownInPlace) return { act: 'write', retry: false };
    this.ownInPlace = false;
    this.until = now + this.nextHoldMs;
    this.nextHoldMs = Math.min(this.nextHoldMs * 2, this.maxMs);
    return { act: 'hold', until: this.until, began: true };
  }

  /** This replica wrote its content over the objects (or found it there after its writes). */
  wrote(): void {
    this.ownInPlace = true;
  }

  /**
   * A round found every object as this replica wants it, writing nothing.
   * False while a retry's content has not stayed LEASE_CONFIRM_MS yet (still
   * retrying, not publishing).
   */
  confirmed(now: number): boolean {
    this.ownInPlace = true;
    if (this.retriedAt !== undefined && now - this.retriedAt < LEASE_CONFIRM_MS) return false;
    this.retriedAt = undefined;
    this.nextHoldMs = this.firstMs;
    return true;
  }

  /**
   * A round found no lease content. During a hold (another replica's retry
   * is in place) that counts as a retry seen: publishing only once it has
   * stayed LEASE_CONFIRM_MS, as after this replica's own.
   */
  clear(now: number): void {
    if (this.until === undefined) return;
    this.until = undefined;
    this.retriedAt ??= now;
  }
}

/** Kubernetes Events about the Service, by reason: at most one per reason per EVENT_REASON_INTERVAL_MS, the same message at most once per EVENT_REPEAT_INTERVAL_MS. */
export const EVENT_REASON_INTERVAL_MS = 60_000;
export const EVENT_REPEAT_INTERVAL_MS = 600_000;

export class EventLimiter {
  private readonly byReason = new Map<string, number>();
  private readonly byMessage = new Map<string, number>();

  constructor(
    private readonly reasonIntervalMs = EVENT_REASON_INTERVAL_MS,
    private readonly repeatIntervalMs = EVENT_REPEAT_INTERVAL_MS,
  ) {}

  /** Whether an event with this reason and message may be sent at `now` (and, if so, counts it as sent). */
  allow(reason: string, message: string, now: number): boolean {
    const lastReason = this.byReason.get(reason);
    const key = `${reason}\u0000${message}`;
    const lastMessage = this.byMessage.get(key);
    if (lastReason !== undefined && now - lastReason < this.reasonIntervalMs) return false;
    if (lastMessage !== undefined && now - lastMessage < this.repeatIntervalMs) return false;
    this.byReason.set(reason, now);
    this.byMessage.set(key, now);
    for (const [k, at] of this.byMessage) if (now - at >= this.repeatIntervalMs) this.byMessage.delete(k);
    return true;
  }
}

/** A replica is not ready (its /readyz fails) once its publisher has not been publishing for this long. */
export const READINESS_GRACE_MS = 60_000;

/**
 * Readiness from the publisher: ready while publishing, and for
 * READINESS_GRACE_MS after it last was (or after it started): a hold of a
 * round or two, a failed write retried, is no reason to alarm anyone.
 */
export function publisherReadiness(state: string, message: string, notPublishingSince: number | undefined, now: number): { ready: boolean; why: string } {
  if (state === 'publishing' || notPublishingSince === undefined) return { ready: true, why: 'publishing' };
  const forMs = now - notPublishingSince;
  if (forMs < READINESS_GRACE_MS) return { ready: true, why: `${state} for ${Math.round(forMs / 1000)} s: ${message}` };
  return { ready: false, why: `the kubernetes Service publisher has not been publishing for ${Math.round(forMs / 1000)} s: ${state}: ${message}` };
}
