// What one sidecar must do, as plain data: the planner's output and the
// translator's input. Everything is sorted so equal plans serialize equally.
import type { NetworkAddress } from '../model/cluster.js';

/** An apiserver a sidecar sends requests to. */
export interface PlannedApiserver {
  /** The endpoint name (for peers, also what routes refer to). */
  name: string;
  address: NetworkAddress;
}

/** reroute-to-peers (docs/request-rules.md): served by these reachable, live peers (sorted by name). */
export interface RerouteToPeers {
  kind: 'peers';
  peers: string[];
}

/** unavailable-503: served only by apiservers that are unreachable or left recently: answer 503. */
export interface Unavailable {
  kind: 'unavailable';
  /** The peers that serve it but cannot take it now (sorted by name). */
  servedBy: string[];
}

export type ResourceRouteAction = RerouteToPeers | Unavailable;

/** Where a request goes: its resource route's action, or the local apiserver. */
export type RequestDestination = { kind: 'local' } | ResourceRouteAction;

/** The request rules, by the names docs/request-rules.md gives them. */
export type RuleName =
  | 'proxied-once'
  | 'shared-state-local'
  | 'served-locally'
  | 'drained-to-peers'
  | 'doubt-stays-local'
  | 'reroute-to-peers'
  | 'unavailable-503'
  | 'nobody-serves'
  | 'peer-only-document'
  | 'merged-document'
  | 'local-down-fallback'
  | 'not-a-resource';

/** The planner's decision for one request: where, and by which rule. */
export interface Decision {
  destination: RequestDestination;
  rule: RuleName;
}

/**
 * A resource (or one subresource of it) that is not routed to the local
 * apiserver. A subresource route exists only where its action differs from
 * its resource's, and takes precedence over it.
 */
export interface ResourceRoute {
  /** "" for the core group. */
  group: string;
  version: string;
  resource: string;
  subresource?: string;
  action: ResourceRouteAction;
}

/**
 * A discovery document the local apiserver cannot answer because it serves
 * nothing there: `/apis/{g}/{v}` (`/api/{v}`) of a group-version served only
 * by peers, and `/apis/{g}` of a group none of whose versions is local. It
 * goes to a peer that serves it (which authenticates the caller itself), or
 * answers 503 while those peers are unreachable. Partly local groups and
 * group-versions stay local.
 */
export interface GroupDocumentRoute {
  /** "" for the core group (which has no group document, only `/api/{v}`). */
  group: string;
  /** Absent for the group document `/apis/{group}`. */
  version?: string;
  action: ResourceRouteAction;
}

export interface SidecarPlan {
  /** xDS node id of the sidecar: the local apiserver's endpoint name. */
  node: string;
  local: PlannedApiserver;
  /**
   * Every other declared apiserver ever seen (a lease, an answer, a served
   * set), sorted by name, whether or not a route uses it: each gets a stable
   * cluster. One never seen can be in no route and is left out.
   */
  peers: PlannedApiserver[];
  /** Sorted by group, version, resource, then subresource (whole resource first). */
  routes: ResourceRoute[];
  /** Sorted by group, then version (the group document first). */
  groupDocuments: GroupDocumentRoute[];
  /**
   * While the local apiserver is unavailable (down, restarting): the peers
   * that answer what it would have answered (discovery, /version, /openapi,
   * the honest 404 of a resource nobody serves). Absent while it is
   * available. Its own health endpoints stay with it whatever this says.
   */
  fallback?: RerouteToPeers;
}

/** The apiserver's own health endpoints (`/healthz`, `/livez`, `/readyz` and their checks): never answered by a peer. */
export const HEALTH_PATH_PREFIXES: readonly string[] = ['/healthz', '/livez', '/readyz'];
