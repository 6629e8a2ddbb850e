// What the control plane doubts about what the local apiserver serves
// (the doubt-stays-local rule's input).
import type { ApiserverObservation } from '../model/cluster.js';
import type { DroppedDiscoveryEntry } from '../model/discovery.js';
import type { DoubtScope } from './plan.js';
import { compareStrings } from '../util/order.js';

/**
 * What the control plane does not know, or doubts, about what the local
 * apiserver serves. Everything while its served set is empty: a kube-apiserver
 * always serves something, so an empty set means no usable discovery was read
 * (none yet, only unreadable documents, or nothing routable in them). Else
 * the entries of its discovery that were dropped (malformed, or names too
 * long to route; src/model/routableDiscovery.ts): a resource it lists, but not in a
 * form mvproxy routes on. While the local apiserver is available, a request
 * in doubt goes to it, as it would without mvproxy: never rerouted on a
 * guess, never a 503 (doubt-stays-local; docs/never-worse.md).
 */
export class LocalDoubts {
  readonly everything: boolean;
  /** Dropped entries by group name. */
  private readonly dropped = new Map<string, DroppedDiscoveryEntry[]>();

  constructor(local: Pick<ApiserverObservation, 'servedSet' | 'discovery'>) {
    this.everything = local.servedSet.length === 0;
    for (const d of local.discovery?.dropped ?? []) {
      // An entry with no readable group name cannot be told from any other, and
      // a named group in /api or a group "" in /apis names nothing a request can
      // reach: neither puts anything in doubt.
      if (d.group === undefined || (d.document === '/api') !== (d.group === '')) continue;
      const entries = this.dropped.get(d.group) ?? [];
      entries.push(d);
      this.dropped.set(d.group, entries);
    }
  }

  /** Whether what the local apiserver serves of this resource (or subresource, or, without a resource, group-version or group) is in doubt. */
  covers(id: DoubtedId): boolean {
    return this.everything || this.covering(id).length > 0;
  }

  /** The dropped entries that put this resource (subresource, group-version or group) in doubt, in discovery order. */
  covering(id: DoubtedId): DroppedDiscoveryEntry[] {
    return (this.dropped.get(id.group) ?? []).filter((d) => scopeCovers(d, id));
  }

  /** What is in doubt, as the plan lists it (doubt-stays-local): everything (one scope naming nothing), or each dropped entry's scope once, sorted. */
  scopes(): DoubtScope[] {
    if (this.everything) return [{}];
    const scopes = new Map<string, DoubtScope>();
    for (const entries of this.dropped.values()) {
      for (const { group, version, resource, subresource } of entries) {
        const scope: DoubtScope = { group };
        if (version !== undefined) scope.version = version;
        if (resource !== undefined) scope.resource = resource;
        if (subresource !== undefined) scope.subresource = subresource;
        scopes.set(JSON.stringify([group, version ?? null, resource ?? null, subresource ?? null]), scope);
      }
    }
    return [...scopes.entries()].sort(([a], [b]) => compareStrings(a, b)).map(([, scope]) => scope);
  }
}

/**
 * Whether a doubt's scope covers a resource (subresource, or without a
 * resource a group-version or group): the same group, and each of version,
 * resource and subresource the scope names matches. A scope naming no group
 * covers everything.
 */
export function scopeCovers(scope: DoubtScope, id: DoubtedId): boolean {
  if (scope.group === undefined) return true;
  return (
    scope.group === id.group &&
    (scope.version === undefined || id.version === undefined || scope.version === id.version) &&
    (scope.resource === undefined || id.resource === undefined || scope.resource === id.resource) &&
    (scope.subresource === undefined || scope.subresource === id.subresource)
  );
}

/** What LocalDoubts is asked about: a resource or subresource, or without a resource a group-version or group. */
export interface DoubtedId {
  group: string;
  version?: string | undefined;
  resource?: string | undefined;
  subresource?: string | undefined;
}
