// Aggregated discovery in protobuf, as kube-apiserver writes it: the magic
// prefix, then a runtime.Unknown envelope around the APIGroupDiscoveryList.
import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  GroupVersionKind,
} from '../model/discovery.js';
import { compareStrings } from '../util/order.js';
import { kubernetesProtoTypes } from './protos.js';

/** Every protobuf response body starts with these 4 bytes ("k8s" and a NUL). */
export const PROTOBUF_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

// Go's generated marshallers write every non-pointer scalar of a proto2
// message, empty or not, and every non-pointer embedded message; protobufjs
// writes the fields that are set. So every such field is set here, to its
// zero value when absent, and pointers (responseKind, deletionTimestamp, ...)
// only when present.

/** The protobuf body of an aggregated discovery document: magic prefix and runtime.Unknown envelope. */
export function encodeAggregatedProtobuf(list: APIGroupDiscoveryList): Buffer {
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
