// Pure functions over aggregated discovery: validate a fetched document and
// reduce one apiserver's discovery to its served set.
import type { ServedResource } from './cluster.js';
import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  ApiserverDiscovery,
  GroupVersionKind,
} from './discovery.js';
import { compareStrings } from '../util/order.js';

export const DISCOVERY_KIND = 'APIGroupDiscoveryList';
export const DISCOVERY_API_VERSION = 'apidiscovery.k8s.io/v2';

/**
 * The served set of one apiserver: every group/version/resource in its `/api`
 * and `/apis` documents, core group as "". Sorted by group, version, resource
 * (code-unit order) with sorted, de-duplicated verbs and subresources, so equal
 * discovery always gives an equal array.
 */
export function servedSetFromDiscovery(d: ApiserverDiscovery): ServedResource[] {
  const byKey = new Map<string, ServedResource>();
  for (const list of [d.core, d.groups]) {
    for (const group of list.items) {
      const groupName = group.metadata.name;
      for (const version of group.versions) {
        for (const r of version.resources) {
          const key = `${groupName}\u0000${version.version}\u0000${r.resource}`;
          const subresources = (r.subresources ?? []).map((s) => s.subresource);
          const existing = byKey.get(key);
          if (existing) {
            // A resource listed twice (should not happen): union, never lose a verb.
            existing.verbs = sortedUnique([...existing.verbs, ...r.verbs]);
            existing.subresources = sortedUnique([...existing.subresources, ...subresources]);
            continue;
          }
          byKey.set(key, {
            group: groupName,
            version: version.version,
            resource: r.resource,
            namespaced: r.scope === 'Namespaced',
            verbs: sortedUnique(r.verbs),
            subresources: sortedUnique(subresources),
          });
        }
      }
    }
  }
  return [...byKey.values()].sort(compareServedResources);
}

export function compareServedResources(a: ServedResource, b: ServedResource): number {
  return compareStrings(a.group, b.group) || compareStrings(a.version, b.version) || compareStrings(a.resource, b.resource);
}


function sortedUnique(values: string[]): string[] {
  return [...new Set(values)].sort(compareStrings);
}

/**
 * Validate a decoded `/api` or `/apis` body as an apidiscovery.k8s.io/v2
 * APIGroupDiscoveryList. Throws an Error naming the offending path on
 * malformed input. Normalises what Go omits or writes as null (group name of
 * the core group, empty versions/resources/verbs, null responseKind) and keeps
 * unknown fields, so the result can be served again as the apiserver wrote it.
 */
export function parseAggregatedDiscovery(body: unknown): APIGroupDiscoveryList {
  const root = expectObject(body, '$');
  if (root['kind'] !== DISCOVERY_KIND || root['apiVersion'] !== DISCOVERY_API_VERSION) {
    throw new DiscoveryShapeError(
      '$',
      `expected kind ${DISCOVERY_KIND} apiVersion ${DISCOVERY_API_VERSION}, got kind ${describe(root['kind'])} apiVersion ${describe(root['apiVersion'])}` +
        ' (does this apiserver serve aggregated discovery?)',
    );
  }
  const metadata = root['metadata'] === undefined || root['metadata'] === null ? {} : expectObject(root['metadata'], '$.metadata');
  if (!Array.isArray(root['items'])) {
    throw new DiscoveryShapeError('$.items', `expected an array, got ${describe(root['items'])}`);
  }
  const items = root['items'].map((item: unknown, i: number) => parseGroup(item, `$.items[${i}]`));
  return { ...root, kind: DISCOVERY_KIND, apiVersion: DISCOVERY_API_VERSION, metadata, items };
}

export class DiscoveryShapeError extends Error {
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(`malformed aggregated discovery at ${path}: ${detail}`);
    this.name = 'DiscoveryShapeError';
  }
}

function parseGroup(value: unknown, path: string): APIGroupDiscovery {
  const group = expectObject(value, path);
  // The core group's entry has no name (Go omits the empty string).
  const rawMeta = group['metadata'] === undefined || group['metadata'] === null ? {} : expectObject(group['metadata'], `${path}.metadata`);
  const name = rawMeta['name'] === undefined ? '' : expectString(rawMeta['name'], `${path}.metadata.name`);
  const versions = optionalArray(group['versions'], `${path}.versions`).map((v, i) => parseVersion(v, `${path}.versions[${i}]`));
  return { ...group, metadata: { ...rawMeta, name }, versions };
}

function parseVersion(value: unknown, path: string): APIVersionDiscovery {
  const version = expectObject(value, path);
  const name = expectNonEmptyString(version['version'], `${path}.version`);
  const resources = optionalArray(version['resources'], `${path}.resources`).map((r, i) => parseResource(r, `${path}.resources[${i}]`));
  const out: APIVersionDiscovery = { ...version, version: name, resources };
  const freshness = version['freshness'];
  if (freshness === undefined || freshness === null || freshness === '') {
    delete out.freshness;
  } else if (freshness === 'Current' || freshness === 'Stale') {
    out.freshness = freshness;
  } else {
    throw new DiscoveryShapeError(`${path}.freshness`, `expected "Current" or "Stale", got ${describe(freshness)}`);
  }
  return out;
}

function parseResource(value: unknown, path: string): APIResourceDiscovery {
  const resource = expectObject(value, path);
  const name = expectNonEmptyString(resource['resource'], `${path}.resource`);
  const scope = resource['scope'];
  if (scope !== 'Cluster' && scope !== 'Namespaced') {
    throw new DiscoveryShapeError(`${path}.scope`, `expected "Cluster" or "Namespaced", got ${describe(scope)}`);
  }
  const out: APIResourceDiscovery = {
    ...resource,
    resource: name,
    scope,
    verbs: stringArray(resource['verbs'], `${path}.verbs`),
  };
  setOptionalGvk(out, resource['responseKind'], `${path}.responseKind`);
  if (resource['subresources'] === undefined || resource['subresources'] === null) {
    delete out.subresources;
  } else {
    out.subresources = optionalArray(resource['subresources'], `${path}.subresources`).map((s, i) =>
      parseSubresource(s, `${path}.subresources[${i}]`),
    );
  }
  for (const field of ['shortNames', 'categories'] as const) {
    if (resource[field] === undefined || resource[field] === null) delete out[field];
    else out[field] = stringArray(resource[field], `${path}.${field}`);
  }
  if (resource['singularResource'] === null) delete out.singularResource;
  else if (resource['singularResource'] !== undefined) out.singularResource = expectString(resource['singularResource'], `${path}.singularResource`);
  return out;
}

function parseSubresource(value: unknown, path: string): APISubresourceDiscovery {
  const sub = expectObject(value, path);
  const out: APISubresourceDiscovery = {
    ...sub,
    subresource: expectNonEmptyString(sub['subresource'], `${path}.subresource`),
    verbs: stringArray(sub['verbs'], `${path}.verbs`),
  };
  setOptionalGvk(out, sub['responseKind'], `${path}.responseKind`);
  if (sub['acceptedTypes'] === undefined || sub['acceptedTypes'] === null) {
    delete out.acceptedTypes;
  } else {
    out.acceptedTypes = optionalArray(sub['acceptedTypes'], `${path}.acceptedTypes`).map((t, i) => parseGvk(t, `${path}.acceptedTypes[${i}]`));
  }
  return out;
}

function setOptionalGvk(target: { responseKind?: GroupVersionKind }, value: unknown, path: string): void {
  if (value === undefined || value === null) delete target.responseKind;
  else target.responseKind = parseGvk(value, path);
}

function parseGvk(value: unknown, path: string): GroupVersionKind {
  const gvk = expectObject(value, path);
  const field = (name: string): string => (gvk[name] === undefined ? '' : expectString(gvk[name], `${path}.${name}`));
  return { ...gvk, group: field('group'), version: field('version'), kind: field('kind') };
}

function expectObject(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DiscoveryShapeError(path, `expected an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

function expectString(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new DiscoveryShapeError(path, `expected a string, got ${describe(value)}`);
  return value;
}

function expectNonEmptyString(value: unknown, path: string): string {
  const s = expectString(value, path);
  if (s === '') throw new DiscoveryShapeError(path, 'expected a non-empty string');
  return s;
}

/** Go writes a nil slice as null and omits empty omitempty slices: both mean []. */
function optionalArray(value: unknown, path: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new DiscoveryShapeError(path, `expected an array, got ${describe(value)}`);
  return value;
}

function stringArray(value: unknown, path: string): string[] {
  return optionalArray(value, path).map((v, i) => expectString(v, `${path}[${i}]`));
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}...` : value);
  if (typeof value === 'object') return 'an object';
  return typeof value === 'undefined' ? 'nothing' : `${typeof value} ${String(value)}`;
}
