// Peer-aggregated ("merged") discovery: what a client gets through a sidecar
// from `/api`, `/apis` (the aggregated Accept, no `profile=nopeer`) and the
// OpenAPI v3 index. Pure and deterministic: same model, same documents.
//
// The merge rule (peerPart.ts): the local apiserver's document as it lists
// it, plus the peer part, what only peers add, appended at each level. The
// sidecar's document filter applies it inside Envoy to the local document as
// served at each request; here it is applied to the local document the
// control plane last read, so what the control plane says a sidecar answers
// (ext_proc, tests, tools) is what the filter answers from that document.
// - A peer contributes only the entries mvproxy routes on (routableDiscovery:
//   no malformed name, no duplicate, nothing a route cannot match), and only
//   while it is not gone by the standings; peers in one fixed order, sorted by
//   name, so the part is the same whichever sidecar holds it.
// - CRD and APIService group-versions (shared-state-local, including deleted
//   ones within their grace period) come only from the local apiserver's own
//   document: every apiserver serves them from shared state, and a peer's
//   stale copy must not resurrect a deleted one.
// - The local apiserver's own entries are kept as it listed them: they are
//   what the client would have read without mvproxy, and requests for them go
//   to the local apiserver anyway.
import type { ApiserverObservation, ClusterModel } from '../model/cluster.js';
import type { APIGroupDiscoveryList, ApiserverDiscovery } from '../model/discovery.js';
import { activeLocalOnlyGroupVersions, groupVersionKey, standingIn, type Standings } from '../model/liveness.js';
import { groupVersionOfIndexPath, routableOpenApiIndex, type OpenApiV3Index } from '../model/openapi.js';
import { routableDiscovery } from '../model/routableDiscovery.js';
import { compareStrings } from '../util/order.js';
import { mergeAggregated, mergeOpenApi } from './mergeRule.js';
import { aggregatedPeerPart, localBuiltInGroups, openApiPeerPart, type PeerParts } from './peerPart.js';

export interface MergedDiscovery {
  /** `/api`: the local core group plus the peer part. Empty while the local apiserver's discovery is unknown. */
  core: APIGroupDiscoveryList;
  /** `/apis`: the local groups plus the peer part. Empty while the local apiserver's discovery is unknown. */
  groups: APIGroupDiscoveryList;
  /** The local apiserver's own (nopeer) documents: what it answers by itself. */
  local?: ApiserverDiscovery;
  /** Names of the apiservers whose documents were merged, in merge order. */
  sources: string[];
  /** `/openapi/v3`: the local index plus the peer part; absent while the local index is unknown. */
  openapi?: OpenApiV3Index;
  /** What only peers add to each document whose local version is known (peerPart.ts): what the sidecar's document filters get. */
  peer: PeerParts;
}

export interface MergeOptions {
  /**
   * The apiservers' standings of this reconcile (model/liveness.ts), the ones
   * the planner routes by: a peer gone (its lease gone longer than the
   * departed grace) is left out. Without them, a peer counts while the model
   * still holds its discovery (the cluster observer drops it when that grace
   * ends).
   */
  standings?: Standings;
}

/**
 * Merge the discovery of the live apiservers as seen from `localName`.
 *
 * Live: every apiserver whose last good discovery is known and that is not
 * gone, unreachable ones included. Their resources still exist; requests for
 * them get a 503 with Retry-After from the routes (unavailable-503) rather than a 404,
 * and dropping them from discovery would make the garbage collector and the
 * namespace controller treat them as deleted.
 */
export function mergeDiscovery(localName: string, model: ClusterModel, now: number, options: MergeOptions = {}): MergedDiscovery {
  const { localOnly, local, contributors } = mergeInputs(localName, model, now, options);
  const merged: MergedDiscovery = {
    core: discoveryList([]),
    groups: discoveryList([]),
    sources: contributors.map((a) => a.endpoint.name),
    peer: {},
  };
  // Without the local document there is nothing to merge into: the local apiserver answers itself.
  if (!local?.discovery) return merged;
  const own = local.discovery;
  const peers = contributors.filter((a) => a !== local);
  const peerDocuments = peers.map((peer) => routableDocuments(peer.discovery as ApiserverDiscovery));
  const inDoubt = localDoubts(local);
  const core = aggregatedPeerPart(
    'core-discovery',
    own.core,
    peerDocuments.map((d) => d.core),
    localOnly,
    inDoubt,
  );
  const groups = aggregatedPeerPart(
    'group-discovery',
    own.groups,
    peerDocuments.map((d) => d.groups),
    localOnly,
    inDoubt,
  );
  const builtIn = localBuiltInGroups(own.groups, localOnly);
  if (builtIn.length > 0) groups.localBuiltIn = builtIn;
  merged.local = own;
  merged.peer = { core, groups };
  merged.core = mergeAggregated(own.core, core);
  merged.groups = mergeAggregated(own.groups, groups);
  if (own.openapi) {
    const openapi = openApiPeerPart(own.openapi, peers.flatMap(routableOpenApiOf), localOnly);
    merged.peer.openapi = openapi;
    merged.openapi = mergeOpenApi(own.openapi, openapi);
  }
  return merged;
}

/** Everything a merge reads (mergeMemo.ts keys merges on it): the local apiserver, the contributors in merge order, the active local-only group-versions. */
export interface MergeInputs {
  local: ApiserverObservation | undefined;
  contributors: ApiserverObservation[];
  localOnly: Set<string>;
}

export function mergeInputs(localName: string, model: ClusterModel, now: number, options: MergeOptions = {}): MergeInputs {
  const local = model.apiservers.find((a) => a.endpoint.name === localName);
  const contributors = model.apiservers
    .filter((a) => a.discovery !== undefined)
    .filter((a) => a === local || options.standings === undefined || standingIn(options.standings, a.endpoint.name) !== 'gone')
    .sort((a, b) => compareStrings(a.endpoint.name, b.endpoint.name));
  return { local, contributors, localOnly: activeLocalOnlyGroupVersions(model, now) };
}

/**
 * Whether what the local apiserver serves of a resource is in doubt, as the
 * planner reads it (planner/doubts.ts): everything while nothing of its
 * discovery is routable, else what a dropped entry of its own discovery
 * names (its group, version, resource; a dropped subresource puts only that
 * subresource in doubt). The routes keep such a resource on the local
 * apiserver, so the peer part must not list it.
 */
function localDoubts(local: ApiserverObservation): (group: string, version: string, resource: string, subresource?: string) => boolean {
  if (local.servedSet.length === 0) return () => true;
  const dropped = (local.discovery?.dropped ?? []).filter((d) => d.group !== undefined && (d.document === '/api') === (d.group === ''));
  if (dropped.length === 0) return () => false;
  return (group, version, resource, subresource) =>
    dropped.some(
      (d) =>
        d.group === group &&
        (d.version === undefined || d.version === version) &&
        (d.resource === undefined || d.resource === resource) &&
        (d.subresource === undefined || d.subresource === subresource),
    );
}

/** A peer's documents without the entries mvproxy does not route on. */
function routableDocuments(d: ApiserverDiscovery): ApiserverDiscovery {
  return { core: routableDiscovery(d.core, '/api').list, groups: routableDiscovery(d.groups, '/apis').list };
}

/**
 * A peer's OpenAPI index (none while unknown) with only the group-versions of
 * its routable discovery, and of those only the entries a sidecar can take
 * from a peer (routableOpenApiIndex: valid names, a serverRelativeURL naming
 * that very document): a document of a group-version the sidecar cannot
 * route to the peer must not be offered from it.
 */
function routableOpenApiOf(peer: ApiserverObservation): OpenApiV3Index[] {
  const listed = peer.discovery?.openapi;
  if (!peer.discovery || !listed) return [];
  const index = routableOpenApiIndex(listed).index;
  const routable = new Set<string>();
  const documents = routableDocuments(peer.discovery);
  for (const group of [...documents.core.items, ...documents.groups.items]) {
    for (const version of group.versions) routable.add(groupVersionKey(group.metadata.name, version.version));
  }
  const kept = Object.entries(index.paths).filter(([path]) => {
    const gv = groupVersionOfIndexPath(path);
    return gv === undefined || routable.has(groupVersionKey(gv.group, gv.version));
  });
  return [{ paths: Object.fromEntries(kept) }];
}

function discoveryList(items: APIGroupDiscoveryList['items']): APIGroupDiscoveryList {
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}
