// What the planner is told besides the cluster model: the apiservers'
// standings and the operator's drains.
import type { Standings } from '../model/liveness.js';

export interface PlannerOptions {
  /**
   * Every apiserver's standing (model/liveness.ts), computed once per
   * reconcile: a peer whose identity lease disappeared within the departed
   * grace is unavailable, and its resources answer 503 rather than 404
   * meanwhile (unavailable-503); after it, gone.
   */
  standings: Standings;
  /**
   * Apiservers an operator is draining before taking them down (their
   * upgrade): their own sidecars send what peers also serve to those peers,
   * and no sidecar chooses them while another available apiserver serves the
   * same thing. Never a 503 because of a drain: what only drained apiservers
   * serve still goes to them while they are up. Apiservers that fail /readyz
   * are drained too (drainedApiservers).
   */
  draining?: ReadonlySet<string>;
}
