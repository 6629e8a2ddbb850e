// Reading an apiserver's aggregated discovery document (`/api` or `/apis`,
// apidiscovery.k8s.io/v2 APIGroupDiscoveryList): what does not have the
// document's types is dropped entry by entry, the rest kept as written.
//
// Content from apiservers is data, not a verdict on them (docs/never-worse.md, "never
// worse than no proxy"). kube-aggregator copies every extension server's
// discovery into every apiserver's `/apis` without checking it, so one bad
// entry can appear in every apiserver's document at once. A malformed entry
// drops that entry (the smallest unit that is wrong: a subresource, a
// resource, a version, a group) and keeps the rest. Only a body that is not
// an APIGroupDiscoveryList at all is an error.
//
// Two levels:
// - parseAggregatedDiscovery (here) drops what does not have the document's
//   types (a non-string name, a non-array list, an unknown scope or freshness);
// - routableDiscovery (routableDiscovery.ts) drops, from what is left, what
//   mvproxy must not route on: names Kubernetes would not accept (a group that
//   is not a DNS-1123 subdomain, a version that is not a DNS-1035 label, a
//   resource or subresource that is not a DNS-1123 label), duplicates, and
//   names too long for the route matchers Envoy accepts.
// The first level's result is the apiserver's own document as the merged
// discovery serves it for that apiserver's own sidecar; the second is what
// the served set (servedSet.ts), the routes, and the peers' contributions to
// merged discovery are made of.
import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  DroppedDiscoveryEntry,
  GroupVersionKind,
} from './discovery.js';
import { isRecord } from '../util/json.js';

const DISCOVERY_KIND = 'APIGroupDiscoveryList';
const DISCOVERY_API_VERSION = 'apidiscovery.k8s.io/v2';

/** Which document a list is: `/api` (only the core group, named "") or `/apis` (named groups). */
export type DiscoveryDocument = '/api' | '/apis';

/**
 * Read a decoded `/api` or `/apis` body as an apidiscovery.k8s.io/v2
 * APIGroupDiscoveryList. Throws a DiscoveryShapeError only when the body is
 * not one at all (not an object, another kind or apiVersion, no items
 * array). An entry that does not have the document's types is dropped (the
 * smallest unit: a subresource, a resource, a version, a group) and reported
 * in `dropped`; the rest is kept. Normalises what Go omits or writes as null
 * (group name of the core group, empty names, versions, resources and verbs,
 * null responseKind) and keeps unknown fields, so the result can be served
 * again as the apiserver wrote it. Names are not judged here: see
 * routableDiscovery.
 */
export function parseAggregatedDiscovery(body: unknown, dropped: DroppedDiscoveryEntry[] = [], document: DiscoveryDocument = '/apis'): APIGroupDiscoveryList {
  const root = expectObject(body, '$');
  if (root['kind'] !== DISCOVERY_KIND || root['apiVersion'] !== DISCOVERY_API_VERSION) {
    throw new DiscoveryShapeError(
      '$',
      `expected kind ${DISCOVERY_KIND} apiVersion ${DISCOVERY_API_VERSION}, got kind ${describe(root['kind'])} apiVersion ${describe(root['apiVersion'])}` +
        ' (does this apiserver serve aggregated discovery?)',
    );
  }
  if (!Array.isArray(root['items'])) {
    throw new DiscoveryShapeError('$.items', `expected an array, got ${describe(root['items'])}`);
  }
  let metadata: Record<string, unknown> = {};
  if (root['metadata'] !== undefined && root['metadata'] !== null) {
    if (isRecord(root['metadata'])) metadata = root['metadata'];
    else dropped.push({ document, path: '$.metadata', reason: `expected an object, got ${describe(root['metadata'])}; read as {}`, kind: 'malformed' });
  }
  const context: ParseContext = { document, dropped };
  const items = parseEach(root['items'], '$.items', context, {}, (item) => ({ group: groupNameOf(item) }), parseGroup);
  return { ...root, kind: DISCOVERY_KIND, apiVersion: DISCOVERY_API_VERSION, metadata, items };
}

export class DiscoveryShapeError extends Error {
  constructor(
    readonly path: string,
    readonly detail: string,
  ) {
    super(`malformed aggregated discovery at ${path}: ${detail}`);
    this.name = 'DiscoveryShapeError';
  }
}

interface ParseContext {
  document: DiscoveryDocument;
  dropped: DroppedDiscoveryEntry[];
}

type EntryNames = Pick<DroppedDiscoveryEntry, 'group' | 'version' | 'resource' | 'subresource'>;

/**
 * Each element of `values` parsed by `parse`; one that throws a
 * DiscoveryShapeError is left out and reported, named by `parent` plus what
 * `names` can read of it.
 */
function parseEach<T>(
  values: unknown[],
  path: string,
  context: ParseContext,
  parent: EntryNames,
  names: (value: unknown) => EntryNames,
  parse: (value: unknown, path: string, context: ParseContext) => T,
): T[] {
  const out: T[] = [];
  values.forEach((value, i) => {
    try {
      out.push(parse(value, `${path}[${i}]`, context));
    } catch (err) {
      if (!(err instanceof DiscoveryShapeError)) throw err;
      context.dropped.push({
        document: context.document,
        ...withoutUndefined({ ...parent, ...names(value) }),
        path: err.path,
        reason: err.detail,
        kind: 'malformed',
      });
    }
  });
  return out;
}

function withoutUndefined(names: EntryNames): EntryNames {
  const out: EntryNames = {};
  for (const key of ['group', 'version', 'resource', 'subresource'] as const) {
    const value = names[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** A name as Go reads it: absent or null is "" (its zero value); anything but a string is unreadable (undefined). */
function goName(value: unknown): string | undefined {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : undefined;
}

function groupNameOf(item: unknown): string | undefined {
  if (!isRecord(item)) return undefined;
  const meta = item['metadata'];
  if (meta === undefined || meta === null) return '';
  return isRecord(meta) ? goName(meta['name']) : undefined;
}

function fieldName(value: unknown, field: string): string | undefined {
  return isRecord(value) ? goName(value[field]) : undefined;
}

function parseGroup(value: unknown, path: string, context: ParseContext): APIGroupDiscovery {
  const group = expectObject(value, path);
  // The core group's entry has no name (Go omits the empty string).
  const rawMeta = group['metadata'] === undefined || group['metadata'] === null ? {} : expectObject(group['metadata'], `${path}.metadata`);
  const name = expectName(rawMeta['name'], `${path}.metadata.name`);
  const versions = parseEach(
    optionalArray(group['versions'], `${path}.versions`),
    `${path}.versions`,
    context,
    { group: name },
    (v) => ({ version: fieldName(v, 'version') }),
    (v, p, c) => parseVersion(v, p, c, name),
  );
  return { ...group, metadata: { ...rawMeta, name }, versions };
}

function parseVersion(value: unknown, path: string, context: ParseContext, group: string): APIVersionDiscovery {
  const version = expectObject(value, path);
  const name = expectName(version['version'], `${path}.version`);
  const freshness = version['freshness'];
  if (freshness !== undefined && freshness !== null && freshness !== '' && freshness !== 'Current' && freshness !== 'Stale') {
    throw new DiscoveryShapeError(`${path}.freshness`, `expected "Current" or "Stale", got ${describe(freshness)}`);
  }
  const rawResources = optionalArray(version['resources'], `${path}.resources`);
  const resources = parseEach(
    rawResources,
    `${path}.resources`,
    context,
    { group, version: name },
    (r) => ({ resource: fieldName(r, 'resource') }),
    (r, p, c) => parseResource(r, p, c, { group, version: name }),
  );
  const out: APIVersionDiscovery = { ...version, version: name, resources };
  if (freshness === 'Current' || freshness === 'Stale') out.freshness = freshness;
  else delete out.freshness;
  return out;
}

function parseResource(value: unknown, path: string, context: ParseContext, parent: { group: string; version: string }): APIResourceDiscovery {
  const resource = expectObject(value, path);
  const name = expectName(resource['resource'], `${path}.resource`);
  const scope = resource['scope'];
  if (scope !== 'Cluster' && scope !== 'Namespaced') {
    throw new DiscoveryShapeError(`${path}.scope`, `expected "Cluster" or "Namespaced", got ${describe(scope)}`);
  }
  const out: APIResourceDiscovery = {
    ...resource,
    resource: name,
    scope,
    // Absent or null verbs are Go's nil slice: kube-apiserver itself lists a
    // resource without verbs when only its subresources are served.
    verbs: stringArray(resource['verbs'], `${path}.verbs`),
  };
  setOptionalGvk(out, resource['responseKind'], `${path}.responseKind`);
  for (const field of ['shortNames', 'categories'] as const) {
    if (resource[field] === undefined || resource[field] === null) delete out[field];
    else out[field] = stringArray(resource[field], `${path}.${field}`);
  }
  if (resource['singularResource'] === null) delete out.singularResource;
  else if (resource['singularResource'] !== undefined) out.singularResource = expectString(resource['singularResource'], `${path}.singularResource`);
  if (resource['subresources'] === undefined || resource['subresources'] === null) {
    delete out.subresources;
  } else {
    out.subresources = parseEach(
      optionalArray(resource['subresources'], `${path}.subresources`),
      `${path}.subresources`,
      context,
      { ...parent, resource: name },
      (s) => ({ subresource: fieldName(s, 'subresource') }),
      parseSubresource,
    );
  }
  return out;
}

function parseSubresource(value: unknown, path: string): APISubresourceDiscovery {
  const sub = expectObject(value, path);
  const out: APISubresourceDiscovery = {
    ...sub,
    subresource: expectName(sub['subresource'], `${path}.subresource`),
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
  if (!isRecord(value)) throw new DiscoveryShapeError(path, `expected an object, got ${describe(value)}`);
  return value;
}

function expectString(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new DiscoveryShapeError(path, `expected a string, got ${describe(value)}`);
  return value;
}

/** A name field: a string, or absent or null (Go's zero value, ""). Whether the name is valid is routableDiscovery's to judge. */
function expectName(value: unknown, path: string): string {
  const name = goName(value);
  if (name === undefined) throw new DiscoveryShapeError(path, `expected a string, got ${describe(value)}`);
  return name;
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

/** A value for a message: strings quoted and cut at 60 characters, never the whole of a large value. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}...` : value);
  if (typeof value === 'object') return 'an object';
  return typeof value === 'undefined' ? 'nothing' : `${typeof value} ${String(value)}`;
}
