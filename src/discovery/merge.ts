// Peer-aggregated ("merged") discovery: what a client gets from `/api` and
// `/apis` with the aggregated Accept header and no `profile=nopeer`. Pure and
// deterministic: same model, same documents, byte for byte.
//
// Upstream (k8s.io/apiserver .../discovery/aggregated/peer_aggregated_handler.go)
// unions groups, versions and resources across the local apiserver and its
// peers, ordering each level by a consensus of every server's own order. It
// walks peers in map order and lets the last-seen resource entry win, so two
// apiservers can serve different documents. mvproxy keeps the rules and makes
// them deterministic:
// - servers are merged in one fixed order, sorted by name, whichever sidecar
//   builds the document, so every sidecar serves the same bytes and ETag (a
//   client behind a load balancer never sees the ETag flap);
// - a resource present on several servers is the first server's entry with
//   the union of everyone's verbs and subresources (a subresource present on
//   several is likewise the first entry with unioned verbs);
// - relative order is kept at every level (preferred version first), with
//   ties broken by first appearance in server order;
// - CRD and APIService group-versions (shared-state-local, including deleted ones within
//   their grace period) come only from the local apiserver's own document:
//   every apiserver serves them from shared state, and a peer's stale copy
//   must not resurrect a deleted one;
// - a peer contributes only the entries mvproxy routes on (routableDiscovery:
//   no malformed name, no duplicate, nothing a route cannot match), so the
//   merged document never lists a peer's entry that the sidecar would not
//   send to that peer. The local apiserver's own entries are kept as it
//   listed them (minus what does not even have the document's types): they
//   are what the client would have read without mvproxy, and requests for
//   them go to the local apiserver anyway.
import type { ApiserverObservation, ClusterModel } from '../model/cluster.js';
import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  ApiserverDiscovery,
  GroupVersionKind,
} from '../model/discovery.js';
import { activeLocalOnlyGroupVersions, groupVersionKey, standingIn, type Standings } from '../model/liveness.js';
import { groupVersionOfIndexPath, routableOpenApiIndex, type OpenApiV3Index } from '../model/openapi.js';
import { routableDiscovery } from '../model/routableDiscovery.js';
import { compareStrings } from '../util/order.js';
import { mergeOpenApiIndex } from './openapi.js';
import { aggregatedPeerPart, openApiPeerPart, type PeerParts } from './peerPart.js';

export interface MergedDiscovery {
  /** `/api`: the core group, merged. */
  core: APIGroupDiscoveryList;
  /** `/apis`: every named group, merged. */
  groups: APIGroupDiscoveryList;
  /** The local apiserver's own (nopeer) documents: what it answers by itself. */
  local?: ApiserverDiscovery;
  /** Names of the apiservers whose documents were merged, in merge order. */
  sources: string[];
  /** `/openapi/v3`: the local index plus what only peers list; absent while the local index is unknown. */
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

  // Peers never contribute local-only group-versions (shared-state-local). Their lists
  // still vote on the order, so the order is the same whichever apiserver is
  // local: every apiserver lists a CRD in the same place.
  const allows = contributors.map((server) =>
    server === local ? () => true : (group: string, version: string) => !localOnly.has(groupVersionKey(group, version)),
  );
  const documents = contributors.map((server) =>
    server === local ? (server.discovery as ApiserverDiscovery) : routableDocuments(server.discovery as ApiserverDiscovery),
  );

  const merged: MergedDiscovery = {
    core: discoveryList(
      mergeGroups(
        documents.map((d) => d.core.items),
        allows,
      ),
    ),
    groups: discoveryList(
      mergeGroups(
        documents.map((d) => d.groups.items),
        allows,
      ),
    ),
    sources: contributors.map((a) => a.endpoint.name),
    peer: {},
  };
  const peers = contributors.filter((a) => a !== local).map(withRoutableOpenApi);
  if (local?.discovery) {
    merged.local = local.discovery;
    const peerDocuments = peers.map((peer) => routableDocuments(peer.discovery as ApiserverDiscovery));
    merged.peer.core = aggregatedPeerPart(
      'core-discovery',
      local.discovery.core,
      peerDocuments.map((d) => d.core),
      localOnly,
    );
    merged.peer.groups = aggregatedPeerPart(
      'group-discovery',
      local.discovery.groups,
      peerDocuments.map((d) => d.groups),
      localOnly,
    );
    const localIndex = local.discovery.openapi;
    if (localIndex)
      merged.peer.openapi = openApiPeerPart(
        localIndex,
        peers.flatMap((peer) => peer.discovery?.openapi ?? []),
        localOnly,
      );
  }
  const openapi = mergeOpenApiIndex(local, peers, localOnly);
  if (openapi) merged.openapi = openapi;
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

/** A peer's documents without the entries mvproxy does not route on. */
function routableDocuments(d: ApiserverDiscovery): ApiserverDiscovery {
  return { core: routableDiscovery(d.core, '/api').list, groups: routableDiscovery(d.groups, '/apis').list };
}

/**
 * A peer whose OpenAPI index lists only the group-versions of its routable
 * discovery, and of those only the entries a sidecar can take from a peer
 * (routableOpenApiIndex: valid names, a serverRelativeURL naming that very
 * document): a document of a group-version the sidecar cannot route to the
 * peer must not be offered from it.
 */
function withRoutableOpenApi(peer: ApiserverObservation): ApiserverObservation {
  const listed = peer.discovery?.openapi;
  if (!peer.discovery || !listed) return peer;
  const index = routableOpenApiIndex(listed).index;
  const routable = new Set<string>();
  const documents = routableDocuments(peer.discovery);
  for (const group of [...documents.core.items, ...documents.groups.items]) {
    for (const version of group.versions) routable.add(groupVersionKey(group.metadata.name, version.version));
  }
  const entries = Object.entries(index.paths);
  const kept = entries.filter(([path]) => {
    const gv = groupVersionOfIndexPath(path);
    return gv === undefined || routable.has(groupVersionKey(gv.group, gv.version));
  });
  const openapi = kept.length === entries.length ? index : { paths: Object.fromEntries(kept) };
  return openapi === listed ? peer : { ...peer, discovery: { ...peer.discovery, openapi } };
}

function discoveryList(items: APIGroupDiscovery[]): APIGroupDiscoveryList {
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}

type GroupVersionFilter = (group: string, version: string) => boolean;

/**
 * Merge one list of groups per server (in server order). Every server's list
 * votes on the order; only versions its filter allows are taken from it, and
 * a group none of whose versions are allowed anywhere is left out.
 */
function mergeGroups(perServer: readonly APIGroupDiscovery[][], allows: readonly GroupVersionFilter[]): APIGroupDiscovery[] {
  const order = consensusOrder(perServer.map((groups) => groups.map((g) => g.metadata.name)));
  const out: APIGroupDiscovery[] = [];
  for (const name of order) {
    const versionOrders: string[][] = [];
    const allowedVersions: APIVersionDiscovery[][] = [];
    let first: APIGroupDiscovery | undefined;
    perServer.forEach((groups, server) => {
      for (const group of groups.filter((g) => g.metadata.name === name)) {
        versionOrders.push(group.versions.map((v) => v.version));
        const allowed = group.versions.filter((v) => (allows[server] as GroupVersionFilter)(name, v.version));
        allowedVersions.push(allowed);
        if (first === undefined && allowed.length > 0) first = group;
      }
    });
    if (first === undefined) continue;
    const versions = mergeVersions(versionOrders, allowedVersions);
    // A group that comes out exactly as one server listed it stays that object.
    const firstVersions = first.versions;
    const untouched = versions.length === firstVersions.length && versions.every((v, i) => v === firstVersions[i]);
    out.push(untouched ? first : { ...first, versions });
  }
  return out;
}

/** Versions ordered by every server's list, taken from the allowed ones. */
function mergeVersions(orders: readonly string[][], perServer: readonly APIVersionDiscovery[][]): APIVersionDiscovery[] {
  return mergeByName(
    perServer,
    (v) => v.version,
    (first, entries) => ({ ...first, resources: mergeResources(entries.map((v) => v.resources)) }),
    orders,
  );
}

function mergeResources(perServer: readonly APIResourceDiscovery[][]): APIResourceDiscovery[] {
  return mergeByName(
    perServer,
    (r) => r.resource,
    (first, entries) => {
      const merged: APIResourceDiscovery = { ...first, verbs: union(entries.map((r) => r.verbs)) };
      const subresourceLists = entries.map((r) => r.subresources ?? []);
      if (subresourceLists.some((list) => list.length > 0)) merged.subresources = mergeSubresources(subresourceLists);
      // Newer apiservers list which servers serve a resource: that is a set too.
      const serverIds = entries.map((r) => fieldOf(r, 'serverIds')).filter(isStringArray);
      if (serverIds.length > 0) Object.assign(merged, { serverIds: union(serverIds) });
      return merged;
    },
  );
}

function mergeSubresources(perServer: readonly APISubresourceDiscovery[][]): APISubresourceDiscovery[] {
  return mergeByName(
    perServer,
    (s) => s.subresource,
    (first, entries) => {
      const merged: APISubresourceDiscovery = { ...first, verbs: union(entries.map((s) => s.verbs)) };
      const accepted = entries.map((s) => s.acceptedTypes ?? []);
      if (accepted.some((list) => list.length > 0)) merged.acceptedTypes = unionGvks(accepted);
      return merged;
    },
  );
}

/**
 * The items of one list per server (in server order), by name, in the
 * consensus of `orders` (by default the lists themselves). A name listed once
 * stays that object; one listed several times is `merge`d from every entry,
 * the first server's first. Names no list holds are skipped.
 */
function mergeByName<T>(
  perServer: readonly (readonly T[])[],
  nameOf: (item: T) => string,
  merge: (first: T, entries: T[]) => T,
  orders: readonly (readonly string[])[] = perServer.map((items) => items.map(nameOf)),
): T[] {
  const out: T[] = [];
  for (const name of consensusOrder(orders)) {
    const entries = perServer.flatMap((items) => items.filter((item) => nameOf(item) === name));
    const first = entries[0];
    if (first === undefined) continue;
    out.push(entries.length === 1 ? first : merge(first, entries));
  }
  return out;
}

/**
 * One order for items that several servers list, each in its own order:
 * every server's relative order is kept where they agree (a topological
 * order of "comes before" pairs); among items free to go next, the one seen
 * first (servers in merge order) goes first. Conflicting orders (a cycle)
 * are broken the same way, so the result is always total and deterministic.
 */
export function consensusOrder(lists: readonly (readonly string[])[]): string[] {
  const firstSeen = new Map<string, number>();
  const successors = new Map<string, Set<string>>();
  for (const list of lists) {
    list.forEach((item, i) => {
      if (!firstSeen.has(item)) {
        firstSeen.set(item, firstSeen.size);
        successors.set(item, new Set());
      }
      const next = list[i + 1];
      if (next !== undefined && next !== item) (successors.get(item) as Set<string>).add(next);
    });
  }
  const inDegree = new Map<string, number>([...firstSeen.keys()].map((item) => [item, 0]));
  for (const next of successors.values()) for (const item of next) inDegree.set(item, (inDegree.get(item) ?? 0) + 1);

  const remaining = [...firstSeen.keys()]; // in first-seen order
  const out: string[] = [];
  while (remaining.length > 0) {
    let index = remaining.findIndex((item) => inDegree.get(item) === 0);
    if (index < 0) index = 0; // a cycle: servers disagree; take the earliest seen
    const [item] = remaining.splice(index, 1) as [string];
    out.push(item);
    for (const next of successors.get(item) ?? []) inDegree.set(next, (inDegree.get(next) ?? 0) - 1);
  }
  return out;
}

/** Union in order of first appearance. */
function union(lists: readonly (readonly string[])[]): string[] {
  return [...new Set(lists.flat())];
}

function unionGvks(lists: readonly GroupVersionKind[][]): GroupVersionKind[] {
  const byKey = new Map<string, GroupVersionKind>();
  for (const gvk of lists.flat()) {
    const key = JSON.stringify([gvk.group, gvk.version, gvk.kind]);
    if (!byKey.has(key)) byKey.set(key, gvk);
  }
  return [...byKey.values()];
}

/** A field the model's types do not name (kept from newer apiservers' documents). */
function fieldOf(value: object, name: string): unknown {
  return (value as Record<string, unknown>)[name];
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}
