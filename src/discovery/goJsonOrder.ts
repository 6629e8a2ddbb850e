// JSON field order: aggregated discovery's fields in the order Go's structs
// declare them (kube-apiserver's encoding/json writes them so), for
// byte-identical JSON bodies (the peer part's fragments are spliced into
// kube-apiserver's own JSON: xds/documentSet.ts).
import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  GroupVersionKind,
} from '../model/discovery.js';

/** How Go writes one struct field: always, or omitted when empty (omitempty). */
type FieldRule = [name: string, when: 'always' | 'omitempty', fallback?: unknown];

/**
 * The fields of `source` in Go struct order, then any field the struct does
 * not know (written by a newer apiserver) in its original order.
 */
function inGoOrder(source: object, rules: readonly FieldRule[], transform: (name: string, value: unknown) => unknown = (_n, v) => v): Record<string, unknown> {
  const fields = source as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [name, when, fallback] of rules) {
    const value = fields[name];
    if (when === 'omitempty' && isEmpty(value)) continue;
    if (value === undefined) {
      if (fallback !== undefined) out[name] = fallback;
      continue;
    }
    out[name] = transform(name, value);
  }
  const known = new Set(rules.map(([name]) => name));
  for (const [name, value] of Object.entries(fields)) {
    if (!known.has(name) && value !== undefined) out[name] = value;
  }
  return out;
}

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || value === '' || value === 0 || value === false || (Array.isArray(value) && value.length === 0);
}

/** An APIGroupDiscoveryList's fields (and its items', all the way down) in Go struct order. */
export function goOrderedList(list: APIGroupDiscoveryList): Record<string, unknown> {
  return inGoOrder(
    list,
    [
      ['kind', 'always', 'APIGroupDiscoveryList'],
      ['apiVersion', 'always', 'apidiscovery.k8s.io/v2'],
      ['metadata', 'always', {}],
      ['items', 'always', []],
    ],
    (name, value) => (name === 'items' ? (value as APIGroupDiscovery[]).map(goOrderedGroup) : name === 'metadata' ? goOrderedListMeta(value as object) : value),
  );
}

function goOrderedListMeta(meta: object): Record<string, unknown> {
  return inGoOrder(meta, [
    ['selfLink', 'omitempty'],
    ['resourceVersion', 'omitempty'],
    ['continue', 'omitempty'],
    ['remainingItemCount', 'omitempty'],
  ]);
}

/** ObjectMeta's field order; creationTimestamp is kept as the apiserver wrote it (null on older ones). */
const OBJECT_META_RULES: readonly FieldRule[] = [
  ['name', 'omitempty'],
  ['generateName', 'omitempty'],
  ['namespace', 'omitempty'],
  ['selfLink', 'omitempty'],
  ['uid', 'omitempty'],
  ['resourceVersion', 'omitempty'],
  ['generation', 'omitempty'],
  ['creationTimestamp', 'always'],
  ['deletionTimestamp', 'omitempty'],
  ['deletionGracePeriodSeconds', 'omitempty'],
  ['labels', 'omitempty'],
  ['annotations', 'omitempty'],
  ['ownerReferences', 'omitempty'],
  ['finalizers', 'omitempty'],
  ['managedFields', 'omitempty'],
];

function goOrderedGroup(group: APIGroupDiscovery): Record<string, unknown> {
  return inGoOrder(
    group,
    [
      ['metadata', 'always', {}],
      ['versions', 'omitempty'],
    ],
    (name, value) => (name === 'metadata' ? inGoOrder(value as object, OBJECT_META_RULES) : (value as APIVersionDiscovery[]).map(goOrderedVersion)),
  );
}

function goOrderedVersion(version: APIVersionDiscovery): Record<string, unknown> {
  return inGoOrder(
    version,
    [
      ['version', 'always'],
      ['resources', 'omitempty'],
      ['freshness', 'omitempty'],
    ],
    (name, value) => (name === 'resources' ? (value as APIResourceDiscovery[]).map(goOrderedResource) : value),
  );
}

function goOrderedResource(resource: APIResourceDiscovery): Record<string, unknown> {
  return inGoOrder(
    resource,
    [
      ['resource', 'always'],
      ['responseKind', 'omitempty'],
      ['scope', 'always'],
      ['singularResource', 'always', ''],
      ['verbs', 'always', []],
      ['shortNames', 'omitempty'],
      ['categories', 'omitempty'],
      ['subresources', 'omitempty'],
      ['serverIds', 'omitempty'],
    ],
    (name, value) =>
      name === 'responseKind'
        ? goOrderedGvk(value as GroupVersionKind)
        : name === 'subresources'
          ? (value as APISubresourceDiscovery[]).map(goOrderedSubresource)
          : value,
  );
}

function goOrderedSubresource(sub: APISubresourceDiscovery): Record<string, unknown> {
  return inGoOrder(
    sub,
    [
      ['subresource', 'always'],
      ['responseKind', 'omitempty'],
      ['acceptedTypes', 'omitempty'],
      ['verbs', 'always', []],
    ],
    (name, value) =>
      name === 'responseKind' ? goOrderedGvk(value as GroupVersionKind) : name === 'acceptedTypes' ? (value as GroupVersionKind[]).map(goOrderedGvk) : value,
  );
}

function goOrderedGvk(gvk: GroupVersionKind): Record<string, unknown> {
  return { group: gvk.group, version: gvk.version, kind: gvk.kind };
}
