// Who counts as alive: one rule for routing (planner), discovery (merge) and
// the event journal, computed once per reconcile (apiserverStandings). Shared so
// a resource that routes to a 503 is still listed in discovery: a resource
// that vanishes from discovery looks deleted to the garbage collector and the
// namespace controller, which is exactly what unavailable-503 forbids.
import type { ApiserverObservation, ClusterModel, LocalOnlyGroupVersion } from './cluster.js';

/** How a peer counts right now: serving, known but not reachable (503), or gone. */
export type PeerStanding = 'available' | 'unavailable' | 'gone';

export function peerStanding(peer: ApiserverObservation, now: number, departedGraceMs: number): PeerStanding {
  if (leftByLease(peer)) {
    // Back: it stopped serving its discovery after its lease went and serves
    // it again, so what it serves is known afresh. A restarted kube-apiserver
    // writes its new lease a second or two after that; until then it is judged
    // as one whose lease is not seen yet (readiness still moves traffic off it
    // while it starts: planner.ts).
    if (peer.reachable && peer.discoveryCurrentSince !== undefined && peer.discoveryCurrentSince > peer.leaseGoneAt) return 'available';
    // Left (clean shutdown or expiry): its resources must not turn into 404s
    // while it restarts, but nothing is sent to it either.
    return now < departedGraceEndsAt(peer.leaseGoneAt, departedGraceMs) ? 'unavailable' : 'gone';
  }
  // A lease not seen yet (startup ordering) is judged by reachability alone.
  return peer.reachable ? 'available' : 'unavailable';
}

/**
 * Whether the apiserver said it left: its identity lease was seen and is
 * gone (deleted at a clean shutdown, or expired). Unreachability alone is
 * the control plane's observation, which its own slowness can fake.
 */
export function leftByLease<T extends Pick<ApiserverObservation, 'lease' | 'leaseGoneAt'>>(peer: T): peer is T & { leaseGoneAt: number } {
  return peer.lease === undefined && peer.leaseGoneAt !== undefined;
}

/** Every apiserver's standing in one model, by endpoint name. */
export type Standings = ReadonlyMap<string, PeerStanding>;

/**
 * The standing of every apiserver of a model, computed once per reconcile
 * (serve/reconcile.ts) and handed to the planner, the merge, the event
 * journal and the status (admin API, status page), so that routing, merging
 * and what operators are shown cannot disagree about one apiserver.
 */
export function apiserverStandings(model: Pick<ClusterModel, 'apiservers' | 'now'>, departedGraceMs: number): Standings {
  return new Map(model.apiservers.map((a) => [a.endpoint.name, peerStanding(a, model.now, departedGraceMs)]));
}

/** A standing from `standings`; an apiserver they do not know counts as gone. */
export function standingIn(standings: Standings, name: string): PeerStanding {
  return standings.get(name) ?? 'gone';
}

/**
 * The departed grace, the one place it is decided: an apiserver whose lease
 * went at `leaseGoneAt` counts as unavailable (503, still in discovery) until
 * this moment, and as gone (ignored) from it on. The cluster observer only
 * wakes the planner then; it drops nothing itself.
 */
export function departedGraceEndsAt(leaseGoneAt: number, departedGraceMs: number): number {
  return leaseGoneAt + departedGraceMs;
}

/** Key of a group-version in the sets below: one per pair (the group's length keeps it so), cheap to make (planners make it per resource, per sidecar). */
export function groupVersionKey(group: string, version: string): string {
  return `${group.length}:${group}/${version}`;
}

/**
 * shared-state-local: CRD and APIService group-versions, including deleted ones still in
 * their grace period, as groupVersionKey()s.
 */
export function activeLocalOnlyGroupVersions(model: Pick<ClusterModel, 'localOnly'>, now: number): Set<string> {
  return new Set(activeLocalOnly(model, now).map((gv) => groupVersionKey(gv.group, gv.version)));
}

/** shared-state-local: the CRD and APIService group-versions that count at `now` (deleted ones within their grace included). */
export function activeLocalOnly(model: Pick<ClusterModel, 'localOnly'>, now: number): LocalOnlyGroupVersion[] {
  return model.localOnly.filter((gv) => gv.excludedUntil === undefined || gv.excludedUntil > now);
}
