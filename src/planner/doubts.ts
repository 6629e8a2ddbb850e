// What the control plane doubts about what the local apiserver serves
// (the doubt-stays-local rule's input).
import type { ApiserverObservation } from '../model/cluster.js';
import type { DroppedDiscoveryEntry } from '../model/discovery.js';

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
    return (this.dropped.get(id.group) ?? []).filter(
      (d) =>
        (d.version === undefined || id.version === undefined || d.version === id.version) &&
        (d.resource === undefined || id.resource === undefined || d.resource === id.resource) &&
        (d.subresource === undefined || d.subresource === id.subresource),
    );
  }
}

/** What LocalDoubts is asked about: a resource or subresource, or without a resource a group-version or group. */
interface DoubtedId {
  group: string;
  version?: string | undefined;
  resource?: string | undefined;
  subresource?: string | undefined;
}
