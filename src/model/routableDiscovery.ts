// What mvproxy routes on of a parsed discovery document (routableDiscovery):
// entries whose names Kubernetes would not accept, duplicates, and names too
// long for Envoy's route matchers are dropped, each individually.
import type { APIGroupDiscoveryList, DroppedDiscoveryEntry } from './discovery.js';
import { describe, type DiscoveryDocument } from './discoveryDocument.js';
import {
  DNS1035_LABEL_TEXT,
  DNS1123_LABEL_TEXT,
  DNS1123_SUBDOMAIN_TEXT,
  MAX_LABEL_CHARS,
  MAX_SUBDOMAIN_CHARS,
  isDns1035Label,
  isDns1123Label,
  isDns1123Subdomain,
} from './names.js';

/**
 * Route-matcher budget. Envoy rejects an RE2 regex whose program exceeds 100
 * instructions, and a rejected route configuration is rejected whole (the
 * sidecar keeps its old routes): one long name from one apiserver must not
 * do that. The translator's matchers (src/translator/pathRegex.ts) were
 * measured with `envoy --mode validate`: a named group and its version fit
 * up to 74 characters together, a resource up to 52, a resource and its
 * subresource up to 53 together. These limits keep a margin; the longest
 * built-in names (admissionregistration.k8s.io v1alpha1,
 * validatingadmissionpolicybindings, certificatesigningrequests/approval)
 * are well inside. test/unit/model/routableDiscovery.test.ts checks the limits with Envoy.
 */
export const MAX_ROUTED_GROUP_VERSION_CHARS = 64;
export const MAX_ROUTED_RESOURCE_CHARS = 48;

export interface RoutableDiscovery {
  /** `list` itself when nothing was dropped; else a copy without the dropped entries (untouched parts shared). */
  list: APIGroupDiscoveryList;
  /** What was dropped, in document order. */
  dropped: DroppedDiscoveryEntry[];
}

const routableCache = {
  '/api': new WeakMap<APIGroupDiscoveryList, RoutableDiscovery>(),
  '/apis': new WeakMap<APIGroupDiscoveryList, RoutableDiscovery>(),
};

/**
 * The entries of a parsed document that mvproxy routes on, and those it
 * drops, each individually:
 * - a group in `/apis` whose name is not a DNS-1123 subdomain (so also one
 *   named ""), and in `/api` one with a name (the core group has none);
 * - a version that is not a DNS-1035 label (what kube-apiserver requires of
 *   CRD and APIService versions; every built-in version is one);
 * - a resource or subresource that is not a DNS-1123 label (CRD plurals are
 *   DNS-1035 labels, a subset; built-in names are lowercase words). This
 *   rejects "", "/", "..", spaces, upper case, and anything a path segment or
 *   a route regex could read differently;
 * - the second and later entries of the same name (group, version of a
 *   group, resource of a version, subresource of a resource);
 * - names longer than the route-matcher budget (kind "unroutable").
 * Memoized per document object: the merge asks again for every peer.
 */
export function routableDiscovery(list: APIGroupDiscoveryList, document: DiscoveryDocument): RoutableDiscovery {
  const cache = routableCache[document];
  const cached = cache.get(list);
  if (cached) return cached;
  const dropped: DroppedDiscoveryEntry[] = [];
  const drop = (entry: Omit<DroppedDiscoveryEntry, 'document' | 'kind'>, kind: DroppedDiscoveryEntry['kind'] = 'malformed'): undefined => {
    dropped.push({ document, ...entry, kind });
    return undefined;
  };
  const items = keptEach(
    list.items,
    (group, gi) => {
      const path = `$.items[${gi}]`;
      const name = group.metadata.name;
      const problem = document === '/api' ? (name === '' ? undefined : `the core group (/api) has no name, got ${describe(name)}`) : groupNameProblem(name);
      if (problem !== undefined) return drop({ group: name, path, reason: problem });
      const versions = keptEach(
        group.versions,
        (version, vi) => {
          const versionPath = `${path}.versions[${vi}]`;
          const ids = { group: name, version: version.version };
          const versionProblem = labelProblem(version.version, 'version', isDns1035Label, DNS1035_LABEL_TEXT);
          if (versionProblem !== undefined) return drop({ ...ids, path: versionPath, reason: versionProblem });
          if (name.length + version.version.length > MAX_ROUTED_GROUP_VERSION_CHARS) {
            return drop(
              {
                ...ids,
                path: versionPath,
                reason: `group and version are ${name.length + version.version.length} characters together, more than the ${MAX_ROUTED_GROUP_VERSION_CHARS} a route matcher can hold`,
              },
              'unroutable',
            );
          }
          const resources = keptEach(
            version.resources,
            (resource, ri) => {
              const resourcePath = `${versionPath}.resources[${ri}]`;
              const resourceIds = { ...ids, resource: resource.resource };
              const resourceProblem = labelProblem(resource.resource, 'resource', isDns1123Label, DNS1123_LABEL_TEXT);
              if (resourceProblem !== undefined) return drop({ ...resourceIds, path: resourcePath, reason: resourceProblem });
              if (resource.resource.length > MAX_ROUTED_RESOURCE_CHARS) {
                return drop(
                  {
                    ...resourceIds,
                    path: resourcePath,
                    reason: `resource name longer than the ${MAX_ROUTED_RESOURCE_CHARS} characters a route matcher can hold`,
                  },
                  'unroutable',
                );
              }
              if (resource.subresources === undefined) return resource;
              const subresources = keptEach(
                resource.subresources,
                (sub, si) => {
                  const subPath = `${resourcePath}.subresources[${si}]`;
                  const subIds = { ...resourceIds, subresource: sub.subresource };
                  const subProblem = labelProblem(sub.subresource, 'subresource', isDns1123Label, DNS1123_LABEL_TEXT);
                  if (subProblem !== undefined) return drop({ ...subIds, path: subPath, reason: subProblem });
                  if (resource.resource.length + sub.subresource.length > MAX_ROUTED_RESOURCE_CHARS) {
                    return drop(
                      {
                        ...subIds,
                        path: subPath,
                        reason: `resource and subresource names longer than the ${MAX_ROUTED_RESOURCE_CHARS} characters a route matcher can hold together`,
                      },
                      'unroutable',
                    );
                  }
                  return sub;
                },
                (sub) => sub.subresource,
                (sub, si) =>
                  drop({
                    ...resourceIds,
                    subresource: sub.subresource,
                    path: `${resourcePath}.subresources[${si}]`,
                    reason: 'subresource listed twice for this resource; the first entry is kept',
                  }),
              );
              return subresources === resource.subresources ? resource : { ...resource, subresources };
            },
            (r) => r.resource,
            (r, ri) =>
              drop({
                ...ids,
                resource: r.resource,
                path: `${versionPath}.resources[${ri}]`,
                reason: 'resource listed twice in this group-version; the first entry is kept',
              }),
          );
          return resources === version.resources ? version : { ...version, resources };
        },
        (v) => v.version,
        (v, vi) =>
          drop({ group: name, version: v.version, path: `${path}.versions[${vi}]`, reason: 'version listed twice in this group; the first entry is kept' }),
      );
      return versions === group.versions ? group : { ...group, versions };
    },
    (g) => g.metadata.name,
    (g, gi) => drop({ group: g.metadata.name, path: `$.items[${gi}]`, reason: 'group listed twice; the first entry is kept' }),
  );
  const result: RoutableDiscovery = { list: items === list.items ? list : { ...list, items }, dropped };
  cache.set(list, result);
  return result;
}

/**
 * `keep` applied to each item (undefined drops it), skipping (and reporting)
 * every item whose name an earlier item already had, kept or not. Returns
 * `items` itself when every item was kept unchanged.
 */
function keptEach<T>(
  items: readonly T[],
  keep: (item: T, index: number) => T | undefined,
  nameOf: (item: T) => string,
  duplicate: (item: T, index: number) => void,
): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  let changed = false;
  items.forEach((item, i) => {
    const name = nameOf(item);
    if (seen.has(name)) {
      duplicate(item, i);
      changed = true;
      return;
    }
    seen.add(name);
    const kept = keep(item, i);
    if (kept === undefined) changed = true;
    else out.push(kept);
    if (kept !== item) changed = true;
  });
  return changed ? out : (items as T[]);
}

function labelProblem(name: string, what: string, isValid: (name: string) => boolean, text: string): string | undefined {
  if (name.length > MAX_LABEL_CHARS) return `${what} name ${describe(name)} is longer than ${MAX_LABEL_CHARS} characters`;
  return isValid(name) ? undefined : `${what} name ${describe(name)} is not a ${text}`;
}

function groupNameProblem(name: string): string | undefined {
  if (name === '') return 'a group under /apis without a name (only /api lists the core group)';
  if (name.length > MAX_SUBDOMAIN_CHARS) return `group name ${describe(name)} is longer than ${MAX_SUBDOMAIN_CHARS} characters`;
  return isDns1123Subdomain(name) ? undefined : `group name ${describe(name)} is not a ${DNS1123_SUBDOMAIN_TEXT}`;
}
