// Legacy discovery (model/legacyDiscovery.ts) from the aggregated peer part,
// and the merge rule (peerPart.ts) on legacy documents as objects. The
// entries a peer adds are derived from its aggregated entries the way
// client-go derives its legacy view of an aggregated document (a stale
// version, and a resource or subresource without a response kind, give
// none), so a legacy and an aggregated client of one sidecar see the same
// resources. Pure.
import type { APIGroupDiscovery, APIResourceDiscovery, APISubresourceDiscovery, APIVersionDiscovery } from '../model/discovery.js';
import type { APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery, LegacyDocument } from '../model/legacyDiscovery.js';
import type { AggregatedPeerPart } from './peerPart.js';

type Part = Pick<AggregatedPeerPart, 'groups' | 'localBuiltIn'>;

/** "v1" for the core group, else "group/version". */
export function groupVersionString(group: string, version: string): string {
  return group === '' ? version : `${group}/${version}`;
}

/** A version's entry in APIGroup and APIGroupList; none for a stale version (client-go leaves it out). */
export function legacyVersionOf(group: string, version: APIVersionDiscovery): GroupVersionForDiscovery | undefined {
  if (version.freshness === 'Stale') return undefined;
  return { groupVersion: groupVersionString(group, version.version), version: version.version };
}

/** A named group's APIGroup: its versions that are not stale, the first preferred; none when no version is left. */
export function legacyGroupOf(group: APIGroupDiscovery): APIGroup | undefined {
  const versions = group.versions.flatMap((v) => legacyVersionOf(group.metadata.name, v) ?? []);
  const [preferredVersion] = versions;
  if (preferredVersion === undefined) return undefined;
  return { name: group.metadata.name, versions, preferredVersion };
}

/** A resource's APIResource; none without a response kind. */
export function legacyResourceOf(resource: APIResourceDiscovery): APIResource | undefined {
  const kind = resource.responseKind;
  if (kind === undefined || (kind.group === '' && kind.version === '' && kind.kind === '')) return undefined;
  return { ...legacyParentOf(resource), group: kind.group, version: kind.version, kind: kind.kind, verbs: resource.verbs, ...listFields(resource) };
}

/** A subresource's APIResource, named "resource/subresource"; none without a response kind. */
export function legacySubresourceOf(resource: APIResourceDiscovery, subresource: APISubresourceDiscovery): APIResource | undefined {
  const kind = subresource.responseKind;
  if (kind === undefined || (kind.group === '' && kind.version === '' && kind.kind === '')) return undefined;
  const parent = legacyParentOf(resource);
  return { ...parent, name: `${parent.name}/${subresource.subresource}`, group: kind.group, version: kind.version, kind: kind.kind, verbs: subresource.verbs };
}

/** A version's APIResourceList entries: each resource, then its subresources; none for a stale version. */
export function legacyResourcesOf(version: APIVersionDiscovery): APIResource[] {
  if (version.freshness === 'Stale') return [];
  return version.resources.flatMap((r) =>
    [legacyResourceOf(r), ...(r.subresources ?? []).map((s) => legacySubresourceOf(r, s))].filter((e): e is APIResource => e !== undefined),
  );
}

function legacyParentOf(resource: APIResourceDiscovery): Pick<APIResource, 'name' | 'singularName' | 'namespaced'> {
  return { name: resource.resource, singularName: resource.singularResource ?? '', namespaced: resource.scope === 'Namespaced' };
}

function listFields(resource: APIResourceDiscovery): Pick<APIResource, 'shortNames' | 'categories'> {
  const out: Pick<APIResource, 'shortNames' | 'categories'> = {};
  if (resource.shortNames !== undefined && resource.shortNames.length > 0) out.shortNames = resource.shortNames;
  if (resource.categories !== undefined && resource.categories.length > 0) out.categories = resource.categories;
  return out;
}

/** `/api`: the local versions as listed, then the part's core versions the local lacks. */
export function mergeVersions(local: APIVersions, part: Part): APIVersions {
  const core = part.groups.find((g) => g.metadata.name === '');
  const listed = new Set(local.versions);
  const more = (core?.versions ?? []).flatMap((v) => (legacyVersionOf('', v) === undefined || listed.has(v.version) ? [] : [v.version]));
  return more.length === 0 ? local : { ...local, versions: [...local.versions, ...more] };
}

/**
 * A named group legacy `/apis` and `/apis/{g}` can gain: the peer part's
 * group and the local built-in versions it lacks, in the set's node order
 * (xds/documentSet.ts): the peer part's groups first, each its versions then
 * the local built-in ones it lacks, then the built-in groups it lacks.
 */
export interface LegacyGroupAddition {
  name: string;
  /** The peer part's group of that name (its nodes carry aggregated fragments too). */
  peer?: APIGroupDiscovery;
  /** Local built-in versions the peer group lacks: nodes with legacy fragments only, after the peer's. */
  builtInOnly: string[];
  /** The versions it adds, in node order: the peer's (not stale, unless built in), then builtInOnly. */
  versions: GroupVersionForDiscovery[];
  /** Its APIGroup: those versions, preferring the first built-in one (the routes send the group there), else the first; none without versions. */
  group?: APIGroup;
}

export function legacyGroupAdditions(part: Part): LegacyGroupAddition[] {
  const builtIn = new Map((part.localBuiltIn ?? []).map((g) => [g.group, g.versions]));
  const additions: LegacyGroupAddition[] = [];
  for (const peer of part.groups) {
    const name = peer.metadata.name;
    if (name === '') continue;
    const local = builtIn.get(name) ?? [];
    builtIn.delete(name);
    const peerVersions = peer.versions.flatMap((v) => (v.freshness === 'Stale' && !local.includes(v.version) ? [] : [v.version]));
    const builtInOnly = local.filter((v) => !peer.versions.some((p) => p.version === v));
    additions.push(addition(name, [...peerVersions, ...builtInOnly], local, peer, builtInOnly));
  }
  for (const [name, versions] of builtIn) additions.push(addition(name, versions, versions, undefined, versions));
  return additions;
}

function addition(name: string, order: string[], builtIn: string[], peer: APIGroupDiscovery | undefined, builtInOnly: string[]): LegacyGroupAddition {
  const versions = order.map((version) => ({ groupVersion: groupVersionString(name, version), version }));
  const preferred = versions.find((v) => builtIn.includes(v.version)) ?? versions[0];
  return {
    name,
    ...(peer === undefined ? {} : { peer }),
    builtInOnly,
    versions,
    ...(preferred === undefined ? {} : { group: { name, versions, preferredVersion: preferred } }),
  };
}

/** `/apis`: the local groups as listed (each with the versions it lacks), then the groups it lacks (legacyGroupAdditions). */
export function mergeGroupList(local: APIGroupList, part: Part): APIGroupList {
  const additions = legacyGroupAdditions(part);
  if (additions.length === 0) return local;
  const seen = new Set<string>();
  let changed = false;
  const groups = local.groups.map((group) => {
    if (seen.has(group.name)) return group;
    seen.add(group.name);
    const merged = mergeGroupWith(group, additions);
    changed ||= merged !== group;
    return merged;
  });
  for (const addition of additions) {
    if (seen.has(addition.name) || addition.group === undefined) continue;
    groups.push(addition.group);
    changed = true;
  }
  return changed ? { ...local, groups } : local;
}

/** `/apis/{g}`: the local group as listed, its preferred version untouched, then the versions it lacks (legacyGroupAdditions). */
export function mergeGroup(local: APIGroup, part: Part): APIGroup {
  return mergeGroupWith(local, legacyGroupAdditions(part));
}

function mergeGroupWith(local: APIGroup, additions: readonly LegacyGroupAddition[]): APIGroup {
  const addition = local.name === '' ? undefined : additions.find((a) => a.name === local.name);
  if (addition === undefined) return local;
  const listed = new Set(local.versions.map((v) => v.version));
  const more = addition.versions.filter((v) => !listed.has(v.version));
  return more.length === 0 ? local : { ...local, versions: [...local.versions, ...more] };
}

/**
 * `/api/{v}`, `/apis/{g}/{v}`: the local entries as listed, then the part's
 * entries of that group-version whose name the local lacks (each resource
 * followed by its subresources, named "resource/subresource").
 */
export function mergeResourceList(local: APIResourceList, part: Part): APIResourceList {
  const { group, version } = splitGroupVersion(local.groupVersion);
  const peer = part.groups.find((g) => g.metadata.name === group)?.versions.find((v) => v.version === version);
  if (peer === undefined) return local;
  const listed = new Set(local.resources.map((r) => r.name));
  const more = legacyResourcesOf(peer).filter((r) => !listed.has(r.name));
  return more.length === 0 ? local : { ...local, resources: [...local.resources, ...more] };
}

function splitGroupVersion(groupVersion: string): { group: string; version: string } {
  const slash = groupVersion.indexOf('/');
  return slash < 0 ? { group: '', version: groupVersion } : { group: groupVersion.slice(0, slash), version: groupVersion.slice(slash + 1) };
}

/** Which legacy document a request path (without its query) names, if any; one trailing slash allowed. */
export function legacyDocumentOfPath(path: string): LegacyDocument | undefined {
  const segments = path.replace(/\/$/, '').split('/').slice(1);
  if (segments.some((s) => s === '')) return undefined;
  const [root, first, second, ...rest] = segments;
  if (rest.length > 0) return undefined;
  if (root === 'api') {
    if (first === undefined) return { kind: 'versions' };
    return second === undefined ? { kind: 'resource-list', group: '', version: first } : undefined;
  }
  if (root !== 'apis') return undefined;
  if (first === undefined) return { kind: 'group-list' };
  return second === undefined ? { kind: 'group', group: first } : { kind: 'resource-list', group: first, version: second };
}
