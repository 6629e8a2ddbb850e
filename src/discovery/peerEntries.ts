// One resource entry of the peer part made of what several peers list for
// it: the routes send a resource only peers serve to every available peer
// that serves it (and each subresource to those that serve that), so its
// entry says what all of them serve together. Pure.
import type { APIResourceDiscovery, APISubresourceDiscovery, GroupVersionKind } from '../model/discovery.js';

/**
 * The first peer's entry (peers in merge order), with the union of every
 * entry's verbs, subresources (each the first peer's, verbs and accepted
 * types unioned) and serverIds (newer apiservers list which servers serve a
 * resource). An entry only one peer lists is that very object.
 */
export function resourceOfPeers(entries: readonly APIResourceDiscovery[]): APIResourceDiscovery {
  const [first] = entries;
  if (first === undefined) throw new Error('a resource of the peer part needs an entry');
  if (entries.length === 1) return first;
  const merged: APIResourceDiscovery = { ...first, verbs: union(entries.map((r) => r.verbs)) };
  const subresourceLists = entries.map((r) => r.subresources ?? []);
  if (subresourceLists.some((list) => list.length > 0)) merged.subresources = subresourcesOfPeers(subresourceLists);
  const serverIds = entries.map((r) => fieldOf(r, 'serverIds')).filter(isStringArray);
  if (serverIds.length > 0) Object.assign(merged, { serverIds: union(serverIds) });
  return merged;
}

function subresourcesOfPeers(perPeer: readonly APISubresourceDiscovery[][]): APISubresourceDiscovery[] {
  const byName = new Map<string, APISubresourceDiscovery[]>();
  for (const subresource of perPeer.flat()) {
    const entries = byName.get(subresource.subresource);
    if (entries) entries.push(subresource);
    else byName.set(subresource.subresource, [subresource]);
  }
  return [...byName.values()].map((entries) => {
    const first = entries[0] as APISubresourceDiscovery;
    if (entries.length === 1) return first;
    const merged: APISubresourceDiscovery = { ...first, verbs: union(entries.map((s) => s.verbs)) };
    const accepted = entries.map((s) => s.acceptedTypes ?? []);
    if (accepted.some((list) => list.length > 0)) merged.acceptedTypes = unionGvks(accepted);
    return merged;
  });
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
