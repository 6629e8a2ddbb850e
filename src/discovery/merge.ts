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
// - CRD and APIService group-versions (rule 6, including deleted ones within
//   their grace period) come only from the local apiserver's own document:
//   every apiserver serves them from shared state, and a peer's stale copy
//   must not resurrect a deleted one.
import type { ClusterModel } from '../model/cluster.js';
import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  ApiserverDiscovery,
  GroupVersionKind,
} from '../model/discovery.js';
import { activeLocalOnlyGroupVersions, groupVersionKey, peerStanding } from './liveness.js';

export interface MergedDiscovery {
  /** `/api`: the core group, merged. */
  core: APIGroupDiscoveryList;
  /** `/apis`: every named group, merged. */
  groups: APIGroupDiscoveryList;
  /** The local apiserver's own (nopeer) documents: what it answers by itself. */
  local?: ApiserverDiscovery;
  /** Names of the apiservers whose documents were merged, in merge order. */
  sources: string[];
}

export interface MergeOptions {
  /**
   * The planner's departed grace: a peer whose lease has been gone longer is
   * left out. Without it, a peer counts while the model still holds its
   * discovery (the cluster observer drops it when that grace ends).
   */
  departedGraceMs?: number;
}

/**
 * Merge the discovery of the live apiservers as seen from `localName`.
 *
 * Live: every apiserver whose last good discovery is known and that is not
 * gone, unreachable ones included. Their resources still exist; requests for
 * them get a 503 with Retry-After from the routes (rule 4) rather than a 404,
 * and dropping them from discovery would make the garbage collector and the
 * namespace controller treat them as deleted.
 */
export function mergeDiscovery(localName: string, model: ClusterModel, now: number, options: MergeOptions = {}): MergedDiscovery {
  const localOnly = activeLocalOnlyGroupVersions(model, now);
  const local = model.apiservers.find((a) => a.endpoint.name === localName);
  const contributors = model.apiservers
    .filter((a) => a.discovery !== undefined)
    .filter((a) => a === local || options.departedGraceMs === undefined || peerStanding(a, now, options.departedGraceMs) !== 'gone')
    .sort((a, b) => compareStrings(a.endpoint.name, b.endpoint.name));

  const coreLists: APIGroupDiscovery[][] = [];
  const groupLists: APIGroupDiscovery[][] = [];
  for (const server of contributors) {
    const discovery = server.discovery as ApiserverDiscovery;
    // Peers never contribute local-only group-versions (rule 6).
    const keep = server === local ? () => true : (group: string, version: string) => !localOnly.has(groupVersionKey(group, version));
    coreLists.push(withoutVersions(discovery.core.items, keep));
    groupLists.push(withoutVersions(discovery.groups.items, keep));
  }

  const merged: MergedDiscovery = {
    core: discoveryList(mergeGroups(coreLists)),
    groups: discoveryList(mergeGroups(groupLists)),
    sources: contributors.map((a) => a.endpoint.name),
  };
  if (local?.discovery) merged.local = local.discovery;
  return merged;
}

function discoveryList(items: APIGroupDiscovery[]): APIGroupDiscoveryList {
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}

/** The groups with only the versions `keep` accepts; a group left with no version is dropped. */
function withoutVersions(groups: readonly APIGroupDiscovery[], keep: (group: string, version: string) => boolean): APIGroupDiscovery[] {
  const out: APIGroupDiscovery[] = [];
  for (const group of groups) {
    const versions = group.versions.filter((v) => keep(group.metadata.name, v.version));
    if (versions.length === group.versions.length) out.push(group);
    else if (versions.length > 0) out.push({ ...group, versions });
  }
  return out;
}

/** Merge one list per server (in server order) into one list of groups. */
function mergeGroups(perServer: readonly APIGroupDiscovery[][]): APIGroupDiscovery[] {
  const order = consensusOrder(perServer.map((groups) => groups.map((g) => g.metadata.name)));
  return order.map((name) => {
    const entries = perServer.flatMap((groups) => groups.filter((g) => g.metadata.name === name));
    const first = entries[0] as APIGroupDiscovery;
    if (entries.length === 1) return first;
    return { ...first, versions: mergeVersions(entries.map((g) => g.versions)) };
  });
}

function mergeVersions(perServer: readonly APIVersionDiscovery[][]): APIVersionDiscovery[] {
  const order = consensusOrder(perServer.map((versions) => versions.map((v) => v.version)));
  return order.map((name) => {
    const entries = perServer.flatMap((versions) => versions.filter((v) => v.version === name));
    const first = entries[0] as APIVersionDiscovery;
    if (entries.length === 1) return first;
    return { ...first, resources: mergeResources(entries.map((v) => v.resources)) };
  });
}

function mergeResources(perServer: readonly APIResourceDiscovery[][]): APIResourceDiscovery[] {
  const order = consensusOrder(perServer.map((resources) => resources.map((r) => r.resource)));
  return order.map((name) => {
    const entries = perServer.flatMap((resources) => resources.filter((r) => r.resource === name));
    const first = entries[0] as APIResourceDiscovery;
    if (entries.length === 1) return first;
    const merged: APIResourceDiscovery = { ...first, verbs: union(entries.map((r) => r.verbs)) };
    const subresourceLists = entries.map((r) => r.subresources ?? []);
    if (subresourceLists.some((list) => list.length > 0)) merged.subresources = mergeSubresources(subresourceLists);
    // Newer apiservers list which servers serve a resource: that is a set too.
    const serverIds = entries.map((r) => fieldOf(r, 'serverIds')).filter(isStringArray);
    if (serverIds.length > 0) Object.assign(merged, { serverIds: union(serverIds) });
    return merged;
  });
}

function mergeSubresources(perServer: readonly APISubresourceDiscovery[][]): APISubresourceDiscovery[] {
  const order = consensusOrder(perServer.map((subs) => subs.map((s) => s.subresource)));
  return order.map((name) => {
    const entries = perServer.flatMap((subs) => subs.filter((s) => s.subresource === name));
    const first = entries[0] as APISubresourceDiscovery;
    if (entries.length === 1) return first;
    const merged: APISubresourceDiscovery = { ...first, verbs: union(entries.map((s) => s.verbs)) };
    const accepted = entries.map((s) => s.acceptedTypes ?? []);
    if (accepted.some((list) => list.length > 0)) merged.acceptedTypes = unionGvks(accepted);
    return merged;
  });
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

/** Code-unit order: locale-independent, identical on every machine. */
function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
