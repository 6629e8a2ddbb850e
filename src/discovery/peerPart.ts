// What only peers add to a merged document: the part of `/api`, `/apis` and
// the OpenAPI v3 index the control plane pushes to a sidecar. The sidecar's
// document filter merges it into the local apiserver's document as that
// document is at the request (docs/never-worse.md, "Merged documents"), so the
// answer is never staler than the apiserver behind the sidecar.
//
// The merge rule, one rule wherever it runs (the filter, in bytes; the
// control plane, in objects, for what it shows and answers over ext_proc):
// - the local document as the local apiserver serves it, every entry as it
//   listed it, in its order;
// - then, at each level (group, version of a group, resource of a version,
//   subresource of a resource), the peer part's entries the local document
//   lacks (by name), in the peer part's order, after the local entries of
//   that level (a local resource without "subresources" gets the field);
// - the peer part holds exactly what the routes in force send to a peer or
//   answer 503 for (never a resource the plan sends to the local apiserver),
//   and never a CRD or APIService group-version (shared-state-local: from the
//   local document alone);
// - the ETag is mergedEtag(local ETag, the peer part's digest).
import { createHash } from 'node:crypto';
import type { APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery, APIVersionDiscovery } from '../model/discovery.js';
import { groupVersionKey } from '../model/liveness.js';
import type { MergedDocument } from '../model/requestInfo.js';
import { groupVersionOfIndexPath, type OpenApiV3Index } from '../model/openapi.js';
import { compareStrings } from '../util/order.js';
import { resourceOfPeers } from './peerEntries.js';

/** The peer part of aggregated discovery (`/api` or `/apis`): groups, each with only the versions and resources only peers serve. */
export interface AggregatedPeerPart {
  document: Exclude<MergedDocument, 'openapi-index'>;
  groups: APIGroupDiscovery[];
  /**
   * Legacy `/apis` and `/apis/{g}` only: the local apiserver's built-in
   * group-versions (neither CRD nor APIService ones, none stale), in its
   * order. kube-apiserver lists a group-version there only while its
   * APIService object exists in the shared storage, and an apiserver that
   * does not serve it deletes it when it starts (kube-aggregator's
   * autoregister, once per start): the apiserver alone can stop listing what
   * it serves, for good. The legacy merge adds what its answer lacks
   * (discovery/legacy.ts legacyGroupAdditions).
   */
  localBuiltIn?: LocalBuiltInGroup[];
}

/** A group the local apiserver serves built in, and its versions. */
export interface LocalBuiltInGroup {
  group: string;
  versions: string[];
}

/** The peer part of the OpenAPI v3 index: the entries of group-versions only peers serve. */
export interface OpenApiPeerPart {
  document: 'openapi-index';
  paths: OpenApiV3Index['paths'];
}

export type PeerPart = AggregatedPeerPart | OpenApiPeerPart;

/**
 * The ETag of a merged answer: a function of the local apiserver's ETag (the
 * header value as it sent it, quotes included) and the peer part's digest
 * (64 lowercase hex digits, xds/documentSet.ts), so it is the same on every
 * sidecar with the same inputs and changes when either does. The filter
 * computes the same in envoy/filters.
 */
export function mergedEtag(localEtag: string, peerDigest: string): string {
  return `"${createHash('sha256').update(`${localEtag} ${peerDigest}`, 'utf8').digest('hex')}"`;
}

/** A merge's peer parts, each present only while the local document it is merged into is known. */
export interface PeerParts {
  /** `/api` and `/apis`: while the local apiserver's discovery is known. */
  core?: AggregatedPeerPart;
  groups?: AggregatedPeerPart;
  /** The OpenAPI v3 index: while the local index is known. */
  openapi?: OpenApiPeerPart;
}

/**
 * The peer parts a sidecar's document filters get: one per document whose
 * local version is known (`merged` is a MergedDiscovery, merge.ts). Without
 * its local document a sidecar gets no part, and its filter lets the local
 * apiserver answer.
 */
export function peerParts(merged: { peer: PeerParts }): PeerPart[] {
  const { core, groups, openapi } = merged.peer;
  return [core, groups, openapi].filter((part): part is PeerPart => part !== undefined);
}

/**
 * The peer part of one aggregated document: of the peers' lists (in merge
 * order, each already routable: routableDiscovery), every resource the local
 * list lacks by name, in the group and version entries that carry it, never
 * of a local-only group-version. A group or version entry is the first
 * peer's, holding only what it carries; a resource several peers list is the
 * first peer's entry with everyone's verbs and subresources (the routes send
 * it to each peer that serves it). Of a resource the local list holds, the
 * part holds the peers' entry with only the subresources the local entry
 * lacks by name (the routes send those to the peers); none: not the
 * resource. Order: first appearance, peers in merge order. A version with no
 * resource to add is left out, and so is a group with no version.
 * `inDoubt`: what the local apiserver may serve though its document does not
 * say so in a form mvproxy routes on (the routes keep it local:
 * doubt-stays-local), never in the part; asked about a resource, and about
 * each subresource of one in the part.
 */
export function aggregatedPeerPart(
  document: AggregatedPeerPart['document'],
  local: APIGroupDiscoveryList,
  peers: readonly APIGroupDiscoveryList[],
  localOnly: ReadonlySet<string>,
  inDoubt: (group: string, version: string, resource: string, subresource?: string) => boolean = () => false,
): AggregatedPeerPart {
  const localNames = namesOf(local);
  const groups = new Map<string, PartGroup>();
  for (const peer of peers) {
    for (const group of peer.items) {
      const name = group.metadata.name;
      for (const version of group.versions) {
        if (localOnly.has(groupVersionKey(name, version.version))) continue;
        const listed = localNames.get(name)?.get(version.version);
        for (const resource of version.resources) {
          const localSubresources = listed?.get(resource.resource);
          if (localSubresources === undefined && inDoubt(name, version.version, resource.resource)) continue;
          if (localSubresources !== undefined && !(resource.subresources ?? []).some((s) => !localSubresources.has(s.subresource))) continue;
          const g = entryOf(groups, name, () => ({ entry: group, versions: new Map() }));
          const v = entryOf(g.versions, version.version, () => ({ entry: version, resources: new Map() }));
          entryOf(v.resources, resource.resource, (): PartResource => ({ local: localSubresources, entries: [] })).entries.push(resource);
        }
      }
    }
  }
  return {
    document,
    groups: [...groups.values()]
      .map(({ entry, versions }) => ({
        ...entry,
        versions: [...versions.values()]
          .map((v) => ({
            ...v.entry,
            resources: [...v.resources.values()]
              .map((r) => partResource(resourceOfPeers(r.entries), r.local, (sub) => inDoubt(name(entry), v.entry.version, r.entries[0]?.resource ?? '', sub)))
              .filter((r): r is APIResourceDiscovery => r !== undefined),
          }))
          .filter((v) => v.resources.length > 0),
      }))
      .filter((g) => g.versions.length > 0),
  };
}

/**
 * The local apiserver's built-in group-versions (AggregatedPeerPart
 * localBuiltIn): its named groups' versions that are neither stale nor
 * local-only (CRD and APIService group-versions, whose APIService no other
 * apiserver deletes); groups left with none are left out.
 */
export function localBuiltInGroups(local: APIGroupDiscoveryList, localOnly: ReadonlySet<string>): LocalBuiltInGroup[] {
  return local.items.flatMap((group) => {
    const versions = group.versions
      .filter((v) => v.freshness !== 'Stale' && !localOnly.has(groupVersionKey(group.metadata.name, v.version)))
      .map((v) => v.version);
    return group.metadata.name === '' || versions.length === 0 ? [] : [{ group: group.metadata.name, versions }];
  });
}

function name(group: APIGroupDiscovery): string {
  return group.metadata.name;
}

/**
 * A resource's entry in the part: the peers' entry without the subresources
 * in doubt and, when the local lists the resource (`local`: its
 * subresources), with only the subresources it lacks; undefined when a
 * resource the local lists has nothing left to add.
 */
function partResource(
  entry: APIResourceDiscovery,
  local: ReadonlySet<string> | undefined,
  inDoubt: (subresource: string) => boolean,
): APIResourceDiscovery | undefined {
  const subresources = entry.subresources?.filter((s) => !local?.has(s.subresource) && !inDoubt(s.subresource));
  if (local !== undefined && (subresources === undefined || subresources.length === 0)) return undefined;
  if (subresources === undefined || subresources.length === entry.subresources?.length) return entry;
  return { ...entry, subresources };
}

/**
 * The peer part of the OpenAPI v3 index: of the peers' indexes (in merge
 * order, each already routable), every group-version entry the local index
 * lacks, the first peer's, never of a local-only group-version; keys sorted.
 */
export function openApiPeerPart(local: OpenApiV3Index, peers: readonly OpenApiV3Index[], localOnly: ReadonlySet<string>): OpenApiPeerPart {
  const paths = new Map<string, { serverRelativeURL: string }>();
  for (const peer of peers) {
    for (const [path, entry] of Object.entries(peer.paths)) {
      const gv = groupVersionOfIndexPath(path);
      if (!gv || Object.hasOwn(local.paths, path) || paths.has(path) || localOnly.has(groupVersionKey(gv.group, gv.version))) continue;
      paths.set(path, entry);
    }
  }
  return { document: 'openapi-index', paths: Object.fromEntries([...paths].sort(([a], [b]) => compareStrings(a, b))) };
}

/** A group of the part being collected: its first peer entry, and what it carries by name (each resource: the peers' entries, and the local entry's subresources when the local lists it). */
interface PartGroup {
  entry: APIGroupDiscovery;
  versions: Map<string, { entry: APIVersionDiscovery; resources: Map<string, PartResource> }>;
}

interface PartResource {
  local: ReadonlySet<string> | undefined;
  entries: APIResourceDiscovery[];
}

/** The map's value for a key, made and put there first if missing. */
function entryOf<V>(map: Map<string, V>, key: string, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

/** Every name a list holds: group -> version -> resource -> subresources. */
function namesOf(list: APIGroupDiscoveryList): Map<string, Map<string, Map<string, Set<string>>>> {
  const names = new Map<string, Map<string, Map<string, Set<string>>>>();
  for (const group of list.items) {
    const versions = entryOf(names, group.metadata.name, () => new Map<string, Map<string, Set<string>>>());
    for (const version of group.versions) {
      const resources = entryOf(versions, version.version, () => new Map<string, Set<string>>());
      for (const resource of version.resources) {
        const subresources = entryOf(resources, resource.resource, () => new Set<string>());
        for (const s of resource.subresources ?? []) subresources.add(s.subresource);
      }
    }
  }
  return names;
}
