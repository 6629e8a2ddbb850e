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
  return { ...local, items: mergeLevel(local.items, part.groups, (g) => g.metadata.name, withGroup) };
}

/**
 * One level of the rule: the local entries in their order, the first of each
 * name merged with the peer entry of that name (`withPeer`), then the peer
 * entries whose name the local lacks, in the part's order. The local array
 * itself when nothing changed.
 */
function mergeLevel<T>(local: T[], peer: readonly T[], nameOf: (entry: T) => string, withPeer: (local: T, peer: T) => T): T[] {
  const added = new Map(peer.map((entry) => [nameOf(entry), entry]));
  const seen = new Set<string>();
  let changed = false;
  const merged = local.map((entry) => {
    const name = nameOf(entry);
    if (seen.has(name)) return entry;
    seen.add(name);
    const more = added.get(name);
    if (more === undefined) return entry;
    const result = withPeer(entry, more);
    changed ||= result !== entry;
    return result;
  });
  for (const entry of peer) {
    if (seen.has(nameOf(entry))) continue;
    merged.push(entry);
    changed = true;
  }
  return changed ? merged : local;
}

/** The local group with the peer group's versions and resources it lacks. */
function withGroup(local: APIGroupDiscovery, peer: APIGroupDiscovery): APIGroupDiscovery {
  const versions = mergeLevel(local.versions, peer.versions, (v) => v.version, withVersion);
  return versions === local.versions ? local : { ...local, versions };
}

/** The local version with the peer version's resources it lacks, and of those it lists, the subresources they lack. */
function withVersion(local: APIVersionDiscovery, peer: APIVersionDiscovery): APIVersionDiscovery {
  const resources = mergeLevel(local.resources, peer.resources, (r) => r.resource, withResource);
  return resources === local.resources ? local : { ...local, resources };
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
