// What the planner is told besides the cluster model: settings and the operator's drains.
export interface PlannerOptions {
  /**
   * How long a peer whose identity lease disappeared still counts as serving
   * what it served: its resources answer 503 rather than 404 meanwhile (unavailable-503).
   */
  departedGraceMs: number;
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
