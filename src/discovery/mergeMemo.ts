// Merges reused across reconciles. A reconcile merges discovery for every
// sidecar, and a control plane reconciles on every lease renewal, readiness
// change or drain: most of them change no document. A merge depends only on
// what mergeInputs returns, and the discovery objects in the model are
// replaced, never mutated (sources/clusterObserver.ts), so two merges whose
// inputs are the same objects are equal: the earlier one is reused, and with
// it every rendering cached on its lists (render.ts). Pure apart from the
// object numbering, which only names objects.
import type { ClusterModel } from '../model/cluster.js';
import type { ApiserverDiscovery } from '../model/discovery.js';
import { mergeDiscovery, mergeInputs, type MergedDiscovery, type MergeOptions } from './merge.js';

const ids = new WeakMap<ApiserverDiscovery, number>();
let nextId = 1;

function idOf(discovery: ApiserverDiscovery): number {
  let id = ids.get(discovery);
  if (id === undefined) {
    id = nextId++;
    ids.set(discovery, id);
  }
  return id;
}

/** A key equal for two calls exactly when their inputs are the same: the local name, each contributor's name and discovery object, the local-only group-versions. */
export function mergeKey(localName: string, model: ClusterModel, now: number, options: MergeOptions = {}): string {
  const { local, contributors, localOnly } = mergeInputs(localName, model, now, options);
  const servers = contributors.map((a) => `${a === local ? '*' : ''}${a.endpoint.name}#${a.discovery ? idOf(a.discovery) : 0}`);
  return JSON.stringify([localName, servers, [...localOnly].sort()]);
}

/**
 * mergeDiscovery, taken from `current` or `previous` (the merges of the last
 * reconcile) when its key is there; what is merged or reused is put in
 * `current`, so the memo holds one reconcile's merges, never more.
 */
export function memoizedMerge(
  localName: string,
  model: ClusterModel,
  now: number,
  options: MergeOptions,
  current: Map<string, MergedDiscovery>,
  previous: ReadonlyMap<string, MergedDiscovery> | undefined,
): MergedDiscovery {
  const key = mergeKey(localName, model, now, options);
  const merged = current.get(key) ?? previous?.get(key) ?? mergeDiscovery(localName, model, now, options);
  current.set(key, merged);
  return merged;
}
