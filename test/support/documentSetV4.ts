// A document set in layout version 4 (the header of src/xds/documentSet.ts)
// for the filter's tests, written here from a peer part until the control
// plane's encoder writes version 4: the aggregated fragments as
// kube-apiserver encodes them (goJsonOrder.ts, protobufEncode.ts), the
// legacy (meta/v1) fragments as the layout specifies them, subresource nodes
// under their resources. Legacy protobuf messages carry the fields the
// filter and these tests read (APIGroup 1 name, 2 versions, 3
// preferredVersion; GroupVersionForDiscovery 1 groupVersion, 2 version;
// APIResource 1 name, 2 namespaced, 3 kind, 6 singularName); the tests'
// local legacy bodies use the same encoders (legacyBodies.ts).
import { createHash } from 'node:crypto';

import type { APIGroupDiscovery, APIResourceDiscovery, APISubresourceDiscovery, APIVersionDiscovery } from '../../src/model/discovery.js';
import type { AggregatedPeerPart, PeerPart } from '../../src/discovery/peerPart.js';
import type { APIGroup, APIResource, GroupVersionForDiscovery } from '../../src/model/legacyDiscovery.js';
import { goOrderedList } from '../../src/discovery/goJsonOrder.js';
import { encodeAggregatedProtobuf, PROTOBUF_MAGIC } from '../../src/discovery/protobufEncode.js';

const KINDS = ['core-discovery', 'group-discovery', 'openapi-index'] as const;

/** One node of the set, as the filter reads it. */
export interface SetNode {
  name: string;
  json: Buffer;
  protobuf: Buffer;
  legacyJson: Buffer;
  legacyProtobuf: Buffer;
  children: SetNode[];
}

export function u32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32LE(value, 0);
  return out;
}

function field(bytes: Buffer): Buffer[] {
  return [u32(bytes.length), bytes];
}

function nodeBytes(node: SetNode, depth: number): Buffer[] {
  const out = [node.name, node.json, node.protobuf, node.legacyJson, node.legacyProtobuf].flatMap((b) =>
    field(Buffer.isBuffer(b) ? b : Buffer.from(b, 'utf8')),
  );
  if (depth < 3) out.push(u32(node.children.length), ...node.children.flatMap((child) => nodeBytes(child, depth + 1)));
  return out;
}

/** The peer sections of a part (what the digest covers). */
export function sectionsV4(part: PeerPart): Buffer {
  if (part.document === 'openapi-index') {
    const paths = Object.entries(part.paths).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return Buffer.concat([
      u32(paths.length),
      ...paths.flatMap(([key, value]) => [...field(Buffer.from(key, 'utf8')), ...field(Buffer.from(JSON.stringify(value), 'utf8'))]),
    ]);
  }
  return sectionsOfNodes(aggregatedNodes(part));
}

export function sectionsOfNodes(groups: SetNode[]): Buffer {
  return Buffer.concat([u32(groups.length), ...groups.flatMap((group) => nodeBytes(group, 0))]);
}

export function digestV4(part: PeerPart): string {
  return createHash('sha256').update(sectionsV4(part)).digest('hex');
}

/** The configuration bytes for a part (version 4). */
export function encodeDocumentSetV4(part: PeerPart): Buffer {
  return setOfSections(part.document, sectionsV4(part));
}

export function setOfSections(kind: PeerPart['document'], sections: Buffer, version = 4): Buffer {
  const head = Buffer.from([0x4d, 0x56, 0x50, 0x44, version, KINDS.indexOf(kind)]);
  return Buffer.concat([head, Buffer.from(createHash('sha256').update(sections).digest('hex'), 'latin1'), sections]);
}

// ---------------------------------------------------------------------------
// Aggregated fragments

function goJson(value: unknown): Buffer {
  return Buffer.from(
    JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    'utf8',
  );
}

function oneGroupList(group: APIGroupDiscovery): { json: Record<string, unknown>; protobuf: Buffer } {
  const list = { kind: 'APIGroupDiscoveryList' as const, apiVersion: 'apidiscovery.k8s.io/v2' as const, metadata: {}, items: [group] };
  return { json: goOrderedList(list), protobuf: encodeAggregatedProtobuf(list).subarray(PROTOBUF_MAGIC.length) };
}

/** The first length-delimited field `number` of a message. */
export function firstField(message: Buffer, number: number): Buffer {
  let at = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = message[at++];
      if (byte === undefined) throw new Error('truncated protobuf');
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
  };
  while (at < message.length) {
    const tag = varint();
    const wire = tag % 8;
    if (wire === 0) varint();
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const len = varint();
      if (Math.floor(tag / 8) === number) return message.subarray(at, at + len);
      at += len;
    } else throw new Error(`wire type ${wire}`);
  }
  throw new Error(`no field ${number}`);
}

/** Field numbers from the envelope to the message at each depth: raw, item, version, resource, subresource. */
const PATH_TO_DEPTH = [2, 2, 2, 2, 8];

function fragments(group: APIGroupDiscovery, depth: number): { json: Buffer; protobuf: Buffer } {
  const { json, protobuf } = oneGroupList(group);
  type Level = { versions?: Array<{ resources?: Array<{ subresources?: unknown[] }> }> };
  const g = (json.items as Level[])[0];
  const v = g?.versions?.[0];
  const r = v?.resources?.[0];
  const at = [g, v, r, r?.subresources?.[0]][depth];
  let message = protobuf;
  for (let i = 0; i <= depth + 1; i++) message = firstField(message, PATH_TO_DEPTH[i] ?? 2);
  return { json: goJson(at), protobuf: Buffer.from(message) };
}

// ---------------------------------------------------------------------------
// Legacy fragments (meta/v1)

function pbVarint(value: number): Buffer {
  const bytes: number[] = [];
  while (value >= 0x80) {
    bytes.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
  return Buffer.from(bytes);
}

export function pbField(number: number, value: Buffer | string): Buffer {
  const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value, 'utf8');
  return Buffer.concat([pbVarint(number * 8 + 2), pbVarint(bytes.length), bytes]);
}

function pbBool(number: number, value: boolean): Buffer {
  return value ? Buffer.from([number * 8, 1]) : Buffer.alloc(0);
}

export function groupVersionProtobuf(gv: GroupVersionForDiscovery): Buffer {
  return Buffer.concat([pbField(1, gv.groupVersion), pbField(2, gv.version)]);
}

export function apiGroupProtobuf(group: APIGroup): Buffer {
  return Buffer.concat([
    pbField(1, group.name),
    ...group.versions.map((gv) => pbField(2, groupVersionProtobuf(gv))),
    ...(group.preferredVersion ? [pbField(3, groupVersionProtobuf(group.preferredVersion))] : []),
  ]);
}

export function apiResourceProtobuf(resource: APIResource): Buffer {
  return Buffer.concat([pbField(1, resource.name), pbBool(2, resource.namespaced), pbField(3, resource.kind), pbField(6, resource.singularName)]);
}

function legacyGroup(group: APIGroupDiscovery): { json: Buffer; protobuf: Buffer } {
  const name = group.metadata.name ?? '';
  if (name === '') return { json: Buffer.alloc(0), protobuf: Buffer.alloc(0) };
  const versions = group.versions.map((v) => ({ groupVersion: `${name}/${v.version}`, version: v.version }));
  const preferred = versions[0];
  const legacy: APIGroup = { name, versions, ...(preferred ? { preferredVersion: preferred } : {}) };
  return { json: Buffer.from(JSON.stringify(legacy), 'utf8'), protobuf: apiGroupProtobuf(legacy) };
}

function legacyVersion(group: string, version: string): { json: Buffer; protobuf: Buffer } {
  if (group === '') return { json: Buffer.from(JSON.stringify(version), 'utf8'), protobuf: Buffer.from(version, 'utf8') };
  const gv = { groupVersion: `${group}/${version}`, version };
  return { json: Buffer.from(JSON.stringify(gv), 'utf8'), protobuf: groupVersionProtobuf(gv) };
}

function legacyResource(
  name: string,
  resource: APIResourceDiscovery,
  kind: APIResourceDiscovery['responseKind'],
  verbs: string[],
): { json: Buffer; protobuf: Buffer } {
  if (!kind) return { json: Buffer.alloc(0), protobuf: Buffer.alloc(0) };
  const legacy: APIResource = {
    name,
    singularName: resource.singularResource ?? '',
    namespaced: resource.scope === 'Namespaced',
    ...(kind.group ? { group: kind.group } : {}),
    ...(kind.version ? { version: kind.version } : {}),
    kind: kind.kind,
    verbs,
  };
  return { json: Buffer.from(JSON.stringify(legacy), 'utf8'), protobuf: apiResourceProtobuf(legacy) };
}

// ---------------------------------------------------------------------------
// Nodes

function subresourceNode(group: APIGroupDiscovery, version: APIVersionDiscovery, resource: APIResourceDiscovery, sub: APISubresourceDiscovery): SetNode {
  const one = { ...group, versions: [{ ...version, resources: [{ ...resource, subresources: [sub] }] }] };
  const legacy = legacyResource(`${resource.resource}/${sub.subresource}`, resource, sub.responseKind, sub.verbs ?? []);
  return { name: sub.subresource, ...fragments(one, 3), legacyJson: legacy.json, legacyProtobuf: legacy.protobuf, children: [] };
}

function resourceNode(group: APIGroupDiscovery, version: APIVersionDiscovery, resource: APIResourceDiscovery): SetNode {
  const one = { ...group, versions: [{ ...version, resources: [resource] }] };
  const legacy = legacyResource(resource.resource, resource, resource.responseKind, resource.verbs ?? []);
  const children = (resource.subresources ?? []).map((sub) => subresourceNode(group, version, resource, sub));
  return { name: resource.resource, ...fragments(one, 2), legacyJson: legacy.json, legacyProtobuf: legacy.protobuf, children };
}

function versionNode(group: APIGroupDiscovery, version: APIVersionDiscovery): SetNode {
  const one = { ...group, versions: [version] };
  const legacy = legacyVersion(group.metadata.name ?? '', version.version);
  const children = version.resources.map((resource) => resourceNode(group, version, resource));
  return { name: version.version, ...fragments(one, 1), legacyJson: legacy.json, legacyProtobuf: legacy.protobuf, children };
}

export function aggregatedNodes(part: AggregatedPeerPart): SetNode[] {
  return part.groups.map((group) => {
    const legacy = legacyGroup(group);
    const children = group.versions.map((version) => versionNode(group, version));
    return { name: group.metadata.name ?? '', ...fragments(group, 0), legacyJson: legacy.json, legacyProtobuf: legacy.protobuf, children };
  });
}
