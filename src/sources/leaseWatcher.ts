// Watches kube-apiserver identity leases (kube-system, label
// apiserver.kubernetes.io/identity=kube-apiserver) and reports, per apiserver
// hostname, whether its lease is present or gone. An apiserver deletes its
// lease on clean shutdown; one that crashed leaves it to expire, so a lease
// that was not renewed for leaseDurationSeconds counts as gone too.
//
// When a lease was last renewed is judged from what this control plane saw,
// never from a timestamp its writer alone controls: a renewal is a change of
// the lease's renewTime (or holder) that the watch delivered, dated by our
// own clock. A renewTime in the past (a lease found already old, when the
// control plane starts) counts as written; one in the future counts as the
// moment we saw it; a lease without one is dated by when we saw it. The
// duration is the lease's own, bounded (DEFAULT_LEASE_DURATION_SECONDS when
// absent or not a positive number, never more than MAX_LEASE_DURATION_SECONDS):
// no value a writer puts in a lease keeps an apiserver present past the
// moment its renewals stopped plus that bounded duration.
import type { Logger } from '../util/log.js';
import type { LeaseObservation } from '../model/cluster.js';
import { Reflector, type ListWatchClient } from './listWatch.js';
import { systemClock, systemTimers, type Clock, type TimerHandle, type Timers } from './runtime.js';
import { isRecord } from '../util/json.js';

const IDENTITY_LEASE_NAMESPACE = 'kube-system';
const IDENTITY_LEASE_SELECTOR = 'apiserver.kubernetes.io/identity=kube-apiserver';
const HOSTNAME_LABEL = 'kubernetes.io/hostname';

export type LeaseEvent =
  | { type: 'present'; hostname: string; lease: LeaseObservation }
  | { type: 'gone'; hostname: string; leaseName: string; goneAt: number; reason: 'deleted' | 'expired' };

export interface LeaseWatcherOptions {
  client: ListWatchClient;
  onEvent: (event: LeaseEvent) => void;
  logger: Logger;
  clock?: Clock;
  timers?: Timers;
  /** How often expiry is re-checked between watch events. */
  expiryCheckIntervalMs?: number;
  /** Tolerance for clock skew between the apiservers and mvproxy before an expired lease counts as gone. */
  expirySlackMs?: number;
  /** Duration of a lease without a usable leaseDurationSeconds (default: kube-apiserver's, 3600 s). */
  defaultLeaseDurationSeconds?: number;
  /** Longer leaseDurationSeconds count as this (default 3600 s). */
  maxLeaseDurationSeconds?: number;
}

/** The fields of a coordination.k8s.io/v1 Lease this watcher reads. */
export interface IdentityLease {
  name: string;
  hostname: string;
  holderIdentity: string;
  /** renewTime, else acquireTime, as written (epoch ms; may lie in the future); undefined when neither is set. */
  renewTime?: number;
  leaseDurationSeconds?: number;
}

export type LeaseHostState = { state: 'present'; lease: LeaseObservation; expiresAt: number } | { state: 'gone'; leaseName: string; goneAt: number };

const DEFAULT_EXPIRY_CHECK_INTERVAL_MS = 5000;
const DEFAULT_EXPIRY_SLACK_MS = 30_000;
/** kube-apiserver's --identity-lease-duration-seconds default (it renews every 10 s). */
export const DEFAULT_LEASE_DURATION_SECONDS = 3600;
export const MAX_LEASE_DURATION_SECONDS = 3600;

/** A lease's renewal as this control plane first saw it. */
interface SeenRenewal {
  /** holderIdentity and renewTime as written: a change of either is a renewal. */
  renewal: string;
  /** Our clock when the watch (or a list) delivered it. */
  at: number;
}

export class LeaseWatcher {
  private readonly reflector: Reflector<IdentityLease>;
  private readonly onEvent: (event: LeaseEvent) => void;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly expiryCheckIntervalMs: number;
  private readonly expirySlackMs: number;
  private readonly defaultLeaseDurationMs: number;
  private readonly maxLeaseDurationMs: number;
  private leases: ReadonlyMap<string, IdentityLease> = new Map();
  /** Per lease name, its current renewal and when we first saw it. */
  private readonly seen = new Map<string, SeenRenewal>();
  private hosts = new Map<string, LeaseHostState>();
  private expiryTimer: TimerHandle | undefined;
  private stopped = false;

  constructor(options: LeaseWatcherOptions) {
    this.onEvent = options.onEvent;
    this.logger = options.logger;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.expiryCheckIntervalMs = options.expiryCheckIntervalMs ?? DEFAULT_EXPIRY_CHECK_INTERVAL_MS;
    this.expirySlackMs = options.expirySlackMs ?? DEFAULT_EXPIRY_SLACK_MS;
    this.defaultLeaseDurationMs = (options.defaultLeaseDurationSeconds ?? DEFAULT_LEASE_DURATION_SECONDS) * 1000;
    this.maxLeaseDurationMs = (options.maxLeaseDurationSeconds ?? MAX_LEASE_DURATION_SECONDS) * 1000;
    this.reflector = new Reflector<IdentityLease>({
      name: 'identity-leases',
      client: options.client,
      path: `/apis/coordination.k8s.io/v1/namespaces/${IDENTITY_LEASE_NAMESPACE}/leases`,
      labelSelector: IDENTITY_LEASE_SELECTOR,
      decode: decodeIdentityLease,
      onChange: (store) => {
        this.leases = store;
        this.reconcile();
      },
      logger: options.logger,
      clock: this.clock,
      timers: this.timers,
    });
  }

  /** Resolves once the first list attempt finished. */
  start(): Promise<void> {
    this.scheduleExpiryCheck();
    return this.reflector.start();
  }

  stop(): void {
    this.stopped = true;
    this.reflector.stop();
    if (this.expiryTimer !== undefined) this.timers.clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
  }

  /** Current state per hostname (present leases and remembered disappearances). */
  states(): ReadonlyMap<string, LeaseHostState> {
    return this.hosts;
  }

  private scheduleExpiryCheck(): void {
    if (this.stopped) return;
    this.expiryTimer = this.timers.setTimeout(() => {
      this.expiryTimer = undefined;
      this.reconcile();
      this.scheduleExpiryCheck();
    }, this.expiryCheckIntervalMs);
  }

  /** Derive per-hostname state from the store and the clock; emit the differences. */
  private reconcile(): void {
    if (this.stopped) return;
    const now = this.clock();
    this.noteRenewals(now);
    // Several leases may carry one hostname (renamed lease, old and new naming): the freshest live one wins.
    const live = new Map<string, Judged>();
    const expired = new Map<string, Judged>();
    for (const lease of this.leases.values()) {
      const judged = this.judge(lease, now);
      const target = now > judged.expiresAt + this.expirySlackMs ? expired : live;
      const best = target.get(lease.hostname);
      if (!best || judged.renewedAt > best.renewedAt) target.set(lease.hostname, judged);
    }

    for (const [hostname, { lease, renewedAt, expiresAt }] of live) {
      const observation: LeaseObservation = { name: lease.name, holderIdentity: lease.holderIdentity, renewTime: renewedAt };
      const previous = this.hosts.get(hostname);
      this.hosts.set(hostname, { state: 'present', lease: observation, expiresAt });
      if (previous?.state === 'present' && sameLease(previous.lease, observation)) continue;
      this.emit({ type: 'present', hostname, lease: observation });
    }

    for (const [hostname, previous] of this.hosts) {
      if (live.has(hostname) || previous.state === 'gone') continue;
      const expiredLease = expired.get(hostname);
      if (expiredLease) {
        // Gone since it stopped being valid, not since we noticed.
        const goneAt = Math.min(now, expiredLease.expiresAt);
        this.hosts.set(hostname, { state: 'gone', leaseName: expiredLease.lease.name, goneAt });
        this.logger.info({ leaseHostname: hostname, lease: expiredLease.lease.name }, 'identity lease expired');
        this.emit({ type: 'gone', hostname, leaseName: expiredLease.lease.name, goneAt, reason: 'expired' });
      } else {
        this.hosts.set(hostname, { state: 'gone', leaseName: previous.lease.name, goneAt: now });
        this.logger.info({ leaseHostname: hostname, lease: previous.lease.name }, 'identity lease deleted');
        this.emit({ type: 'gone', hostname, leaseName: previous.lease.name, goneAt: now, reason: 'deleted' });
      }
    }

    // A lease seen for the first time already expired (crashed while we were not watching).
    for (const [hostname, { lease, expiresAt }] of expired) {
      if (this.hosts.has(hostname)) continue;
      this.hosts.set(hostname, { state: 'gone', leaseName: lease.name, goneAt: expiresAt });
      this.emit({ type: 'gone', hostname, leaseName: lease.name, goneAt: expiresAt, reason: 'expired' });
    }
  }

  /** Dates every renewal the store shows that we had not seen yet; forgets leases no longer there. */
  private noteRenewals(now: number): void {
    const names = new Set<string>();
    for (const lease of this.leases.values()) {
      names.add(lease.name);
      const renewal = JSON.stringify([lease.holderIdentity, lease.renewTime ?? null]);
      if (this.seen.get(lease.name)?.renewal !== renewal) this.seen.set(lease.name, { renewal, at: now });
    }
    for (const name of this.seen.keys()) if (!names.has(name)) this.seen.delete(name);
  }

  /**
   * When a lease was last renewed, as far as we can tell (its renewTime, but
   * never later than when we saw it), and when it expires (that plus its
   * bounded duration).
   */
  private judge(lease: IdentityLease, now: number): Judged {
    const seenAt = this.seen.get(lease.name)?.at ?? now;
    const renewedAt = lease.renewTime === undefined ? seenAt : Math.min(lease.renewTime, seenAt);
    const declared = lease.leaseDurationSeconds;
    const durationMs =
      declared !== undefined && Number.isFinite(declared) && declared > 0 ? Math.min(declared * 1000, this.maxLeaseDurationMs) : this.defaultLeaseDurationMs;
    return { lease, renewedAt, expiresAt: renewedAt + durationMs };
  }

  private emit(event: LeaseEvent): void {
    try {
      this.onEvent(event);
    } catch (err) {
      this.logger.error({ err: err instanceof Error ? err.message : String(err) }, 'lease listener threw');
    }
  }
}

interface Judged {
  lease: IdentityLease;
  renewedAt: number;
  expiresAt: number;
}

function sameLease(a: LeaseObservation, b: LeaseObservation): boolean {
  return a.name === b.name && a.holderIdentity === b.holderIdentity && a.renewTime === b.renewTime;
}

/** Minimal typed view of an identity Lease; undefined when it lacks the hostname label. */
function decodeIdentityLease(raw: unknown): IdentityLease | undefined {
  if (!isRecord(raw) || !isRecord(raw['metadata'])) return undefined;
  const metadata = raw['metadata'];
  const name = metadata['name'];
  const labels = isRecord(metadata['labels']) ? metadata['labels'] : {};
  const hostname = labels[HOSTNAME_LABEL];
  if (typeof name !== 'string' || typeof hostname !== 'string' || hostname === '') return undefined;
  const spec = isRecord(raw['spec']) ? raw['spec'] : {};
  const lease: IdentityLease = {
    name,
    hostname,
    holderIdentity: typeof spec['holderIdentity'] === 'string' ? spec['holderIdentity'] : '',
  };
  const renewTime = parseTime(spec['renewTime']) ?? parseTime(spec['acquireTime']);
  if (renewTime !== undefined) lease.renewTime = renewTime;
  if (typeof spec['leaseDurationSeconds'] === 'number') lease.leaseDurationSeconds = spec['leaseDurationSeconds'];
  return lease;
}

/** metav1.MicroTime ("2024-05-01T10:00:00.123456Z") to epoch ms. */
function parseTime(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}
