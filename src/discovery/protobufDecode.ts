// Reading a protobuf aggregated discovery body back into the JSON model
// (what tests compare kube-apiserver's and mvproxy's protobuf bodies with).
import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  GroupVersionKind,
} from '../model/discovery.js';
import { kubernetesProtoTypes } from './protos.js';
import { PROTOBUF_MAGIC } from './protobufEncode.js';

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
