// The plugin configuration of a document filter (envoy/filters, the document
// module): the peer part of one merged document (discovery/peerPart.ts),
// pre-encoded for the filter to splice into the local apiserver's document at
// every request, as the bytes of a google.protobuf.BytesValue. Pure; the
// decoder is envoy/filters/assembly/documents.ts.
//
// Layout (version 4), little-endian, every length a u32 byte count:
//   offset 0  "MVPD"
//          4  u8 version = 4
//          5  u8 kind: 0 core discovery (/api), 1 group discovery (/apis), 2 OpenAPI v3 index (/openapi/v3)
//          6  64 bytes: the peer digest, lowercase hex SHA-256 of every byte from offset 70 on
//         70  the peer sections:
//   kinds 0 and 1: u32 group count, then per group a node; a node is
//     u32 len + name (metadata.name, version, resource, subresource: as JSON and protobuf both carry it)
//     u32 len + JSON fragment: the whole aggregated entry as Go's encoding/json writes it (goJsonOrder.ts)
//     u32 len + protobuf fragment: the whole aggregated message as protobufEncode.ts encodes it (no tag, no length)
//     u32 len + legacy JSON fragment, u32 len + legacy protobuf fragment (below)
//     groups, versions and resources then: u32 child count + the children
//     (a group's versions, a version's resources, a resource's subresources)
//   kind 2: u32 path count, then per path, in ascending byte order:
//     u32 len + key (as JSON writes it, without the quotes), u32 len + the JSON value
// Nothing follows. Aggregated: the filter uses a group's fragment when the
// local document lacks the group, a version's when the local group lacks the
// version, a resource's when the local version lacks it, and a
// subresource's when the local resource lacks it (appended to the local
// entry's "subresources", the field made when the entry has none).
// Legacy fragments (meta/v1, as kube-apiserver writes them; the entries
// client-go's SplitGroupsAndResources derives from the aggregated entries):
//   group: APIGroup {name, versions (the node's), preferredVersion (its first
//     built-in one, else its first)} (JSON object; protobuf message) for
//     APIGroupList when the local lacks the group
//   version: of a named group, GroupVersionForDiscovery {groupVersion "g/v", version}
//     for APIGroupList and APIGroup when the local group lacks the version; of the
//     core group, the version as a JSON string ("v2" with quotes) and, in
//     protobuf, its bare UTF-8 bytes (an item of APIVersions.versions)
//   resource: APIResource {name = resource, singularName, namespaced, group and
//     version (of responseKind, when not empty), kind, verbs, shortNames, categories}
//   subresource: APIResource {name = "resource/subresource", singularName and
//     namespaced of its resource, group, version and kind of its responseKind, verbs}
//   a resource or subresource without a responseKind (client-go drops it),
//     a stale version and every node under it (client-go skips it), and the
//     core group's node (APIVersions lists versions only): both legacy
//     fragments empty (zero bytes): the filter adds nothing for it. A group's
//     APIGroup lists its versions that are not stale (none: empty fragments).
//   legacy-only nodes: after a group's versions, the local built-in versions
//     it lacks; after the groups, the local built-in groups the part lacks,
//     each with its versions (discovery/legacy.ts legacyGroupAdditions, of
//     AggregatedPeerPart localBuiltIn): both aggregated fragments empty, so
//     only legacy /apis and /apis/{g} gain them, where the local apiserver's
//     answer lacks them (its APIService was deleted by another apiserver).
// APIResourceList (/api/{v}, /apis/{g}/{v}): after the local entries, the
// version's resources and subresources whose legacy name the local list
// lacks, each resource followed by its subresources. A part with no groups
// (or paths) is still a set: the filter answers the local document with the
// merged ETag (aggregated and OpenAPI; legacy answers carry no ETag). An
// empty configuration (zero bytes, not an empty set) means "nothing held":
// the filter lets the local answer through untouched.
import { createHash } from 'node:crypto';
import type { APIGroupDiscovery, APIResourceDiscovery, APISubresourceDiscovery, APIVersionDiscovery } from '../model/discovery.js';
import type { MergedDocument } from '../model/requestInfo.js';
import type { AggregatedPeerPart, OpenApiPeerPart, PeerPart } from '../discovery/peerPart.js';
import { goOrderedList } from '../discovery/goJsonOrder.js';
import { groupVersionString, legacyGroupAdditions, legacyResourceOf, legacySubresourceOf } from '../discovery/legacy.js';
import {
  encodeGroupMessage,
  encodeGroupVersionMessage,
  encodeResourceMessage,
  goJsonText,
  goOrderedGroup,
  goOrderedGroupVersion,
  goOrderedResource,
} from '../discovery/legacyWire.js';
import { encodeAggregatedProtobuf, PROTOBUF_MAGIC } from '../discovery/protobufEncode.js';
import { compareStrings } from '../util/order.js';

/** The merged documents (src/model/requestInfo.ts MergedDocument). */
export type DocumentKind = MergedDocument;

export const DOCUMENT_SET_MAGIC = 'MVPD';
export const DOCUMENT_SET_VERSION = 4;
const HEADER_BYTES = 70;

const KINDS: readonly DocumentKind[] = ['core-discovery', 'group-discovery', 'openapi-index'];

/** The plugin configuration bytes for a peer part. */
export function encodeDocumentSet(part: PeerPart): Buffer {
  const sections = peerSections(part);
  const head = Buffer.alloc(6);
  head.write(DOCUMENT_SET_MAGIC, 0, 'latin1');
  head.writeUInt8(DOCUMENT_SET_VERSION, 4);
  head.writeUInt8(KINDS.indexOf(part.document), 5);
  return Buffer.concat([head, Buffer.from(sha256Hex(sections), 'latin1'), sections]);
}

/**
 * The peer digest of a part (64 lowercase hex digits): what mergedEtag
 * (discovery/peerPart.ts) takes with the local ETag, the same the filter
 * reads from the set.
 */
export function documentSetDigest(part: PeerPart): string {
  return sha256Hex(peerSections(part));
}

function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function peerSections(part: PeerPart): Buffer {
  const out: Buffer[] = [];
  if (part.document === 'openapi-index') openApiSections(part, out);
  else aggregatedSections(part, out);
  return Buffer.concat(out);
}

function u32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32LE(value, 0);
  return out;
}

function field(out: Buffer[], bytes: Buffer): void {
  out.push(u32(bytes.length), bytes);
}

function aggregatedSections(part: AggregatedPeerPart, out: Buffer[]): void {
  const additions = new Map(legacyGroupAdditions(part).map((a) => [a.name, a]));
  const builtInGroups = [...additions.values()].filter((a) => a.peer === undefined);
  out.push(u32(part.groups.length + builtInGroups.length));
  for (const group of part.groups) {
    const name = group.metadata.name;
    const addition = additions.get(name);
    node(out, name, { group }, name === '' ? EMPTY_LEGACY : legacyFragments(addition?.group, goOrderedGroup, encodeGroupMessage));
    const builtInOnly = addition?.builtInOnly ?? [];
    out.push(u32(group.versions.length + builtInOnly.length));
    for (const version of group.versions) {
      // Legacy documents list a version unless it is stale (client-go skips it) and not built in (legacyGroupAdditions).
      const listed = name === '' ? version.freshness !== 'Stale' : (addition?.versions.some((v) => v.version === version.version) ?? false);
      node(out, version.version, { group, version }, listed ? legacyVersionFragments(name, version.version) : EMPTY_LEGACY);
      const stale = version.freshness === 'Stale';
      out.push(u32(version.resources.length));
      for (const resource of version.resources) {
        const legacy = stale ? undefined : legacyResourceOf(resource);
        node(out, resource.resource, { group, version, resource }, legacyFragments(legacy, goOrderedResource, encodeResourceMessage));
        const subresources = resource.subresources ?? [];
        out.push(u32(subresources.length));
        for (const subresource of subresources) {
          const legacySub = stale ? undefined : legacySubresourceOf(resource, subresource);
          node(out, subresource.subresource, { group, version, resource, subresource }, legacyFragments(legacySub, goOrderedResource, encodeResourceMessage));
        }
      }
    }
    for (const version of builtInOnly) legacyOnlyNode(out, version, legacyVersionFragments(name, version), 0);
  }
  for (const addition of builtInGroups) {
    legacyOnlyNode(out, addition.name, legacyFragments(addition.group, goOrderedGroup, encodeGroupMessage), addition.versions.length);
    for (const version of addition.versions) legacyOnlyNode(out, version.version, legacyVersionFragments(addition.name, version.version), 0);
  }
}

/** A node of legacy discovery only (a local built-in group or version): no aggregated fragments, so the aggregated merge adds nothing for it; then `children` child nodes. */
function legacyOnlyNode(out: Buffer[], name: string, legacy: LegacyFragments, children: number): void {
  field(out, Buffer.from(name, 'utf8'));
  field(out, Buffer.alloc(0));
  field(out, Buffer.alloc(0));
  field(out, legacy[0]);
  field(out, legacy[1]);
  out.push(u32(children));
}

/** A node's legacy JSON and protobuf fragments (both empty: nothing to add in legacy documents). */
type LegacyFragments = [json: Buffer, protobuf: Buffer];
const EMPTY_LEGACY: LegacyFragments = [Buffer.alloc(0), Buffer.alloc(0)];

function legacyFragments<T>(value: T | undefined, json: (value: T) => unknown, protobuf: (value: T) => Buffer): LegacyFragments {
  return value === undefined ? EMPTY_LEGACY : [Buffer.from(goJsonText(json(value)), 'utf8'), protobuf(value)];
}

/** A version's legacy fragments: of the core group, the bare version (an item of APIVersions.versions); else its GroupVersionForDiscovery. */
function legacyVersionFragments(group: string, version: string): LegacyFragments {
  if (group === '') return [Buffer.from(goJsonText(version), 'utf8'), Buffer.from(version, 'utf8')];
  return legacyFragments({ groupVersion: groupVersionString(group, version), version }, goOrderedGroupVersion, encodeGroupVersionMessage);
}

/** Where a node is: its group, and down to its version, resource and subresource. */
interface NodePath {
  group: APIGroupDiscovery;
  version?: APIVersionDiscovery;
  resource?: APIResourceDiscovery;
  subresource?: APISubresourceDiscovery;
}

/**
 * A node's name and fragments: its aggregated entry (the group, or its one
 * version, or that version's one resource, or that resource's one
 * subresource), encoded as kube-apiserver would in a list holding only it,
 * then its legacy fragments.
 */
function node(out: Buffer[], name: string, at: NodePath, legacy: LegacyFragments): void {
  const { group, version, resource, subresource } = at;
  const oneResource = resource && (subresource ? { ...resource, subresources: [subresource] } : resource);
  const oneVersion = version && (oneResource ? { ...version, resources: [oneResource] } : version);
  const items = [oneVersion ? { ...group, versions: [oneVersion] } : group];
  const list = { kind: 'APIGroupDiscoveryList' as const, apiVersion: 'apidiscovery.k8s.io/v2' as const, metadata: {}, items };
  type Ordered = { versions?: Array<{ resources?: Array<{ subresources?: unknown[] }> }> };
  const ordered = (goOrderedList(list) as { items: Ordered[] }).items[0];
  const orderedResource = ordered?.versions?.[0]?.resources?.[0];
  const json = subresource ? orderedResource?.subresources?.[0] : resource ? orderedResource : version ? ordered?.versions?.[0] : ordered;
  // Field numbers down from the list: items 2, versions 2, resources 2, subresources 8.
  const fieldPath = [2, ...(version ? [2] : []), ...(resource ? [2] : []), ...(subresource ? [8] : [])];
  field(out, Buffer.from(name, 'utf8'));
  field(out, Buffer.from(goJsonText(json), 'utf8'));
  field(out, protobufFragment(encodeAggregatedProtobuf(list), fieldPath));
  field(out, legacy[0]);
  field(out, legacy[1]);
}

/** The message at `fieldPath` (each the first field of that number of its parent) below the body's envelope raw. */
function protobufFragment(body: Buffer, fieldPath: readonly number[]): Buffer {
  let message = firstField(body.subarray(PROTOBUF_MAGIC.length), 2); // the envelope's raw
  for (const number of fieldPath) message = firstField(message, number);
  return Buffer.from(message);
}

function firstField(message: Buffer, number: number): Buffer {
  let at = 0;
  const varint = (): number => {
    let value = 0;
    let shift = 0;
    for (;;) {
      const byte = message[at++];
      if (byte === undefined) throw new Error('truncated protobuf');
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
      shift += 7;
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
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  throw new Error(`no field ${number}`);
}

function openApiSections(part: OpenApiPeerPart, out: Buffer[]): void {
  const paths = Object.entries(part.paths).sort(([a], [b]) => compareStrings(a, b));
  out.push(u32(paths.length));
  for (const [path, value] of paths) {
    field(out, Buffer.from(goJsonText(path).slice(1, -1), 'utf8'));
    field(out, Buffer.from(goJsonText(value), 'utf8'));
  }
}

/** A decoded node (tests, admin). */
export interface DecodedPeerNode {
  name: string;
  json: string;
  protobuf: Buffer;
  /** Legacy fragments: empty when the node adds nothing to legacy documents. */
  legacyJson: string;
  legacyProtobuf: Buffer;
  /** A group's versions, a version's resources, a resource's subresources; none for a subresource. */
  children: DecodedPeerNode[];
}

export interface DecodedDocumentSet {
  kind: DocumentKind;
  digest: string;
  groups: DecodedPeerNode[];
  paths: Array<{ key: string; value: string }>;
}

/** Reads a document set (tests, admin); throws on what the filter refuses. Empty bytes: undefined (nothing held). */
export function decodeDocumentSet(bytes: Buffer): DecodedDocumentSet | undefined {
  if (bytes.length === 0) return undefined;
  if (bytes.length < HEADER_BYTES + 4 || bytes.toString('latin1', 0, 4) !== DOCUMENT_SET_MAGIC) throw new Error('not a document set');
  if (bytes.readUInt8(4) !== DOCUMENT_SET_VERSION) throw new Error(`unsupported document set version ${bytes.readUInt8(4)}`);
  const kind = KINDS[bytes.readUInt8(5)];
  if (kind === undefined) throw new Error(`unknown document kind ${bytes.readUInt8(5)}`);
  const digest = bytes.toString('latin1', 6, HEADER_BYTES);
  if (digest !== sha256Hex(bytes.subarray(HEADER_BYTES))) throw new Error('the peer digest is not the SHA-256 of the peer part');
  let at = HEADER_BYTES;
  const count = (): number => {
    if (at + 4 > bytes.length) throw new Error(`truncated at byte ${at}`);
    const n = bytes.readUInt32LE(at);
    at += 4;
    return n;
  };
  const take = (): Buffer => {
    const len = count();
    if (at + len > bytes.length) throw new Error(`length ${len} at byte ${at - 4} runs past the end`);
    const out = bytes.subarray(at, at + len);
    at += len;
    return out;
  };
  const readNode = (depth: number): DecodedPeerNode => {
    const name = take().toString('utf8');
    const json = take().toString('utf8');
    const protobuf = Buffer.from(take());
    const legacyJson = take().toString('utf8');
    const legacyProtobuf = Buffer.from(take());
    const children: DecodedPeerNode[] = [];
    if (depth < 3) for (let n = count(); n > 0; n--) children.push(readNode(depth + 1));
    return { name, json, protobuf, legacyJson, legacyProtobuf, children };
  };
  const groups: DecodedPeerNode[] = [];
  const paths: Array<{ key: string; value: string }> = [];
  for (let n = count(); n > 0; n--) {
    if (kind === 'openapi-index') paths.push({ key: take().toString('utf8'), value: take().toString('utf8') });
    else groups.push(readNode(0));
  }
  if (at !== bytes.length) throw new Error(`${bytes.length - at} bytes after the peer part`);
  return { kind, digest, groups, paths };
}
