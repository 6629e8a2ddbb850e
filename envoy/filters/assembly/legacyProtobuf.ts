// The merge rule on legacy discovery (meta/v1) in protobuf (the JSON side and
// the rule: legacyJson.ts). kube-apiserver's body: the "k8s\0" envelope
// (protobufFields.ts) around raw =
//   APIVersions { 1 versions (string), 2 serverAddressByClientCIDRs }
//   APIGroupList { 1 groups: APIGroup }
//   APIGroup { 1 name, 2 versions: GroupVersionForDiscovery { 1 groupVersion, 2 version }, 3 preferredVersion, 4 .. }
//   APIResourceList { 1 groupVersion, 2 resources: APIResource { 1 name, .. } }
// A scan marks the peer nodes the local document names and sizes what
// grows; the copy re-emits the envelope, the raw message and each group
// that grows with their new lengths (minimal varints), and the unseen peer
// entries (tag, length, the node's legacy protobuf fragment; empty ones add
// nothing) after the local entries of their level, before the first field
// numbered above the level's. Anything unexpected: the splice fails.
import { N_LEGACY_PROTO, nodeAt } from "./documents";
import { LEGACY_GROUP, LEGACY_GROUP_LIST, LEGACY_RESOURCE_LIST, LEGACY_VERSIONS } from "./legacyJson";
import { childCount, children, markLegacyName, markNamed, nodeNamed } from "./nodes";
import {
  emitEnvelope,
  emitUnseen,
  emitUnseenEntry,
  entrySize,
  fieldNumber,
  firstName,
  rawAt,
  rawLen,
  readEnvelope,
  readField,
  unseenEntrySize,
  unseenSize,
  valueAt,
  valueLen,
  wireType,
} from "./protobufFields";
import { outByte, outBytes, outLen, outStart, outVarint } from "./out";

let document: u32 = 0;
let peerGroups: usize = 0;
let peerGroupCount: u32 = 0;
let docNode: usize = 0;
let bad = false;

/** The entry size the version node's unseen resources add, each with its unseen subresources (APIResourceList). */
function resourcesSize(version: usize): usize {
  let size: usize = 0;
  for (let i: u32 = 0; i < childCount(version); i++) {
    const resource = nodeAt(children(version), i);
    size += unseenEntrySize(resource, N_LEGACY_PROTO) + unseenSize(children(resource), childCount(resource), N_LEGACY_PROTO);
  }
  return size;
}

/** Writes the version node's unseen resources, each followed by its unseen subresources. */
function emitResources(version: usize, tag: u8): void {
  for (let i: u32 = 0; i < childCount(version); i++) {
    const resource = nodeAt(children(version), i);
    emitUnseenEntry(resource, tag, N_LEGACY_PROTO);
    emitUnseen(children(resource), childCount(resource), tag, N_LEGACY_PROTO);
  }
}

/** The first length-delimited field `number` of [p, p + n) in valueAt/valueLen; false if none or malformed. */
function fieldOf(p: usize, n: usize, number: u32): bool {
  const limit = p + n;
  while (p < limit) {
    const next = readField(p, limit);
    if (next == 0) return false;
    if (fieldNumber == number && wireType == 2) return true;
    p = next;
  }
  return false;
}

/** The peer group a group message names (0: none), its versions marked. */
function scanGroup(p: usize, n: usize): usize {
  if (!firstName(p, n)) {
    bad = true;
    return 0;
  }
  const group = markNamed(peerGroups, peerGroupCount, valueAt, valueLen);
  const limit = p + n;
  while (p < limit) {
    const next = readField(p, limit);
    if (next == 0) {
      bad = true;
      return 0;
    }
    if (fieldNumber == 2 && wireType == 2 && group != 0) {
      const at = next;
      if (fieldOf(valueAt, valueLen, 2)) markNamed(children(group), childCount(group), valueAt, valueLen);
      p = at;
    } else {
      p = next;
    }
  }
  return group;
}

function groupGrowth(group: usize): usize {
  return group == 0 ? 0 : unseenSize(children(group), childCount(group), N_LEGACY_PROTO);
}

/** Scans the raw message; returns its new length. */
function scanRaw(p: usize, n: usize): usize {
  if (document == LEGACY_GROUP) return n + groupGrowth(scanGroup(p, n));
  const limit = p + n;
  let size = n;
  while (p < limit && !bad) {
    const next = readField(p, limit);
    if (next == 0) {
      bad = true;
      break;
    }
    if (wireType == 2) {
      if (document == LEGACY_VERSIONS && fieldNumber == 1) {
        if (docNode != 0) markNamed(children(docNode), childCount(docNode), valueAt, valueLen);
      } else if (document == LEGACY_GROUP_LIST && fieldNumber == 1) {
        const len = valueLen;
        size += entrySize(len + groupGrowth(scanGroup(valueAt, len))) - entrySize(len);
      } else if (document == LEGACY_RESOURCE_LIST && fieldNumber == 2) {
        const at = next;
        if (firstName(valueAt, valueLen)) markLegacyName(docNode, valueAt, valueLen);
        else bad = true;
        p = at;
        continue;
      }
    }
    p = next;
  }
  return size + topGrowth();
}

/** The level field (its entries' number) and what the raw message appends. */
function topField(): u32 {
  return document == LEGACY_RESOURCE_LIST ? 2 : 1;
}

function topGrowth(): usize {
  if (document == LEGACY_VERSIONS) return docNode == 0 ? 0 : unseenSize(children(docNode), childCount(docNode), N_LEGACY_PROTO);
  if (document == LEGACY_GROUP_LIST) return unseenSize(peerGroups, peerGroupCount, N_LEGACY_PROTO);
  return resourcesSize(docNode);
}

function emitTop(): void {
  const tag = <u8>((topField() << 3) | 2);
  if (document == LEGACY_VERSIONS) {
    if (docNode != 0) emitUnseen(children(docNode), childCount(docNode), tag, N_LEGACY_PROTO);
  } else if (document == LEGACY_GROUP_LIST) {
    emitUnseen(peerGroups, peerGroupCount, tag, N_LEGACY_PROTO);
  } else {
    emitResources(docNode, tag);
  }
}

/** Copies a group message with its node's unseen versions before its first field above 2. */
function emitGroup(p: usize, n: usize): void {
  const group = firstName(p, n) ? nodeNamed(peerGroups, peerGroupCount, valueAt, valueLen) : 0;
  const limit = p + n;
  let inserted = false;
  while (p < limit) {
    const next = readField(p, limit);
    if (fieldNumber > 2 && !inserted) {
      if (group != 0) emitUnseen(children(group), childCount(group), 0x12, N_LEGACY_PROTO);
      inserted = true;
    }
    outBytes(p, next - p);
    p = next;
  }
  if (!inserted && group != 0) emitUnseen(children(group), childCount(group), 0x12, N_LEGACY_PROTO);
}

function emitRaw(): void {
  if (document == LEGACY_GROUP) {
    emitGroup(rawAt, rawLen);
    return;
  }
  const limit = rawAt + rawLen;
  const level = topField();
  let p = rawAt;
  let inserted = false;
  while (p < limit) {
    const next = readField(p, limit);
    if (fieldNumber > level && !inserted) {
      emitTop();
      inserted = true;
    }
    if (document == LEGACY_GROUP_LIST && fieldNumber == 1 && wireType == 2) {
      const at = valueAt;
      const len = valueLen;
      const group = firstName(at, len) ? nodeNamed(peerGroups, peerGroupCount, valueAt, valueLen) : 0;
      outByte(0x0a);
      outVarint(<u32>(len + groupGrowth(group)));
      emitGroup(at, len);
    } else {
      outBytes(p, next - p);
    }
    p = next;
  }
  if (!inserted) emitTop();
}

/**
 * Splices the peer part into the local legacy protobuf body [body, body +
 * len) of `doc` (legacyJson.ts LEGACY_*; the arguments as spliceLegacyJson's).
 * The result is in out.ts (outLen bytes); false when the body is not one to
 * splice. Every SEEN mark must be clear.
 */
export function spliceLegacyProtobuf(body: usize, len: usize, doc: u32, first: usize, count: u32, node: usize): bool {
  if (!readEnvelope(body, len)) return false;
  document = doc;
  peerGroups = first;
  peerGroupCount = count;
  docNode = node;
  bad = false;
  if (doc == LEGACY_RESOURCE_LIST && node == 0) return false;
  const newRawLen = scanRaw(rawAt, rawLen);
  if (bad) return false;
  outStart(len + 1024);
  emitEnvelope(body, len, newRawLen, emitRaw);
  return outLen > 0;
}
