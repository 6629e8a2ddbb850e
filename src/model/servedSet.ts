// The served set of one apiserver: the group/version/resources (with verbs and
// subresources) of its discovery that mvproxy routes on, sorted so that equal
// discovery always gives an equal array.
import type { ServedResource } from './cluster.js';
import type { ApiserverDiscovery } from './discovery.js';
import { routableDiscovery } from './routableDiscovery.js';
import { compareStrings } from '../util/order.js';

/**
 * The served set of one apiserver: every group/version/resource of its `/api`
 * and `/apis` documents that mvproxy routes on (routableDiscovery), core group
 * as "". Sorted by group, version, resource (code-unit order) with sorted,
 * de-duplicated verbs and subresources, so equal discovery always gives an
 * equal array.
 */
export function servedSetFromDiscovery(d: ApiserverDiscovery): ServedResource[] {
  const served: ServedResource[] = [];
  for (const [list, document] of [
    [d.core, '/api'],
    [d.groups, '/apis'],
  ] as const) {
    for (const group of routableDiscovery(list, document).list.items) {
      for (const version of group.versions) {
        for (const r of version.resources) {
          served.push({
            group: group.metadata.name,
            version: version.version,
            resource: r.resource,
            namespaced: r.scope === 'Namespaced',
            verbs: sortedUnique(r.verbs),
            subresources: sortedUnique((r.subresources ?? []).map((s) => s.subresource)),
          });
        }
      }
    }
  }
  return served.sort(compareServedResources);
}

export function compareServedResources(a: ServedResource, b: ServedResource): number {
  return compareStrings(a.group, b.group) || compareStrings(a.version, b.version) || compareStrings(a.resource, b.resource);
}

function sortedUnique(values: string[]): string[] {
  return [...new Set(values)].sort(compareStrings);
}
