// Pure: which sidecars (and apiservers) count as live for the `kubernetes`
// Service, as the replicas agree on it without a leader (issue 21).
//
// Every replica probes every sidecar (TLS, then GET /readyz: 200) and every
// apiserver directly every PROBE_INTERVAL_MS, and writes into its own entry of
// the shared liveness record the round of each one's last passing probe. The
// merge rule: a target is live at a replica while
//   - that replica's own probe of it passed less than LIVENESS_EXPIRY_MS ago, or
//   - that replica saw, less than LIVENESS_EXPIRY_MS ago, another replica's
//     entry change that target's value (that replica's probe passed again).
// Every time is the reading replica's own monotonic clock when it observed
// the probe or the change: no timestamp written on another machine is
// compared with this one's clock. A value seen for the first time (at start,
// or a replica's new entry) is no renewal: nobody knows when it was written.
// So a target one replica cannot reach stays live as long as another one
// can, and every replica reaches the same verdict (up to the record's watch
// latency) with upstream's timings (renew every 10 s, expire after 15 s).
import type { LivenessReport } from '../model/publication.js';
import type { Liveness } from './publishedEndpoints.js';

export const PROBE_INTERVAL_MS = 10_000;
export const LIVENESS_EXPIRY_MS = 15_000;

export type ProbeKind = 'sidecar' | 'apiserver';

/** Why a replica must not write yet: its view may be missing other replicas' renewals. */
export type ViewReadiness = { ready: true } | { ready: false; why: string };

interface Renewal {
  /** The incarnation and value last seen. */
  token: string;
  /** When it was seen to change (monotonic); undefined after a first sighting. */
  at?: number;
}

const key = (kind: ProbeKind, name: string): string => `${kind}\u0000${name}`;

export class LivenessLedger {
  /** Per other replica, per kind and name. */
  private readonly others = new Map<string, Map<string, Renewal>>();
  /** Per other replica: its entry's round renewals (a live replica's round changes every probe round) and the plan digest it names. */
  private readonly entries = new Map<string, { renewal: Renewal; plan?: string }>();
  /** This replica's own passing probes, by kind and name. */
  private readonly own = new Map<string, number>();
  private watchingSince?: number;
  private ownEchoAt?: number;
  private ownRoundSeen?: number;

  constructor(
    private readonly replica: string,
    private readonly incarnation: string,
    private readonly expiryMs = LIVENESS_EXPIRY_MS,
  ) {}

  /** This replica's probe of `name` passed at `at`. */
  ownSuccess(kind: ProbeKind, name: string, at: number): void {
    this.own.set(key(kind, name), at);
  }

  /** The liveness record as read at `at` (every entry, this replica's included). */
  observeRecord(reports: ReadonlyMap<string, LivenessReport>, at: number): void {
    this.watchingSince ??= at;
    for (const replica of [...this.others.keys()]) if (!reports.has(replica)) this.others.delete(replica);
    for (const replica of [...this.entries.keys()]) if (!reports.has(replica)) this.entries.delete(replica);
    for (const [replica, report] of reports) {
      if (replica === this.replica) {
        // This replica's own entry coming back: the record's watch works.
        if (report.incarnation === this.incarnation && report.round !== this.ownRoundSeen) {
          this.ownRoundSeen = report.round;
          this.ownEchoAt = at;
        }
        continue;
      }
      const entryToken = `${report.incarnation}:${report.round}`;
      const seen = this.entries.get(replica);
      const renewal = seen === undefined ? { token: entryToken } : seen.renewal.token !== entryToken ? { token: entryToken, at } : seen.renewal;
      this.entries.set(replica, { renewal, ...(report.plan === undefined ? {} : { plan: report.plan }) });
      const before = this.others.get(replica) ?? new Map<string, Renewal>();
      const after = new Map<string, Renewal>();
      const values: Array<[ProbeKind, Record<string, number>]> = [
        ['sidecar', report.sidecars],
        ['apiserver', report.apiservers],
      ];
      for (const [kind, byName] of values) {
        for (const [name, value] of Object.entries(byName)) {
          const k = key(kind, name);
          const token = `${report.incarnation}:${value}`;
          const previous = before.get(k);
          if (previous === undefined) after.set(k, { token });
          else if (previous.token !== token) after.set(k, { token, at });
          else after.set(k, previous);
        }
      }
      this.others.set(replica, after);
    }
  }

  /**
   * Whether this replica's view can be trusted to take anything away: it has
   * watched the record for a whole expiry period (so it has seen every live
   * replica renew) and its own latest entry came back through the watch
   * within one (so the watch is not stalled).
   */
  viewReadiness(now: number): ViewReadiness {
    if (this.watchingSince === undefined) return { ready: false, why: 'the liveness record has not been read yet' };
    if (now - this.watchingSince < this.expiryMs)
      return { ready: false, why: `watching the liveness record for ${Math.round(this.expiryMs / 1000)} s before writing` };
    if (this.ownEchoAt === undefined || now - this.ownEchoAt >= this.expiryMs)
      return { ready: false, why: "this replica's own liveness entry has not come back through the record's watch lately" };
    return { ready: true };
  }

  /** The replicas (this one included) whose passing probe of the target this replica observed within the expiry, sorted. */
  witnesses(kind: ProbeKind, name: string, now: number): string[] {
    const fresh = (at: number | undefined): boolean => at !== undefined && now - at < this.expiryMs;
    const out: string[] = [];
    if (fresh(this.own.get(key(kind, name)))) out.push(this.replica);
    for (const [replica, renewals] of this.others) if (fresh(renewals.get(key(kind, name))?.at)) out.push(replica);
    return out.sort();
  }

  /**
   * The other replicas alive now (their entry's round changed within the
   * expiry, as this replica observed it) that name a plan other than `own`,
   * sorted by replica. An entry without a plan (an older replica) disagrees
   * with nobody.
   */
  planDisagreements(own: string, now: number): Array<{ replica: string; plan: string }> {
    const out: Array<{ replica: string; plan: string }> = [];
    for (const [replica, { renewal, plan }] of this.entries)
      if (plan !== undefined && plan !== own && renewal.at !== undefined && now - renewal.at < this.expiryMs) out.push({ replica, plan });
    return out.sort((a, b) => (a.replica < b.replica ? -1 : a.replica > b.replica ? 1 : 0));
  }

  /** Live now: any witness. */
  live(names: readonly string[], now: number): Liveness {
    const set = (kind: ProbeKind): Set<string> => new Set(names.filter((n) => this.witnesses(kind, n, now).length > 0));
    return { sidecars: set('sidecar'), apiservers: set('apiserver') };
  }
}
