// What the runs add up to, and what each mode is held to: pure.
//
// The JSON `upgrade-test --out FILE` writes:
//
//   {
//     "procedure": {                  // how every mode was operated, alike
//       "from": "v1.36.3", "to": "v1.37.2", "apiservers": ["kas-a", ...],
//       "short": false, "runs": 3,
//       "health_check": { "path": "/readyz", "interval_ms": 2000, "timeout_ms": 2000, "rise": 2, "fall": 3, "source": "..." },
//       "apiserver_shutdown_delay_s": 2,
//       "served_set_reading_interval_ms": 500,
//       "modes": { "none": "...", "upstream": "...", "mvproxy": "...", "mvproxy-drain": "..." },
//       "stories": {                  // KEP-4020's stories (stories.ts), or { "resource": null, "skipped": "..." }
//         "resource": "podcertificaterequests", "when": "...", "terminating_allowance_s": 60, ...
//       },
//       "invariants": [...], "mvproxy_claims": [...]
//     },
//     "summary": {                    // per mode, per count: the total over the runs and each run's value
//       "<mode>": { "<count>": { "total": 12, "runs": [4, 0, 8] }, ... }
//     },
//     "runs": {                       // per mode, every run in full (outcomes.ts ModeOutcome)
//       "<mode>": [ { "spurious_404": 4, ..., "steps": [...], "checks": [...], "stories": {...}, "examples": {...} }, ... ]
//     }
//   }
import type { TestMode } from './modes.js';
import type { ModeOutcome } from './outcomes.js';

/** Counts every mode must keep at 0: what the load balancer, one etcd and a correct proxy guarantee whatever the mode. */
export const INVARIANTS = [
  'errors_transport',
  'watches_broken',
  'watch_relists',
  'errors_5xx_while_served',
  'lost_writes',
  'acknowledged_writes_not_read_back',
  'acknowledged_without_resource_version',
] as const;

/** Counts mvproxy (both ways of operating it) claims to keep at 0, on top of the invariants. */
export const MVPROXY_CLAIMS = [
  'spurious_404',
  'missed_watch_events',
  'incomplete_discovery',
  'errors_5xx_without_retry_after',
  // KEP-4020's stories: the real kube-controller-manager through mvproxy leaves no garbage, no stuck namespace, no wrongly collected dependent.
  'namespaces_left_with_garbage',
  'namespaces_stuck_terminating',
  'dependents_wrongly_deleted',
] as const;

/** The counts the summary adds up, in the order it lists them. */
export const SUMMARY_COUNTS = [
  'spurious_404',
  'lost_writes',
  'missed_watch_events',
  'errors_5xx',
  'errors_5xx_without_retry_after',
  'incomplete_discovery',
  'requests',
  'errors_transport',
  'watches_broken',
  'watch_relists',
  'errors_5xx_while_served',
  'acknowledged_writes_not_read_back',
  'acknowledged_without_resource_version',
  'namespaces_left_with_garbage',
  'namespaces_stuck_terminating',
  'dependents_wrongly_deleted',
  'watches_ended_by_server',
  'writes_acknowledged',
  'controller_manager_restarts',
] as const;
export type SummaryCount = (typeof SUMMARY_COUNTS)[number];

export interface CountSummary {
  total: number;
  /** One value per run, in the order the runs were made. */
  runs: number[];
}

/** Each count's total over `runs` and its value in each run. */
export function aggregateRuns(runs: readonly ModeOutcome[]): Record<SummaryCount, CountSummary> {
  const entries = SUMMARY_COUNTS.map((k) => {
    const values = runs.map((r) => r[k]);
    return [k, { total: values.reduce((a, b) => a + b, 0), runs: values }] as const;
  });
  return Object.fromEntries(entries) as Record<SummaryCount, CountSummary>;
}

/** The counts among `keys` that are not 0 in `outcome`: what broke what it is held to. */
export function breaches(outcome: ModeOutcome, keys: readonly SummaryCount[]): Partial<Record<SummaryCount, number>> {
  return Object.fromEntries(keys.filter((k) => outcome[k] !== 0).map((k) => [k, outcome[k]]));
}

/** What a mode is held to: the invariants, and for mvproxy its claims too. */
export function heldTo(mode: TestMode): SummaryCount[] {
  return mode === 'mvproxy' || mode === 'mvproxy-drain' ? [...INVARIANTS, ...MVPROXY_CLAIMS] : [...INVARIANTS];
}

/**
 * What every answer class (outcomes.ts answerClass) is held to, in every
 * mode. The load sends well-formed requests as authenticated, authorized
 * clients, each on its own objects (unique names, patches without
 * preconditions), so every 4xx but two is an invariant: 0. A 404 is bounded by
 * `spurious_404` (the counts above: mvproxy claims 0, the baselines show the
 * skew); the others are answers while no apiserver in service served the
 * resource, which the 5xx rules also bound. A 429 (priority and fairness
 * shedding load) is allowed up to ANSWERS_429_SHARE of the requests. 2xx,
 * 304 and 5xx are held by the counts above (errors_5xx_while_served,
 * errors_5xx_without_retry_after, errors_transport).
 */
export const ANSWERS_429_SHARE = 0.005;

/** The answer classes of `outcome` beyond their bound, each with why: empty when every class kept to it. */
export function answerBreaches(outcome: Pick<ModeOutcome, 'answers' | 'requests'>): string[] {
  return Object.entries(outcome.answers).flatMap(([answer, count]) => {
    if (!/^4\d\d$/.test(answer) || answer === '404') return [];
    if (answer === '429') {
      const bound = Math.floor(outcome.requests * ANSWERS_429_SHARE);
      return count > bound ? [`429: ${count} of ${outcome.requests} requests (at most ${ANSWERS_429_SHARE * 100} %, ${bound})`] : [];
    }
    return [`${answer}: ${count} (none allowed: the load's requests are well-formed, authorized and never conflict)`];
  });
}
