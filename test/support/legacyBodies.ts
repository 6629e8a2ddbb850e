// Legacy discovery (meta/v1) bodies for the document filter's tests: the
// local apiserver's JSON and protobuf ("k8s\0" envelope) of APIVersions,
// APIGroupList, APIGroup and APIResourceList; protobuf read back into the
// same objects (src/discovery/legacyWire.ts); and the merge rule in
// objects and in protobuf bytes, from the set's nodes (what the filter adds
// is their legacy fragments, whichever encoder wrote them).
import type { APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery } from '../../src/model/legacyDiscovery.js';
import {
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
// Reading protobuf back

type Field = { number: number; bytes: Buffer; varint: number };

function fields(message: Buffer): Field[] {
  const out: Field[] = [];
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
    const number = Math.floor(tag / 8);
    if (tag % 8 === 0) out.push({ number, bytes: Buffer.alloc(0), varint: varint() });
    else if (tag % 8 === 2) {
      const len = varint();
      if (at + len > message.length) throw new Error('length past the message');
      out.push({ number, bytes: message.subarray(at, at + len), varint: 0 });
      at += len;
    } else throw new Error(`wire type ${tag % 8}`);
  }
  return out;
}

const text = (f: Field): string => f.bytes.toString('utf8');

/** The envelope's raw message (and it must be one). */
export function rawOf(body: Buffer): Buffer {
  if (body.subarray(0, 4).toString('latin1') !== 'k8s\0') throw new Error('no k8s magic');
  const raw = fields(body.subarray(4)).filter((f) => f.number === 2);
  if (raw.length !== 1 || !raw[0]) throw new Error('not one raw field');
  return raw[0].bytes;
}

function gvOf(message: Buffer): GroupVersionForDiscovery {
  const fs = fields(message);
  return {
    groupVersion: text(fs.find((f) => f.number === 1) ?? ({ bytes: Buffer.alloc(0) } as Field)),
    version: text(fs.find((f) => f.number === 2) ?? ({ bytes: Buffer.alloc(0) } as Field)),
  };
}

export function groupOf(message: Buffer): APIGroup {
  const fs = fields(message);
  const preferred = fs.find((f) => f.number === 3);
  return {
    name: fs.filter((f) => f.number === 1).map(text)[0] ?? '',
    versions: fs.filter((f) => f.number === 2).map((f) => gvOf(f.bytes)),
    ...(preferred ? { preferredVersion: gvOf(preferred.bytes) } : {}),
  };
}

function resourceOf(message: Buffer): APIResource {
  const fs = fields(message);
  const str = (n: number): string => fs.filter((f) => f.number === n).map(text)[0] ?? '';
  return { name: str(1), singularName: str(6), namespaced: fs.some((f) => f.number === 2 && f.varint === 1), kind: str(3), verbs: null };
}

export function readVersions(body: Buffer): string[] {
  return fields(rawOf(body))
    .filter((f) => f.number === 1)
    .map(text);
}

export function readGroupList(body: Buffer): APIGroup[] {
  return fields(rawOf(body))
    .filter((f) => f.number === 1)
    .map((f) => groupOf(f.bytes));
}

export function readResourceList(body: Buffer): APIResource[] {
  return fields(rawOf(body))
    .filter((f) => f.number === 2)
    .map((f) => resourceOf(f.bytes));
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
