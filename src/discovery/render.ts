// Serialize aggregated discovery as kube-apiserver writes it: JSON in Go's
// field order and escaping, or protobuf (magic + runtime.Unknown envelope),
// with an ETag that is a hash of the JSON document: the same content gives
// the same ETag on every sidecar, and any change gives a new one.
import { createHash } from 'node:crypto';
import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  GroupVersionKind,
} from '../model/discovery.js';
import {
  AGGREGATED_DISCOVERY_JSON as AGGREGATED_JSON_CONTENT_TYPE,
  AGGREGATED_DISCOVERY_PROTOBUF as AGGREGATED_PROTOBUF_CONTENT_TYPE,
} from '../model/discovery.js';
import { compareStrings } from '../util/order.js';
import { kubernetesProtoTypes } from './protos.js';

export type AggregatedFormat = 'json' | 'protobuf';

export interface RenderedDocument {
  body: Buffer;
  contentType: string;
  /** Quoted, as sent in the ETag header. */
  etag: string;
}

/** Every protobuf response body starts with these 4 bytes ("k8s" and a NUL). */
const PROTOBUF_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

export function renderAggregated(list: APIGroupDiscoveryList, format: AggregatedFormat): RenderedDocument {
  return renderAggregatedCached(list, format).document;
}

// Rendering is memoized per document object and format, and protobuf bodies
// per content (ETag), so a re-merge that produced equal content costs one
// JSON serialization and no protobuf encoding.
const renderedByList = new WeakMap<APIGroupDiscoveryList, Partial<Record<AggregatedFormat, RenderedDocument>>>();
const protobufByEtag = new Map<string, Buffer>();
const PROTOBUF_CACHE_SIZE = 8;

/** renderAggregated, saying whether the rendered document came from the cache. */
export function renderAggregatedCached(list: APIGroupDiscoveryList, format: AggregatedFormat): { document: RenderedDocument; cache: 'hit' | 'miss' } {
  let rendered = renderedByList.get(list);
  if (!rendered) {
    rendered = {};
    renderedByList.set(list, rendered);
  }
  const cached = rendered[format];
  if (cached) return { document: cached, cache: 'hit' };

  const json = rendered.json ?? renderJson(list);
  rendered.json = json;
  if (format === 'json') return { document: json, cache: 'miss' };

  let body = protobufByEtag.get(json.etag);
  if (body) {
    // Most recently used last, so the oldest is evicted first.
    protobufByEtag.delete(json.etag);
  } else {
    body = encodeAggregatedProtobuf(list);
  }
  protobufByEtag.set(json.etag, body);
  while (protobufByEtag.size > PROTOBUF_CACHE_SIZE) protobufByEtag.delete(protobufByEtag.keys().next().value as string);
  const document: RenderedDocument = { body, contentType: AGGREGATED_PROTOBUF_CONTENT_TYPE, etag: json.etag };
  rendered.protobuf = document;
  return { document, cache: 'miss' };
}

function renderJson(list: APIGroupDiscoveryList): RenderedDocument {
  const body = Buffer.from(goJson(goOrderedList(list)), 'utf8');
  return { body, contentType: AGGREGATED_JSON_CONTENT_TYPE, etag: etagOf(body) };
}

/** Upstream: the SHA-512 of the JSON document in upper-case hex, quoted. */
export function etagOf(jsonBody: Buffer): string {
  return `"${createHash('sha512').update(jsonBody).digest('hex').toUpperCase()}"`;
}

/**
 * JSON text as Go's encoding/json Encoder writes it: HTML-sensitive
 * characters and the JavaScript line separators escaped, newline at the end.
 */
export function goJson(value: unknown): string {
  return `${JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}

// ---- JSON field order --------------------------------------------------------

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

function goOrderedList(list: APIGroupDiscoveryList): Record<string, unknown> {
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

// ---- protobuf ----------------------------------------------------------------
// Go's generated marshallers write every non-pointer scalar of a proto2
// message, empty or not, and every non-pointer embedded message; protobufjs
// writes the fields that are set. So every such field is set here, to its
// zero value when absent, and pointers (responseKind, deletionTimestamp, ...)
// only when present.

function encodeAggregatedProtobuf(list: APIGroupDiscoveryList): Buffer {
  const { APIGroupDiscoveryList: listType, Unknown } = kubernetesProtoTypes();
  const raw = listType.encode(listType.fromObject(protoList(list))).finish();
  const envelope = Unknown.encode(
    Unknown.fromObject({
      typeMeta: { apiVersion: 'apidiscovery.k8s.io/v2', kind: 'APIGroupDiscoveryList' },
      raw,
      contentEncoding: '',
      contentType: '',
    }),
  ).finish();
  return Buffer.concat([PROTOBUF_MAGIC, envelope]);
}

function protoList(list: APIGroupDiscoveryList): Record<string, unknown> {
  const meta = list.metadata;
  const listMeta: Record<string, unknown> = {
    selfLink: stringField(meta, 'selfLink'),
    resourceVersion: stringField(meta, 'resourceVersion'),
    continue: stringField(meta, 'continue'),
  };
  if (typeof meta['remainingItemCount'] === 'number') listMeta['remainingItemCount'] = meta['remainingItemCount'];
  return { metadata: listMeta, items: list.items.map(protoGroup) };
}

function protoGroup(group: APIGroupDiscovery): Record<string, unknown> {
  const meta = group.metadata as Record<string, unknown>;
  const objectMeta: Record<string, unknown> = {
    name: stringField(meta, 'name'),
    generateName: stringField(meta, 'generateName'),
    namespace: stringField(meta, 'namespace'),
    selfLink: stringField(meta, 'selfLink'),
    uid: stringField(meta, 'uid'),
    resourceVersion: stringField(meta, 'resourceVersion'),
    generation: typeof meta['generation'] === 'number' ? meta['generation'] : 0,
    // A zero time is an empty message, as metav1.Time marshals it.
    creationTimestamp: protoTime(meta['creationTimestamp']),
  };
  if (typeof meta['deletionTimestamp'] === 'string') objectMeta['deletionTimestamp'] = protoTime(meta['deletionTimestamp']);
  if (typeof meta['deletionGracePeriodSeconds'] === 'number') objectMeta['deletionGracePeriodSeconds'] = meta['deletionGracePeriodSeconds'];
  for (const mapField of ['labels', 'annotations']) {
    const value = meta[mapField];
    // Go writes map entries in key order.
    if (value && typeof value === 'object') objectMeta[mapField] = Object.fromEntries(Object.entries(value).sort(([a], [b]) => compareStrings(a, b)));
  }
  if (Array.isArray(meta['finalizers'])) objectMeta['finalizers'] = meta['finalizers'];
  return { metadata: objectMeta, versions: group.versions.map(protoVersion) };
}

function protoTime(value: unknown): Record<string, unknown> {
  if (typeof value !== 'string') return {};
  const millis = Date.parse(value);
  return Number.isNaN(millis) ? {} : { seconds: Math.floor(millis / 1000), nanos: 0 };
}

function protoVersion(version: APIVersionDiscovery): Record<string, unknown> {
  return { version: version.version, resources: version.resources.map(protoResource), freshness: version.freshness ?? '' };
}

function protoResource(resource: APIResourceDiscovery): Record<string, unknown> {
  const out: Record<string, unknown> = {
    resource: resource.resource,
    scope: resource.scope,
    singularResource: resource.singularResource ?? '',
    verbs: resource.verbs,
    shortNames: resource.shortNames ?? [],
    categories: resource.categories ?? [],
    subresources: (resource.subresources ?? []).map(protoSubresource),
  };
  if (resource.responseKind) out['responseKind'] = protoGvk(resource.responseKind);
  const serverIds = (resource as unknown as Record<string, unknown>)['serverIds'];
  if (Array.isArray(serverIds)) out['serverIds'] = serverIds;
  return out;
}

function protoSubresource(sub: APISubresourceDiscovery): Record<string, unknown> {
  const out: Record<string, unknown> = {
    subresource: sub.subresource,
    acceptedTypes: (sub.acceptedTypes ?? []).map(protoGvk),
    verbs: sub.verbs,
  };
  if (sub.responseKind) out['responseKind'] = protoGvk(sub.responseKind);
  return out;
}

function protoGvk(gvk: GroupVersionKind): Record<string, unknown> {
  return { group: gvk.group, version: gvk.version, kind: gvk.kind };
}

function stringField(source: Record<string, unknown>, name: string): string {
  const value = source[name];
  return typeof value === 'string' ? value : '';
}

/**
 * Decode a protobuf aggregated discovery body (as written by
 * renderAggregated or by kube-apiserver) into the JSON model, with Go's
 * omitempty rules applied (empty strings and lists left out).
 */
export function decodeAggregatedProtobuf(body: Buffer): APIGroupDiscoveryList {
  if (body.length < PROTOBUF_MAGIC.length || !body.subarray(0, PROTOBUF_MAGIC.length).equals(PROTOBUF_MAGIC)) {
    throw new Error('not a Kubernetes protobuf body (missing the k8s\\0 prefix)');
  }
  const { APIGroupDiscoveryList: listType, Unknown } = kubernetesProtoTypes();
  const options = { longs: Number, arrays: true, bytes: Buffer };
  const envelope = Unknown.toObject(Unknown.decode(body.subarray(PROTOBUF_MAGIC.length)), options) as {
    typeMeta?: { apiVersion?: string; kind?: string };
    raw?: Uint8Array;
  };
  if (envelope.typeMeta?.apiVersion !== 'apidiscovery.k8s.io/v2' || envelope.typeMeta.kind !== 'APIGroupDiscoveryList') {
    throw new Error(`unexpected protobuf type ${envelope.typeMeta?.apiVersion}/${envelope.typeMeta?.kind}`);
  }
  const decoded = listType.toObject(listType.decode(envelope.raw ?? new Uint8Array()), options) as ProtoList;
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: withoutEmpty({ ...(decoded.metadata ?? {}) }),
    items: (decoded.items ?? []).map(fromProtoGroup),
  };
}

interface ProtoGvk {
  group?: string;
  version?: string;
  kind?: string;
}
interface ProtoSubresource {
  subresource?: string;
  responseKind?: ProtoGvk;
  acceptedTypes?: ProtoGvk[];
  verbs?: string[];
}
interface ProtoResource {
  resource?: string;
  responseKind?: ProtoGvk;
  scope?: string;
  singularResource?: string;
  verbs?: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: ProtoSubresource[];
  serverIds?: string[];
}
interface ProtoVersion {
  version?: string;
  resources?: ProtoResource[];
  freshness?: string;
}
interface ProtoGroup {
  metadata?: Record<string, unknown>;
  versions?: ProtoVersion[];
}
interface ProtoList {
  metadata?: Record<string, unknown>;
  items?: ProtoGroup[];
}

function fromProtoGroup(group: ProtoGroup): APIGroupDiscovery {
  const meta = withoutEmpty({ ...(group.metadata ?? {}) });
  // A zero metav1.Time (empty message) is what newer apiservers omit in JSON.
  const created = meta['creationTimestamp'] as { seconds?: number } | undefined;
  if (created !== undefined) {
    if (!created.seconds) delete meta['creationTimestamp'];
    else meta['creationTimestamp'] = new Date(created.seconds * 1000).toISOString().replace('.000Z', 'Z');
  }
  const name = typeof meta['name'] === 'string' ? meta['name'] : '';
  return { metadata: { ...meta, name }, versions: (group.versions ?? []).map(fromProtoVersion) };
}

function fromProtoVersion(version: ProtoVersion): APIVersionDiscovery {
  const out: APIVersionDiscovery = { version: version.version ?? '', resources: (version.resources ?? []).map(fromProtoResource) };
  if (version.freshness === 'Current' || version.freshness === 'Stale') out.freshness = version.freshness;
  return out;
}

function fromProtoResource(resource: ProtoResource): APIResourceDiscovery {
  const out: APIResourceDiscovery = {
    resource: resource.resource ?? '',
    scope: resource.scope === 'Cluster' ? 'Cluster' : 'Namespaced',
    singularResource: resource.singularResource ?? '',
    verbs: resource.verbs ?? [],
  };
  if (resource.responseKind) out.responseKind = fromProtoGvk(resource.responseKind);
  if (resource.shortNames?.length) out.shortNames = resource.shortNames;
  if (resource.categories?.length) out.categories = resource.categories;
  if (resource.subresources?.length) out.subresources = resource.subresources.map(fromProtoSubresource);
  if (resource.serverIds?.length) Object.assign(out, { serverIds: resource.serverIds });
  return out;
}

function fromProtoSubresource(sub: ProtoSubresource): APISubresourceDiscovery {
  const out: APISubresourceDiscovery = { subresource: sub.subresource ?? '', verbs: sub.verbs ?? [] };
  if (sub.responseKind) out.responseKind = fromProtoGvk(sub.responseKind);
  if (sub.acceptedTypes?.length) out.acceptedTypes = sub.acceptedTypes.map(fromProtoGvk);
  return out;
}

function fromProtoGvk(gvk: ProtoGvk): GroupVersionKind {
  return { group: gvk.group ?? '', version: gvk.version ?? '', kind: gvk.kind ?? '' };
}

function withoutEmpty(fields: Record<string, unknown>): Record<string, unknown> {
  for (const [name, value] of Object.entries(fields)) {
    if (value === '' || value === 0 || (Array.isArray(value) && value.length === 0)) delete fields[name];
  }
  return fields;
}
