// Protobuf fields over bytes in linear memory, shared by the splicers
// (protobufSplice.ts aggregated discovery, legacyProtobuf.ts legacy
// discovery): the field reader, entry sizes, and kube-apiserver's envelope
// ("k8s\0" + runtime.Unknown { 1 typeMeta, 2 raw, 3 contentEncoding,
// 4 contentType }) read and re-emitted around a raw message that changed.
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
