// Protobuf fields over bytes in linear memory, shared by the splicers
// (protobufSplice.ts aggregated discovery, legacyProtobuf.ts legacy
// discovery): the field reader, entry sizes, the unseen peer nodes as
// entries, and kube-apiserver's envelope ("k8s\0" + runtime.Unknown
// { 1 typeMeta, 2 raw, 3 contentEncoding, 4 contentType }) read and
// re-emitted around a raw message that changed.
import { N_SEEN, nodeAt } from "./documents";
import { outByte, outBytes, outVarint, varintSize } from "./out";

/** The last field read: number, wire type, and for length-delimited fields where its bytes are. */
export let fieldNumber: u32 = 0;
export let wireType: u32 = 0;
export let valueAt: usize = 0;
export let valueLen: usize = 0;

let varintOk = false;

export function readVarint(p: usize, limit: usize): u64 {
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
export let varintAt: usize = 0;

/** Reads the field at p (before limit); returns the position after it, or 0 (bad). */
export function readField(p: usize, limit: usize): usize {
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
export function entrySize(len: usize): usize {
  return 1 + varintSize(<u32>len) + len;
}

// A peer node as an entry: its fragment at `fragment` (N_PROTO or
// N_LEGACY_PROTO, a message without tag and length) when the local document
// lacks it (unseen); an empty fragment adds nothing.

/** The entry size the node adds (0: seen, or an empty fragment). */
export function unseenEntrySize(node: usize, fragment: usize): usize {
  const len = <usize>load<u32>(node + fragment + 4);
  return load<u32>(node + N_SEEN) == 0 && len != 0 ? entrySize(len) : 0;
}

/** Writes the entry the node adds: `tag`, length, fragment (nothing: seen, or an empty fragment). */
export function emitUnseenEntry(node: usize, tag: u8, fragment: usize): void {
  const len = <usize>load<u32>(node + fragment + 4);
  if (load<u32>(node + N_SEEN) != 0 || len == 0) return;
  outByte(tag);
  outVarint(<u32>len);
  outBytes(<usize>load<u32>(node + fragment), len);
}

/** The total entry size the nodes among `count` at `first` add. */
export function unseenSize(first: usize, count: u32, fragment: usize): usize {
  let size: usize = 0;
  for (let i: u32 = 0; i < count; i++) size += unseenEntrySize(nodeAt(first, i), fragment);
  return size;
}

/** Writes the entries the nodes among `count` at `first` add, in order. */
export function emitUnseen(first: usize, count: u32, tag: u8, fragment: usize): void {
  for (let i: u32 = 0; i < count; i++) emitUnseenEntry(nodeAt(first, i), tag, fragment);
}

/** The first length-delimited field 1 of the message [p, p + n) (its name), in valueAt/valueLen; false if malformed. Absent: the empty name. */
export function firstName(p: usize, n: usize): bool {
  const limit = p + n;
  while (p < limit) {
    const next = readField(p, limit);
    if (next == 0) return false;
    if (fieldNumber == 1 && wireType == 2) return true;
    p = next;
  }
  valueAt = p;
  valueLen = 0;
  return true;
}

const MAGIC: u32 = 0x0073386b; // "k8s\0"

/** The envelope's raw message (exactly one field 2), in rawAt/rawLen; false when the body is not an envelope. */
export let rawAt: usize = 0;
export let rawLen: usize = 0;

export function readEnvelope(body: usize, len: usize): bool {
  if (len < 4 || load<u32>(body) != MAGIC) return false;
  const limit = body + len;
  let p = body + 4;
  let raws = 0;
  while (p < limit) {
    const next = readField(p, limit);
    if (next == 0) return false;
    if (fieldNumber == 2 && wireType == 2) {
      rawAt = valueAt;
      rawLen = valueLen;
      raws++;
    }
    p = next;
  }
  return raws == 1;
}

/** Re-emits the envelope read by readEnvelope, its raw field now `newRawLen` bytes written by `emitRaw`. */
export function emitEnvelope(body: usize, len: usize, newRawLen: usize, emitRaw: () => void): void {
  outBytes(body, 4);
  const limit = body + len;
  let p = body + 4;
  while (p < limit) {
    const next = readField(p, limit);
    if (fieldNumber == 2 && wireType == 2) {
      outByte(0x12);
      outVarint(<u32>newRawLen);
      emitRaw();
    } else {
      outBytes(p, next - p);
    }
    p = next;
  }
}
