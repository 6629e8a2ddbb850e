// The merge rule (peerPart.ts states it), on documents as objects: the
// control plane applies it to say what a sidecar answers (the merged
// documents of merge.ts) and to answer over ext_proc from the local
// apiserver's current document (response.ts); the document filter applies
// the same rule in bytes inside Envoy. Pure; what the local document lists
// is never changed, only added to.
import type { APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery, APIVersionDiscovery } from '../model/discovery.js';
import type { OpenApiV3Index } from '../model/openapi.js';
import { compareStrings } from '../util/order.js';
import type { AggregatedPeerPart, OpenApiPeerPart } from './peerPart.js';

/**
 * The local list as it is, every entry untouched and in its order; then, at
 * each level (group; version of a group; resource of a version; subresource
 * of a resource), the peer
 * part's entries the local one lacks by name, in the part's order, after the
 * local entries of that level. What a local name appears under twice gets
 * the additions in its first entry. A local list the part adds nothing to
 * comes back as that very object.
 */
export function mergeAggregated(local: APIGroupDiscoveryList, part: Pick<AggregatedPeerPart, 'groups'>): APIGroupDiscoveryList {
  if (part.groups.length === 0) return local;
  const added = new Map(part.groups.map((g) => [g.metadata.name, g]));
  const seen = new Set<string>();
  const items = local.items.map((group) => {
    const name = group.metadata.name;
    if (seen.has(name)) return group;
    seen.add(name);
    const peer = added.get(name);
    return peer === undefined ? group : withGroup(group, peer);
  });
  for (const group of part.groups) if (!seen.has(group.metadata.name)) items.push(group);
  return { ...local, items };
}

/** The local group with the peer group's versions and resources it lacks. */
function withGroup(local: APIGroupDiscovery, peer: APIGroupDiscovery): APIGroupDiscovery {
  const added = new Map(peer.versions.map((v) => [v.version, v]));
  const seen = new Set<string>();
  let changed = false;
  const versions = local.versions.map((version) => {
    if (seen.has(version.version)) return version;
    seen.add(version.version);
    const more = added.get(version.version);
    if (more === undefined) return version;
    const merged = withVersion(version, more);
    changed ||= merged !== version;
    return merged;
  });
  for (const version of peer.versions) {
    if (seen.has(version.version)) continue;
    versions.push(version);
    changed = true;
  }
  return changed ? { ...local, versions } : local;
}

/** The local version with the peer version's resources it lacks, and of those it lists, the subresources they lack. */
function withVersion(local: APIVersionDiscovery, peer: APIVersionDiscovery): APIVersionDiscovery {
  const added = new Map(peer.resources.map((r) => [r.resource, r]));
  const seen = new Set<string>();
  let changed = false;
  const resources = local.resources.map((resource) => {
    if (seen.has(resource.resource)) return resource;
    seen.add(resource.resource);
    const more = added.get(resource.resource);
    if (more === undefined) return resource;
    const merged = withResource(resource, more);
    changed ||= merged !== resource;
    return merged;
  });
  for (const resource of peer.resources) {
    if (seen.has(resource.resource)) continue;
    resources.push(resource);
    changed = true;
  }
  return changed ? { ...local, resources } : local;
}

/** The local resource with the peer resource's subresources it lacks, after its own ("subresources" made when it has none). */
function withResource(local: APIResourceDiscovery, peer: APIResourceDiscovery): APIResourceDiscovery {
  const listed = new Set((local.subresources ?? []).map((s) => s.subresource));
  const more = (peer.subresources ?? []).filter((s) => !listed.has(s.subresource));
  return more.length === 0 ? local : { ...local, subresources: [...(local.subresources ?? []), ...more] };
}

/** The local index's paths plus the part's paths it lacks, keys sorted as Go writes a map. */
export function mergeOpenApi(local: OpenApiV3Index, part: Pick<OpenApiPeerPart, 'paths'>): OpenApiV3Index {
  const paths = { ...local.paths };
  for (const [path, entry] of Object.entries(part.paths)) if (!Object.hasOwn(paths, path)) paths[path] = entry;
  return { paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => compareStrings(a, b))) };
}
