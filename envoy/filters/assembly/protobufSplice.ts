// The merge rule on aggregated discovery in protobuf (src/discovery/peerPart.ts;
// the JSON side is jsonSplice.ts). kube-apiserver's body:
//   "k8s\0" + runtime.Unknown { 1 typeMeta, 2 raw, 3 contentEncoding, 4 contentType }
//   raw = APIGroupDiscoveryList { 1 metadata, 2 items: APIGroupDiscovery }
//   APIGroupDiscovery { 1 metadata: ObjectMeta { 1 name, .. }, 2 versions: APIVersionDiscovery }
//   APIVersionDiscovery { 1 version, 2 resources: APIResourceDiscovery { 1 resource, .. }, 3 freshness }
// A strict scan finds each group's, version's and resource's name (marking
// the peer nodes the local document names) and computes the new length of
// every message that grows; the copy then re-emits the body with those
// lengths (minimal varints, as Go writes them) and the unseen peer messages
// (tag 2, length, the peer part's bytes) after the local entries of their
// level, before any field numbered above 2. Anything unexpected (wire type 3
// or 4, a length past its message, a varint over 32 bits, a group's versions
// before its metadata, no raw field): the splice fails, the local body passes.
import { N_CHILDREN, N_CHILD_COUNT, N_NAME, N_NAME_LEN, N_PROTO, N_PROTO_LEN, N_SEEN, nodeAt } from "./documents";
import { outByte, outBytes, outLen, outStart, outVarint, varintSize } from "./out";

let bad = false;
/** The last field read: number, wire type, and for length-delimited fields where its bytes are. */
let fieldNumber: u32 = 0;
let wireType: u32 = 0;
let valueAt: usize = 0;
let valueLen: usize = 0;

let peerGroups: usize = 0;
let peerGroupCount: u32 = 0;

// New message lengths, one per group and version message, in scan order (the copy reads them in the same order).
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

let varintOk = false;

function readVarint(p: usize, limit: usize): u64 {
  let v: u64 = 0;
  let shift: u64 = 0;
  varintAt = p;
  while (varintAt < limit && shift < 64) {
    const b = load<u8>(varintAt++);
    v |= (<u64>(b & 0x7f)) << shift;
    if ((b & 0x80) == 0) {
      varintOk = true;
      return v;
    }
    shift += 7;
  }
  varintOk = false;
  return 0;
}
let varintAt: usize = 0;

/** Reads the field at p (before limit); returns the position after it, or 0 (bad). */
function readField(p: usize, limit: usize): usize {
  const tag = readVarint(p, limit);
  if (!varintOk || tag > 0xffffffff) return 0;
  fieldNumber = <u32>(tag >> 3);
  wireType = <u32>(tag & 7);
  let q = varintAt;
  if (wireType == 0) {
    readVarint(q, limit);
    return varintOk ? varintAt : 0;
  }
  if (wireType == 1) return limit - q >= 8 ? q + 8 : 0;
  if (wireType == 5) return limit - q >= 4 ? q + 4 : 0;
  if (wireType != 2) return 0;
  const len = readVarint(q, limit);
  if (!varintOk || len > <u64>(limit - varintAt)) return 0;
  valueAt = varintAt;
  valueLen = <usize>len;
  return varintAt + valueLen;
}

/** The entry size of a length-delimited field numbered 1..15 with `len` bytes. */
function entrySize(len: usize): usize {
  return 1 + varintSize(<u32>len) + len;
}

/** The node among `count` at `first` named [p, p + n), marked seen; 0 if none. */
function findNamed(first: usize, count: u32, p: usize, n: usize): usize {
  for (let i: u32 = 0; i < count; i++) {
    const node = nodeAt(first, i);
    if (<usize>load<u32>(node + N_NAME_LEN) == n && memory.compare(<usize>load<u32>(node + N_NAME), p, n) == 0) {
      store<u32>(node + N_SEEN, 1);
      return node;
    }
  }
  return 0;
}

/** The total entry size of the unseen nodes among `count` at `first`. */
function unseenSize(first: usize, count: u32): usize {
  let size: usize = 0;
  for (let i: u32 = 0; i < count; i++) {
    const node = nodeAt(first, i);
    if (load<u32>(node + N_SEEN) == 0) size += entrySize(<usize>load<u32>(node + N_PROTO_LEN));
  }
  return size;
}

/** The first length-delimited field 1 of the message [p, p + n) (its name), in valueAt/valueLen; false if none. */
function firstName(p: usize, n: usize): bool {
  const limit = p + n;
  while (p < limit) {
    const next = readField(p, limit);
    if (next == 0) return false;
    if (fieldNumber == 1 && wireType == 2) return true;
    p = next;
  }
  valueAt = p;
  valueLen = 0;
  return true; // absent: the empty name
}

// ---------------------------------------------------------------------------
// Scan: the new length of each group and version message.

/** A version message; returns its new length. */
function scanVersion(p: usize, n: usize, group: usize): usize {
  const slot = reserveLength();
  const limit = p + n;
  let version: usize = 0;
  let named = false;
  while (p < limit && !bad) {
    const next = readField(p, limit);
    if (next == 0) {
      bad = true;
      break;
    }
    if (fieldNumber == 1 && wireType == 2) {
      named = true;
      if (group != 0) version = findNamed(<usize>load<u32>(group + N_CHILDREN), load<u32>(group + N_CHILD_COUNT), valueAt, valueLen);
    } else if (fieldNumber == 2 && wireType == 2) {
      if (!named) bad = true;
      const at = valueAt;
      const len = valueLen;
      if (version != 0 && firstName(at, len)) findNamed(<usize>load<u32>(version + N_CHILDREN), load<u32>(version + N_CHILD_COUNT), valueAt, valueLen);
    }
    p = next;
  }
  let size = n;
  if (version != 0) size += unseenSize(<usize>load<u32>(version + N_CHILDREN), load<u32>(version + N_CHILD_COUNT));
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
      group = findNamed(peerGroups, peerGroupCount, valueAt, valueLen);
    } else if (fieldNumber == 2 && wireType == 2) {
      if (!named) {
        bad = true;
        break;
      }
      const len = valueLen;
      const grown = scanVersion(valueAt, len, group);
      size += entrySize(grown) - entrySize(len);
    }
    p = next;
  }
  if (group != 0) size += unseenSize(<usize>load<u32>(group + N_CHILDREN), load<u32>(group + N_CHILD_COUNT));
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
      const grown = scanGroup(valueAt, len);
      size += entrySize(grown) - entrySize(len);
    }
    p = next;
  }
  return size + unseenSize(peerGroups, peerGroupCount);
}

// ---------------------------------------------------------------------------
// Copy

function emitUnseen(first: usize, count: u32): void {
  for (let i: u32 = 0; i < count; i++) {
    const node = nodeAt(first, i);
    if (load<u32>(node + N_SEEN) != 0) continue;
    const len = <usize>load<u32>(node + N_PROTO_LEN);
    outByte(0x12);
    outVarint(<u32>len);
    outBytes(<usize>load<u32>(node + N_PROTO), len);
  }
}

// What a message's copy inserts: 0 nothing, else the peer node whose unseen children (or, for the list, the peer groups) go in.
const MESSAGE_LIST: i32 = 0;
const MESSAGE_GROUP: i32 = 1;
const MESSAGE_VERSION: i32 = 2;

/** Copies a message, its field-2 entries re-emitted (groups and versions with their new lengths), the insertion before the first field above 2. */
function emitMessage(p: usize, n: usize, kind: i32, peer: usize): void {
  const limit = p + n;
  let inserted = false;
  while (p < limit) {
    const next = readField(p, limit);
    if (fieldNumber > 2 && !inserted) {
      insert(kind, peer);
      inserted = true;
    }
    if (fieldNumber == 2 && wireType == 2 && kind != MESSAGE_VERSION) {
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
        emitMessage(at, len, MESSAGE_GROUP, child);
      } else {
        if (peer != 0) child = childNamed(<usize>load<u32>(peer + N_CHILDREN), load<u32>(peer + N_CHILD_COUNT), at, len, false);
        emitMessage(at, len, MESSAGE_VERSION, child);
      }
    } else {
      outBytes(p, next - p);
    }
    p = next;
  }
  if (!inserted) insert(kind, peer);
}

function insert(kind: i32, peer: usize): void {
  if (kind == MESSAGE_LIST) emitUnseen(peerGroups, peerGroupCount);
  else if (peer != 0) emitUnseen(<usize>load<u32>(peer + N_CHILDREN), load<u32>(peer + N_CHILD_COUNT));
}

/** The peer node for the group (`group`: its name in its metadata) or version message [p, p + n), or 0. */
function childNamed(first: usize, count: u32, p: usize, n: usize, group: bool): usize {
  if (!firstName(p, n)) return 0;
  if (group && !firstName(valueAt, valueLen)) return 0;
  return findNamed(first, count, valueAt, valueLen);
}

const MAGIC: u32 = 0x0073386b; // "k8s\0"

/**
 * Splices the peer groups (`count` at `first`) into the local protobuf body
 * [body, body + len); the result is in out.ts (outLen bytes). Returns false
 * when the body is not one to splice. Every node's SEEN mark must be clear.
 */
export function spliceProtobuf(body: usize, len: usize, first: usize, count: u32): bool {
  if (len < 4 || load<u32>(body) != MAGIC) return false;
  bad = false;
  lengthCount = 0;
  peerGroups = first;
  peerGroupCount = count;
  // The envelope: exactly one raw field.
  const limit = body + len;
  let p = body + 4;
  let raw: usize = 0;
  let rawLen: usize = 0;
  let raws = 0;
  while (p < limit) {
    const next = readField(p, limit);
    if (next == 0) return false;
    if (fieldNumber == 2 && wireType == 2) {
      raw = valueAt;
      rawLen = valueLen;
      raws++;
    }
    p = next;
  }
  if (raws != 1) return false;
  const listLen = scanList(raw, rawLen);
  if (bad) return false;
  outStart(len + len / 8 + 1024);
  outBytes(body, 4);
  p = body + 4;
  while (p < limit) {
    const next = readField(p, limit);
    if (fieldNumber == 2 && wireType == 2) {
      outByte(0x12);
      outVarint(<u32>listLen);
      lengthNext = 0;
      emitMessage(raw, rawLen, MESSAGE_LIST, 0);
    } else {
      outBytes(p, next - p);
    }
    p = next;
  }
  return outLen > 0;
}
