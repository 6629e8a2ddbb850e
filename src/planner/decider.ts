// The request rules (docs/request-rules.md) that depend on what the
// apiservers serve, for one sidecar: SidecarDecider rates the peers (by the
// standings it is given) and decides, resource by resource and document by
// document, where each goes and by which rule.
import type { ApiserverObservation, ClusterModel, ServedResource } from '../model/cluster.js';
import { activeLocalOnlyGroupVersions, groupVersionKey, leftByLease, standingIn, type PeerStanding } from '../model/liveness.js';
import type { Decision, GroupDocumentRoute, RerouteToPeers, ResourceId, ResourceRouteAction } from './plan.js';
import type { PlannerOptions } from './options.js';
import { LocalDoubts } from './doubts.js';
import { resourceKey, servedIndexOf, type ServedIndex } from './servedIndex.js';
import { compareStrings } from '../util/order.js';

interface RatedPeer {
  name: string;
  standing: Exclude<PeerStanding, 'gone'>;
  draining: boolean;
  servedSet: readonly ServedResource[];
  served: ServedIndex;
}

/**
 * The request rules (docs/request-rules.md) that depend on what the
 * apiservers serve, for one sidecar, decided in one place: the planner makes
 * the plan's entries of its decisions, and `explain` reads them back from the
 * plan (destination.ts), never from here.
 */
export class SidecarDecider {
  readonly local: ApiserverObservation;
  /** The local apiserver judged like a peer: while it is down or restarting its sidecar routes around it. */
  readonly localAvailable: boolean;
  readonly localDraining: boolean;
  /** What mvproxy doubts about what the local apiserver serves (it stays local while available). */
  readonly doubts: LocalDoubts;
  /** Peers whose lease is long gone contribute nothing; the rest, sorted by name. */
  private readonly ratedPeers: RatedPeer[] = [];
  /**
   * The rated peers that serve anything: the only ones a route can name (an
   * empty served set serves nothing; such a peer counts for fallback() only).
   * With many declared apiservers not yet observed, this keeps every decision
   * proportional to the peers that serve, not to all of them.
   */
  private readonly servingPeers: RatedPeer[];
  /**
   * Every apiserver unavailable at once while the local one's lease stands:
   * more likely the control plane's own slowness (its polls timing out) than
   * all of them gone, and nobody else could answer anyway. What the local
   * apiserver serves then stays with it, as without mvproxy.
   */
  private readonly localTrustedAlone: boolean;
  private readonly localServed: ServedIndex;
  private readonly localOnly: ReadonlySet<string>;
  private readonly localSubresources: Map<string, string[]>;

  constructor(
    local: ApiserverObservation,
    model: ClusterModel,
    opts: Required<PlannerOptions>,
    localOnly: ReadonlySet<string> = activeLocalOnlyGroupVersions(model, model.now),
  ) {
    this.local = local;
    this.localOnly = localOnly;
    this.localServed = servedIndexOf(local.servedSet);
    this.localAvailable = standingIn(opts.standings, local.endpoint.name) === 'available';
    this.localDraining = opts.draining.has(local.endpoint.name);
    this.doubts = new LocalDoubts(local);
    this.localSubresources = new Map(local.servedSet.map((s) => [resourceKey(s.group, s.version, s.resource), s.subresources]));
    const others = model.apiservers.filter((a) => a !== local).sort((a, b) => compareStrings(a.endpoint.name, b.endpoint.name));
    for (const peer of others) {
      const standing = standingIn(opts.standings, peer.endpoint.name);
      if (standing === 'gone') continue;
      const name = peer.endpoint.name;
      this.ratedPeers.push({ name, standing, draining: opts.draining.has(name), servedSet: peer.servedSet, served: servedIndexOf(peer.servedSet) });
    }
    this.servingPeers = this.ratedPeers.filter((p) => p.servedSet.length > 0);
    this.localTrustedAlone = !this.localAvailable && !leftByLease(local) && this.ratedPeers.every((p) => p.standing !== 'available');
  }

  /** Every (sub)resource served anywhere that counts and is not local-only: what may need a route. */
  candidates(): ResourceId[] {
    const candidates = new Map<string, ResourceId>();
    for (const served of [this.local.servedSet, ...this.servingPeers.map((p) => p.servedSet)].flat()) {
      if (this.isLocalOnly(served)) continue;
      const { group, version, resource } = served;
      candidates.set(resourceKey(group, version, resource), { group, version, resource });
      for (const subresource of served.subresources) {
        candidates.set(resourceKey(group, version, resource, subresource), { group, version, resource, subresource });
      }
    }
    return [...candidates.values()];
  }

  /** Where a request for this resource (or subresource) goes, and by which rule. */
  resource(id: ResourceId): Decision {
    const local: Decision['destination'] = { kind: 'local' };
    if (this.isLocalOnly(id)) return { destination: local, rule: 'shared-state-local' };
    const key = resourceKey(id.group, id.version, id.resource, id.subresource);
    const servedLocally = this.localServed.serves(key);
    if (servedLocally && this.localAvailable) {
      const successors = this.localDraining ? this.successorsOf(id) : [];
      if (successors.length > 0) return { destination: { kind: 'peers', peers: successors }, rule: 'drained-to-peers' };
      return { destination: local, rule: 'served-locally' };
    }
    // Not known to be served locally, but maybe it is: the local apiserver
    // decides, as without mvproxy (even while drained: a drain never moves
    // what it may serve on a guess).
    if (this.localAvailable && this.doubts.covers(id)) return { destination: local, rule: 'doubt-stays-local' };
    const servingPeers = this.servingPeers.filter((p) => p.served.serves(key));
    const available = preferUndrained(servingPeers.filter((p) => p.standing === 'available'));
    if (available.length > 0) return { destination: { kind: 'peers', peers: available.map((p) => p.name) }, rule: 'reroute-to-peers' };
    if (servedLocally && this.localTrustedAlone) return { destination: local, rule: 'served-locally' };
    const servedBy = [...(servedLocally ? [this.local.endpoint.name] : []), ...servingPeers.map((p) => p.name)].sort(compareStrings);
    if (servedBy.length > 0 && (servingPeers.length > 0 || !this.localAvailable))
      return { destination: { kind: 'unavailable', servedBy }, rule: 'unavailable-503' };
    // The local apiserver gives the honest 404 (or, while it is down, a peer answers for it).
    return { destination: local, rule: 'nobody-serves' };
  }

  /**
   * Discovery documents served only by peers: group-versions of which the
   * local apiserver serves nothing, and groups of which it serves no version
   * (never local-only group-versions), nor group-versions (groups) where what
   * the available local apiserver serves is in doubt. Sent to the available
   * peers that serve anything there, else 503 while some unavailable peer
   * does.
   */
  groupDocuments(): GroupDocumentRoute[] {
    const { local, servingPeers: ratedPeers, localOnly } = this;
    const doubts = this.localAvailable ? this.doubts : undefined;
    const localGroups = new Set(local.servedSet.map((s) => s.group));
    const localGroupVersions = new Set(local.servedSet.map((s) => groupVersionKey(s.group, s.version)));
    const peerOnly = new Map<string, { group: string; version: string }>();
    for (const peer of ratedPeers) {
      for (const { group, version } of peer.servedSet) {
        const key = groupVersionKey(group, version);
        if (!localOnly.has(key) && !localGroupVersions.has(key) && !doubts?.covers({ group, version })) peerOnly.set(key, { group, version });
      }
    }
    const actionFor = (serves: (s: ServedResource) => boolean): ResourceRouteAction => {
      const serving = ratedPeers.filter((p) => p.servedSet.some(serves));
      const available = preferUndrained(serving.filter((p) => p.standing === 'available')).map((p) => p.name);
      if (available.length > 0) return { kind: 'peers', peers: available };
      return { kind: 'unavailable', servedBy: serving.map((p) => p.name) };
    };
    const documents: GroupDocumentRoute[] = [];
    const peerOnlyGroups = new Set<string>();
    for (const { group, version } of peerOnly.values()) {
      documents.push({ group, version, action: actionFor((s) => s.group === group && s.version === version) });
      // The core group has no group document: `/api` is the list of its versions.
      if (group !== '' && !localGroups.has(group) && !doubts?.covers({ group })) peerOnlyGroups.add(group);
    }
    for (const group of peerOnlyGroups) {
      documents.push({ group, action: actionFor((s) => s.group === group && !localOnly.has(groupVersionKey(s.group, s.version))) });
    }
    return documents.sort((a, b) => compareStrings(a.group, b.group) || compareStrings(a.version ?? '', b.version ?? ''));
  }

  /** While the local apiserver is unavailable: the peers that answer what it would have answered. */
  fallback(): RerouteToPeers | undefined {
    if (this.localAvailable) return undefined;
    const peers = preferUndrained(this.ratedPeers.filter((p) => p.standing === 'available'));
    return peers.length > 0 ? { kind: 'peers', peers: peers.map((p) => p.name) } : undefined;
  }

  /**
   * Where a draining apiserver hands a resource over: available peers, not
   * draining themselves, that serve the resource and every subresource of it
   * the local one serves, so a resource and its subresources move together
   * (a subresource left behind would need a route back to the local apiserver).
   */
  private successorsOf(id: ResourceId): string[] {
    const resource = resourceKey(id.group, id.version, id.resource);
    const subresources = this.localSubresources.get(resource) ?? [];
    return this.servingPeers
      .filter((p) => p.standing === 'available' && !p.draining && p.served.serves(resource))
      .filter((p) => subresources.every((sub) => p.served.serves(resourceKey(id.group, id.version, id.resource, sub))))
      .map((p) => p.name);
  }

  private isLocalOnly(id: { group: string; version: string }): boolean {
    return this.localOnly.has(groupVersionKey(id.group, id.version));
  }
}

/** The peers not being drained if there are any, else all of them: a drain never causes a 503. */
function preferUndrained(peers: RatedPeer[]): RatedPeer[] {
  const undrained = peers.filter((p) => !p.draining);
  return undrained.length > 0 ? undrained : peers;
}
