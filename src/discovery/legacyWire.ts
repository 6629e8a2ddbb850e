// Legacy discovery (meta/v1) on the wire, as kube-apiserver writes it: JSON
// with Go's encoding/json field order and omitempty rules, and protobuf as
// the gogo marshallers write it (every optional scalar, even empty; fields in
// ascending number: protobufjs sorts them so), in the runtime.Unknown
// envelope after the "k8s\0" magic. The document set's legacy fragments
// (xds/documentSet.ts) and the ext_proc tier's legacy merge (response.ts)
// read and write through here. Pure.
import type {
  APIGroup,
  APIGroupList,
  APIResource,
  APIResourceList,
  APIVersions,
  GroupVersionForDiscovery,
  ServerAddressByClientCIDR,
} from '../model/legacyDiscovery.js';
import { PROTOBUF_MAGIC } from './protobufEncode.js';
import { kubernetesProtoTypes } from './protos.js';

/** A legacy discovery document and which one it is (its TypeMeta kind). */
export type LegacyBody =
  | { kind: 'APIVersions'; document: APIVersions }
  | { kind: 'APIGroupList'; document: APIGroupList }
  | { kind: 'APIGroup'; document: APIGroup }
  | { kind: 'APIResourceList'; document: APIResourceList };

/** JSON text as Go's encoding/json writes it (HTML characters and line separators escaped), without the Encoder's newline. */
export function goJsonText(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

type Fields = Record<string, unknown>;

/** `source`'s fields in the given order (omitempty ones left out when empty, `null` for an absent list Go would write), then fields it does not know. */
function ordered(
  source: object,
  rules: ReadonlyArray<[string, 'always' | 'omitempty' | 'list']>,
  transform: (name: string, value: unknown) => unknown,
): Fields {
  const fields = source as Fields;
  const out: Fields = {};
  for (const [name, when] of rules) {
    const value = fields[name];
    const empty = value === undefined || value === null || value === '' || value === false || (Array.isArray(value) && value.length === 0);
    if (when === 'omitempty' && empty) continue;
    if (value === undefined || value === null) out[name] = when === 'list' ? null : value === null ? null : '';
    else out[name] = transform(name, value);
  }
  const known = new Set(rules.map(([name]) => name));
  for (const [name, value] of Object.entries(fields)) if (!known.has(name) && value !== undefined) out[name] = value;
  return out;
}

const same = (_name: string, value: unknown): unknown => value;

export function goOrderedGroupVersion(gv: GroupVersionForDiscovery): Fields {
  return ordered(
    gv,
    [
      ['groupVersion', 'always'],
      ['version', 'always'],
    ],
    same,
  );
}

function goOrderedCidr(cidr: ServerAddressByClientCIDR): Fields {
  return ordered(
    cidr,
    [
      ['clientCIDR', 'always'],
      ['serverAddress', 'always'],
    ],
    same,
  );
}

export function goOrderedGroup(group: APIGroup): Fields {
  return ordered(
    { ...group, preferredVersion: group.preferredVersion ?? { groupVersion: '', version: '' } },
    [
      ['kind', 'omitempty'],
      ['apiVersion', 'omitempty'],
      ['name', 'always'],
      ['versions', 'list'],
      ['preferredVersion', 'always'],
      ['serverAddressByClientCIDRs', 'omitempty'],
    ],
    (name, value) =>
      name === 'versions'
        ? (value as GroupVersionForDiscovery[]).map(goOrderedGroupVersion)
        : name === 'preferredVersion'
          ? goOrderedGroupVersion(value as GroupVersionForDiscovery)
          : name === 'serverAddressByClientCIDRs'
            ? (value as ServerAddressByClientCIDR[]).map(goOrderedCidr)
            : value,
  );
}

export function goOrderedResource(resource: APIResource): Fields {
  return ordered(
    resource,
    [
      ['name', 'always'],
      ['singularName', 'always'],
      ['namespaced', 'always'],
      ['group', 'omitempty'],
      ['version', 'omitempty'],
      ['kind', 'always'],
      ['verbs', 'list'],
      ['shortNames', 'omitempty'],
      ['categories', 'omitempty'],
      ['storageVersionHash', 'omitempty'],
    ],
    same,
  );
}

/** A whole legacy document in Go's field order. */
export function goOrderedLegacy(body: LegacyBody): Fields {
  const typeMeta: Array<[string, 'omitempty']> = [
    ['kind', 'omitempty'],
    ['apiVersion', 'omitempty'],
  ];
  switch (body.kind) {
    case 'APIVersions':
      return ordered(body.document, [...typeMeta, ['versions', 'list'], ['serverAddressByClientCIDRs', 'list']], (name, value) =>
        name === 'serverAddressByClientCIDRs' ? (value as ServerAddressByClientCIDR[]).map(goOrderedCidr) : value,
      );
    case 'APIGroupList':
      return ordered(body.document, [...typeMeta, ['groups', 'list']], (name, value) =>
        name === 'groups' ? (value as APIGroup[]).map(goOrderedGroup) : value,
      );
    case 'APIGroup':
      return goOrderedGroup(body.document);
    case 'APIResourceList':
      return ordered(body.document, [...typeMeta, ['groupVersion', 'always'], ['resources', 'list']], (name, value) =>
        name === 'resources' ? (value as APIResource[]).map(goOrderedResource) : value,
      );
  }
}

// protobuf: plain objects for protobufjs, every optional scalar set.

function protoGroupVersion(gv: GroupVersionForDiscovery): Fields {
  return { groupVersion: gv.groupVersion ?? '', version: gv.version ?? '' };
}

function protoCidrs(cidrs: ServerAddressByClientCIDR[] | null | undefined): Fields[] {
  return (cidrs ?? []).map((c) => ({ clientCIDR: c.clientCIDR ?? '', serverAddress: c.serverAddress ?? '' }));
}

function protoGroup(group: APIGroup): Fields {
  return {
    name: group.name,
    versions: group.versions.map(protoGroupVersion),
    preferredVersion: protoGroupVersion(group.preferredVersion ?? { groupVersion: '', version: '' }),
    serverAddressByClientCIDRs: protoCidrs(group.serverAddressByClientCIDRs),
  };
}

function protoResource(resource: APIResource): Fields {
  const out: Fields = {
    name: resource.name,
    singularName: resource.singularName ?? '',
    namespaced: resource.namespaced === true,
    group: resource.group ?? '',
    version: resource.version ?? '',
    kind: resource.kind ?? '',
    shortNames: resource.shortNames ?? [],
    categories: resource.categories ?? [],
    storageVersionHash: resource.storageVersionHash ?? '',
  };
  // A nil Verbs is not written; an empty one is (an empty message).
  if (resource.verbs !== null && resource.verbs !== undefined) out['verbs'] = { items: resource.verbs };
  return out;
}

/** The protobuf message of one APIGroup (no tag, no length). */
export function encodeGroupMessage(group: APIGroup): Buffer {
  const { APIGroup: type } = kubernetesProtoTypes();
  return Buffer.from(type.encode(type.fromObject(protoGroup(group))).finish());
}

/** The protobuf message of one GroupVersionForDiscovery. */
export function encodeGroupVersionMessage(gv: GroupVersionForDiscovery): Buffer {
  const { GroupVersionForDiscovery: type } = kubernetesProtoTypes();
  return Buffer.from(type.encode(type.fromObject(protoGroupVersion(gv))).finish());
}

/** The protobuf message of one APIResource. */
export function encodeResourceMessage(resource: APIResource): Buffer {
  const { APIResource: type } = kubernetesProtoTypes();
  return Buffer.from(type.encode(type.fromObject(protoResource(resource))).finish());
}

/** A legacy document's protobuf body: magic prefix and runtime.Unknown envelope (apiVersion v1). */
export function encodeLegacyProtobuf(body: LegacyBody): Buffer {
  const types = kubernetesProtoTypes();
  let raw: Uint8Array;
  switch (body.kind) {
    case 'APIVersions':
      raw = types.APIVersions.encode(
        types.APIVersions.fromObject({ versions: body.document.versions, serverAddressByClientCIDRs: protoCidrs(body.document.serverAddressByClientCIDRs) }),
      ).finish();
      break;
    case 'APIGroupList':
      raw = types.APIGroupList.encode(types.APIGroupList.fromObject({ groups: body.document.groups.map(protoGroup) })).finish();
      break;
    case 'APIGroup':
      raw = encodeGroupMessage(body.document);
      break;
    case 'APIResourceList':
      raw = types.APIResourceList.encode(
        types.APIResourceList.fromObject({ groupVersion: body.document.groupVersion, resources: body.document.resources.map(protoResource) }),
      ).finish();
      break;
  }
  const envelope = types.Unknown.encode(
    types.Unknown.fromObject({ typeMeta: { apiVersion: 'v1', kind: body.kind }, raw, contentEncoding: '', contentType: '' }),
  ).finish();
  return Buffer.concat([PROTOBUF_MAGIC, envelope]);
}

const LEGACY_KINDS = new Set<string>(['APIVersions', 'APIGroupList', 'APIGroup', 'APIResourceList']);

/** Reads a protobuf legacy document (kind from its envelope, which must say apiVersion v1); throws on anything else. */
export function decodeLegacyProtobuf(body: Buffer): LegacyBody {
  if (body.length < PROTOBUF_MAGIC.length || !body.subarray(0, PROTOBUF_MAGIC.length).equals(PROTOBUF_MAGIC)) throw new Error('not a Kubernetes protobuf body');
  const types = kubernetesProtoTypes();
  const options = { longs: Number, arrays: true, bytes: Buffer };
  const envelope = types.Unknown.toObject(types.Unknown.decode(body.subarray(PROTOBUF_MAGIC.length)), options) as {
    typeMeta?: { apiVersion?: string; kind?: string };
    raw?: Uint8Array;
    contentEncoding?: string;
  };
  const kind = envelope.typeMeta?.kind ?? '';
  if (envelope.typeMeta?.apiVersion !== 'v1' || !LEGACY_KINDS.has(kind) || (envelope.contentEncoding ?? '') !== '') {
    throw new Error(`unexpected protobuf type ${envelope.typeMeta?.apiVersion}/${kind}`);
  }
  const raw = envelope.raw ?? new Uint8Array();
  const read = (type: keyof typeof types): Fields => types[type].toObject(types[type].decode(raw), options) as Fields;
  switch (kind) {
    case 'APIVersions': {
      const m = read('APIVersions');
      return { kind, document: { kind, versions: strings(m['versions']), serverAddressByClientCIDRs: cidrsOf(m['serverAddressByClientCIDRs']) } };
    }
    case 'APIGroupList':
      return { kind, document: { kind, apiVersion: 'v1', groups: list(read('APIGroupList')['groups']).map(groupOf) } };
    case 'APIGroup':
      return { kind, document: { kind, apiVersion: 'v1', ...groupOf(read('APIGroup')) } };
    default: {
      const m = read('APIResourceList');
      return {
        kind: 'APIResourceList',
        document: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: str(m['groupVersion']), resources: list(m['resources']).map(resourceOf) },
      };
    }
  }
}

function list(value: unknown): Fields[] {
  return Array.isArray(value) ? (value as Fields[]) : [];
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function cidrsOf(value: unknown): ServerAddressByClientCIDR[] | null {
  const cidrs = list(value).map((c) => ({ clientCIDR: str(c['clientCIDR']), serverAddress: str(c['serverAddress']) }));
  return cidrs.length === 0 ? null : cidrs;
}

function groupVersionOf(value: unknown): GroupVersionForDiscovery {
  const gv = (value ?? {}) as Fields;
  return { groupVersion: str(gv['groupVersion']), version: str(gv['version']) };
}

function groupOf(m: Fields): APIGroup {
  const group: APIGroup = { name: str(m['name']), versions: list(m['versions']).map(groupVersionOf), preferredVersion: groupVersionOf(m['preferredVersion']) };
  const cidrs = cidrsOf(m['serverAddressByClientCIDRs']);
  if (cidrs !== null) group.serverAddressByClientCIDRs = cidrs;
  return group;
}

function resourceOf(m: Fields): APIResource {
  const verbs = m['verbs'] as Fields | undefined;
  const resource: APIResource = {
    name: str(m['name']),
    singularName: str(m['singularName']),
    namespaced: m['namespaced'] === true,
    kind: str(m['kind']),
    verbs: verbs === undefined ? null : strings(verbs['items']),
  };
  for (const name of ['group', 'version', 'storageVersionHash'] as const) if (str(m[name]) !== '') resource[name] = str(m[name]);
  for (const name of ['shortNames', 'categories'] as const) if (strings(m[name]).length > 0) resource[name] = strings(m[name]);
  return resource;
}
