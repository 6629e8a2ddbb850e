// The merge rule on aggregated discovery in protobuf (src/discovery/peerPart.ts;
// the JSON side is jsonSplice.ts). kube-apiserver's body:
//   "k8s\0" + runtime.Unknown { 1 typeMeta, 2 raw, 3 contentEncoding, 4 contentType }
//   raw = APIGroupDiscoveryList { 1 metadata, 2 items: APIGroupDiscovery }
//   APIGroupDiscovery { 1 metadata: ObjectMeta { 1 name, .. }, 2 versions: APIVersionDiscovery }
//   APIVersionDiscovery { 1 version, 2 resources: APIResourceDiscovery, 3 freshness }
//   APIResourceDiscovery { 1 resource, .., 8 subresources: APISubresourceDiscovery { 1 subresource, .. }, 9 .. }
// A strict scan finds each group's, version's, resource's and subresource's
// name (marking the peer nodes the local document names) and computes the
// new length of every message that grows; the copy then re-emits the body
// with those lengths (minimal varints, as Go writes them) and the unseen
// peer messages (tag, length, the peer part's bytes) after the local entries
// of their level: before any field numbered above 2 (a version's
// `freshness`), or, for subresources, above 8. Anything unexpected (wire type
// 3 or 4, a length past its message, a varint over 32 bits, a group's
// versions before its metadata, no raw field): the splice fails, the local
// body passes.
import { N_PROTO } from "./documents";
import { childCount, children, markNamed } from "./nodes";
import {
  emitEnvelope,
  emitUnseen,
  entrySize,
  fieldNumber,
  firstName,
  rawAt,
  rawLen,
  readEnvelope,
  readField,
  unseenSize,
  valueAt,
  valueLen,
  wireType,
} from "./protobufFields";
import { outByte, outBytes, outLen, outStart, outVarint } from "./out";

let bad = false;

let peerGroups: usize = 0;
let peerGroupCount: u32 = 0;

// New message lengths, one per group, version and resource message, in scan order (the copy reads them in the same order).
let lengths: usize = 0;
let lengthCap: usize = 0;
let lengthCount: usize = 0;
let lengthNext: usize = 0;

function reserveLength(): usize {
  if (lengthCount == lengthCap) {
    lengthCap = lengthCap == 0 ? 256 : lengthCap << 1;
    lengths = lengths == 0 ? heap.alloc(lengthCap * 4) : heap.realloc(lengths, lengthCap * 4);
  }
  return lengthCount++;
}

// ---------------------------------------------------------------------------
// Scan: the new length of each group, version and resource message.

/** A resource message of peer version `version`; returns its new length. */
function scanResource(p: usize, n: usize, version: usize): usize {
  const slot = reserveLength();
  const limit = p + n;
  let resource: usize = 0;
  let named = false;
  while (p < limit && !bad) {
    const next = readField(p, limit);
    if (next == 0) {
      bad = true;
      break;
    }
    if (fieldNumber == 1 && wireType == 2) {
      named = true;
      if (version != 0) resource = markNamed(children(version), childCount(version), valueAt, valueLen);
    } else if (fieldNumber == 8 && wireType == 2) {
      if (!named) bad = true;
      if (resource != 0 && firstName(valueAt, valueLen)) markNamed(children(resource), childCount(resource), valueAt, valueLen);
    }
    p = next;
  }
  let size = n;
  if (resource != 0) size += unseenSize(children(resource), childCount(resource), N_PROTO);
  store<u32>(lengths + slot * 4, <u32>size);
  return size;
}

/** A version message; returns its new length. */
function scanVersion(p: usize, n: usize, group: usize): usize {
  const slot = reserveLength();
  const limit = p + n;
  let version: usize = 0;
  let named = false;
  let size = n;
  while (p < limit && !bad) {
    const next = readField(p, limit);
    if (next == 0) {
      bad = true;
      break;
    }
    if (fieldNumber == 1 && wireType == 2) {
      named = true;
      if (group != 0) version = markNamed(children(group), childCount(group), valueAt, valueLen);
    } else if (fieldNumber == 2 && wireType == 2) {
      if (!named) bad = true;
      const len = valueLen;
      size += entrySize(scanResource(valueAt, len, version)) - entrySize(len);
    }
    p = next;
  }
  if (version != 0) size += unseenSize(children(version), childCount(version), N_PROTO);
  store<u32>(lengths + slot * 4, <u32>size);
  return size;
}

/** A group message; returns its new length. */
function scanGroup(p: usize, n: usize): usize {
  const slot = reserveLength();
  const limit = p + n;
  let group: usize = 0;
  let named = false;
  let size = n;
  while (p < limit && !bad) {
    const next = readField(p, limit);
    if (next == 0) {
      bad = true;
      break;
    }
    if (fieldNumber == 1 && wireType == 2) {
      named = true;
      if (!firstName(valueAt, valueLen)) {
        bad = true;
        break;
      }
      group = markNamed(peerGroups, peerGroupCount, valueAt, valueLen);
    } else if (fieldNumber == 2 && wireType == 2) {
      if (!named) {
        bad = true;
        break;
      }
      const len = valueLen;
      size += entrySize(scanVersion(valueAt, len, group)) - entrySize(len);
    }
    p = next;
  }
  if (group != 0) size += unseenSize(children(group), childCount(group), N_PROTO);
  store<u32>(lengths + slot * 4, <u32>size);
  return size;
}

/** The list message; returns its new length. */
function scanList(p: usize, n: usize): usize {
  const limit = p + n;
  let size = n;
  while (p < limit && !bad) {
    const next = readField(p, limit);
    if (next == 0) {
      bad = true;
      break;
    }
    if (fieldNumber == 2 && wireType == 2) {
      const len = valueLen;
      size += entrySize(scanGroup(valueAt, len)) - entrySize(len);
    }
    p = next;
  }
  return size + unseenSize(peerGroups, peerGroupCount, N_PROTO);
}

// ---------------------------------------------------------------------------
// Copy

// The message being copied: its children are re-emitted with new lengths (but a resource's), and what it inserts.
const MESSAGE_LIST: i32 = 0;
const MESSAGE_GROUP: i32 = 1;
const MESSAGE_VERSION: i32 = 2;
const MESSAGE_RESOURCE: i32 = 3;

/**
 * Copies a message: its field-2 entries (groups, versions, resources) are
 * re-emitted with their new lengths, and the unseen peer entries of its
 * level go before its first field above the level's field (2; 8 for a
 * resource's subresources), or at its end.
 */
function emitMessage(p: usize, n: usize, kind: i32, peer: usize): void {
  const limit = p + n;
  const after: u32 = kind == MESSAGE_RESOURCE ? 8 : 2;
  let inserted = false;
  while (p < limit) {
    const next = readField(p, limit);
    if (fieldNumber > after && !inserted) {
      insert(kind, peer);
      inserted = true;
    }
    if (fieldNumber == 2 && wireType == 2 && kind != MESSAGE_RESOURCE) {
      const at = valueAt;
      const len = valueLen;
      const grown = <usize>load<u32>(lengths + lengthNext * 4);
      lengthNext++;
      outByte(0x12);
      outVarint(<u32>grown);
      // The child's peer node: found again by name (marks are already final).
      let child: usize = 0;
      if (kind == MESSAGE_LIST) {
        child = childNamed(peerGroups, peerGroupCount, at, len, true);
      } else if (peer != 0) {
        child = childNamed(children(peer), childCount(peer), at, len, false);
      }
      emitMessage(at, len, kind + 1, child);
    } else {
      outBytes(p, next - p);
    }
    p = next;
  }
  if (!inserted) insert(kind, peer);
}

function insert(kind: i32, peer: usize): void {
  if (kind == MESSAGE_LIST) emitUnseen(peerGroups, peerGroupCount, 0x12, N_PROTO);
  else if (peer != 0) emitUnseen(children(peer), childCount(peer), kind == MESSAGE_RESOURCE ? 0x42 : 0x12, N_PROTO);
}

/** The peer node for the group (`group`: its name in its metadata), version or resource message [p, p + n), or 0. */
function childNamed(first: usize, count: u32, p: usize, n: usize, group: bool): usize {
  if (!firstName(p, n)) return 0;
  if (group && !firstName(valueAt, valueLen)) return 0;
  return markNamed(first, count, valueAt, valueLen);
}

function emitRaw(): void {
  lengthNext = 0;
  emitMessage(rawAt, rawLen, MESSAGE_LIST, 0);
}

/**
 * Splices the peer groups (`count` at `first`) into the local protobuf body
 * [body, body + len); the result is in out.ts (outLen bytes). Returns false
 * when the body is not one to splice. Every node's SEEN mark must be clear.
 */
export function spliceProtobuf(body: usize, len: usize, first: usize, count: u32): bool {
  if (!readEnvelope(body, len)) return false;
  bad = false;
  lengthCount = 0;
  peerGroups = first;
  peerGroupCount = count;
  const listLen = scanList(rawAt, rawLen);
  if (bad) return false;
  outStart(len + len / 8 + 1024);
  emitEnvelope(body, len, listLen, emitRaw);
  return outLen > 0;
}
