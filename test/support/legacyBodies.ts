// Legacy discovery (meta/v1) bodies for the document filter's tests: the
// local apiserver's JSON and protobuf ("k8s\0" envelope) of APIVersions,
// APIGroupList, APIGroup and APIResourceList; protobuf read back into the
// same objects by the control plane's decoder (src/discovery/legacyWire.ts);
// and the merge rule in objects and in protobuf bytes, from the set's nodes
// (what the filter adds is their legacy fragments, whichever encoder wrote
// them).
import type { APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery } from '../../src/model/legacyDiscovery.js';
import {
  type LegacyBody,
  decodeLegacyProtobuf,
  encodeGroupMessage as apiGroupProtobuf,
  encodeGroupVersionMessage as groupVersionProtobuf,
  encodeResourceMessage as apiResourceProtobuf,
} from '../../src/discovery/legacyWire.js';

/** One length-delimited protobuf field: tag, length, bytes. */
function pbField(number: number, value: Buffer | string): Buffer {
  const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value, 'utf8');
  return Buffer.concat([varint(number * 8 + 2), varint(bytes.length), bytes]);
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  for (; value >= 0x80; value = Math.floor(value / 128)) bytes.push((value & 0x7f) | 0x80);
  bytes.push(value);
  return Buffer.from(bytes);
}

export const LEGACY_JSON = 'application/json';
export const LEGACY_PROTOBUF = 'application/vnd.kubernetes.protobuf';

/** An APIGroup as kube-apiserver lists it: its versions, the first one preferred. */
export function legacyGroup(name: string, ...versions: [string, ...string[]]): APIGroup {
  const listed = versions.map((version) => ({ groupVersion: name === '' ? version : `${name}/${version}`, version }));
  return { name, versions: listed, preferredVersion: listed[0] };
}

export function jsonBody(document: object): Buffer {
  return Buffer.from(`${JSON.stringify(document)}\n`, 'utf8');
}

/** kube-apiserver's protobuf body: magic, runtime.Unknown { 1 typeMeta { 1 apiVersion, 2 kind }, 2 raw, 3 contentEncoding, 4 contentType }. */
export function envelope(kind: string, raw: Buffer): Buffer {
  const typeMeta = Buffer.concat([pbField(1, 'v1'), pbField(2, kind)]);
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), pbField(1, typeMeta), pbField(2, raw), pbField(3, ''), pbField(4, '')]);
}

export function versionsProtobuf(document: APIVersions): Buffer {
  return envelope('APIVersions', Buffer.concat(document.versions.map((v) => pbField(1, v))));
}

export function groupListProtobuf(document: APIGroupList): Buffer {
  return envelope('APIGroupList', Buffer.concat(document.groups.map((g) => pbField(1, apiGroupProtobuf(g)))));
}

export function groupProtobuf(document: APIGroup): Buffer {
  return envelope('APIGroup', apiGroupProtobuf(document));
}

export function resourceListProtobuf(document: APIResourceList): Buffer {
  return envelope('APIResourceList', Buffer.concat([pbField(1, document.groupVersion), ...document.resources.map((r) => pbField(2, apiResourceProtobuf(r)))]));
}

// ---------------------------------------------------------------------------
// Reading protobuf back: the control plane's decoder (it checks the magic, the envelope's v1 kind and the raw message)

type LegacyDocuments = { [B in LegacyBody as B['kind']]: B['document'] };

function decoded<K extends keyof LegacyDocuments>(body: Buffer, kind: K): LegacyDocuments[K] {
  const read = decodeLegacyProtobuf(body);
  if (read.kind !== kind) throw new Error(`a ${read.kind} body, not ${kind}`);
  return read.document as LegacyDocuments[K];
}

export function readVersions(body: Buffer): string[] {
  return decoded(body, 'APIVersions').versions;
}

export function readGroupList(body: Buffer): APIGroup[] {
  return decoded(body, 'APIGroupList').groups;
}

/** An APIGroup body's group, without its TypeMeta. */
export function readGroup(body: Buffer): APIGroup {
  const { kind: _kind, apiVersion: _apiVersion, ...group } = decoded(body, 'APIGroup');
  return group;
}

export function readResourceList(body: Buffer): APIResource[] {
  return decoded(body, 'APIResourceList').resources;
}

// ---------------------------------------------------------------------------
// The rule, from the set's nodes

/** A node of the set as the legacy merge reads it (the test encoder's or the control plane's decoded node). */
export interface LegacyNode {
  name: string;
  legacyJson: string | Buffer;
  legacyProtobuf: Buffer;
  children: LegacyNode[];
}

function legacyOf<T>(node: LegacyNode): T[] {
  return node.legacyJson.length === 0 ? [] : [JSON.parse(node.legacyJson.toString()) as T];
}

function unseen(nodes: LegacyNode[], seen: (name: string) => boolean): LegacyNode[] {
  return nodes.filter((n) => !seen(n.name) && n.legacyJson.length > 0);
}

/** The resources and subresources of a version node the local list lacks, each resource then its subresources. */
function addedResources(version: LegacyNode, names: Set<string>): LegacyNode[] {
  return version.children.flatMap((r) => [...unseen([r], (name) => names.has(name)), ...unseen(r.children, (name) => names.has(`${r.name}/${name}`))]);
}

export function versionsByRule(local: APIVersions, core: LegacyNode | undefined): APIVersions {
  const added = unseen(core?.children ?? [], (name) => local.versions.includes(name)).flatMap((v) => legacyOf<string>(v));
  return { ...local, versions: [...local.versions, ...added] };
}

export function groupByRule(local: APIGroup, node: LegacyNode | undefined): APIGroup {
  const names = new Set(local.versions.map((v) => v.version));
  const added = unseen(node?.children ?? [], (name) => names.has(name)).flatMap((v) => legacyOf<GroupVersionForDiscovery>(v));
  return { ...local, versions: [...local.versions, ...added] };
}

export function groupListByRule(local: APIGroupList, groups: LegacyNode[]): APIGroupList {
  const names = new Set(local.groups.map((g) => g.name));
  return {
    ...local,
    groups: [
      ...local.groups.map((g) =>
        groupByRule(
          g,
          groups.find((n) => n.name === g.name),
        ),
      ),
      ...unseen(groups, (name) => names.has(name)).flatMap((n) => legacyOf<APIGroup>(n)),
    ],
  };
}

export function resourceListByRule(local: APIResourceList, version: LegacyNode): APIResourceList {
  const names = new Set(local.resources.map((r) => r.name));
  return { ...local, resources: [...local.resources, ...addedResources(version, names).flatMap((n) => legacyOf<APIResource>(n))] };
}

// In protobuf: the local messages as the test encoders write them, the added ones the nodes' fragments as they are.

export function versionsProtobufByRule(local: APIVersions, core: LegacyNode | undefined): Buffer {
  const added = unseen(core?.children ?? [], (name) => local.versions.includes(name));
  return envelope('APIVersions', Buffer.concat([...local.versions.map((v) => pbField(1, v)), ...added.map((n) => pbField(1, n.legacyProtobuf))]));
}

function groupMessageByRule(local: APIGroup, node: LegacyNode | undefined): Buffer {
  const names = new Set(local.versions.map((v) => v.version));
  const added = unseen(node?.children ?? [], (name) => names.has(name));
  return Buffer.concat([
    pbField(1, local.name),
    ...local.versions.map((gv) => pbField(2, groupVersionProtobuf(gv))),
    ...added.map((n) => pbField(2, n.legacyProtobuf)),
    ...(local.preferredVersion ? [pbField(3, groupVersionProtobuf(local.preferredVersion))] : []),
  ]);
}

export function groupProtobufByRule(local: APIGroup, node: LegacyNode | undefined): Buffer {
  return envelope('APIGroup', groupMessageByRule(local, node));
}

export function groupListProtobufByRule(local: APIGroupList, groups: LegacyNode[]): Buffer {
  const names = new Set(local.groups.map((g) => g.name));
  return envelope(
    'APIGroupList',
    Buffer.concat([
      ...local.groups.map((g) =>
        pbField(
          1,
          groupMessageByRule(
            g,
            groups.find((n) => n.name === g.name),
          ),
        ),
      ),
      ...unseen(groups, (name) => names.has(name)).map((n) => pbField(1, n.legacyProtobuf)),
    ]),
  );
}

export function resourceListProtobufByRule(local: APIResourceList, version: LegacyNode): Buffer {
  const names = new Set(local.resources.map((r) => r.name));
  return envelope(
    'APIResourceList',
    Buffer.concat([
      pbField(1, local.groupVersion),
      ...local.resources.map((r) => pbField(2, apiResourceProtobuf(r))),
      ...addedResources(version, names).map((n) => pbField(2, n.legacyProtobuf)),
    ]),
  );
}
