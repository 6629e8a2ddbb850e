// A DER (ASN.1) reader over linear memory: one element (tag, content) at a
// time, definite minimal lengths only, every read bounds-checked; the
// universal tags mvproxy reads, and OID checks.

export let tlvTag: i32 = 0;
export let tlvStart: usize = 0;
export let tlvEnd: usize = 0;

/** Reads the element at `at`, which must end by `limit`. Sets tlvTag/tlvStart/tlvEnd. */
export function readTlv(at: usize, limit: usize): bool {
  if (at >= limit || limit - at < 2) return false;
  const tag = <i32>load<u8>(at);
  if ((tag & 0x1f) == 0x1f) return false;
  let len: usize = <usize>load<u8>(at + 1);
  let start = at + 2;
  if (len & 0x80) {
    const octets = len & 0x7f;
    if (octets == 0 || octets > 3) return false; // indefinite, or longer than 16 MiB
    if (limit - start < octets) return false;
    len = 0;
    for (let i: usize = 0; i < octets; i++) len = (len << 8) | <usize>load<u8>(start + i);
    start += octets;
    // DER: the shortest form, no leading zero octet.
    if (len < 0x80) return false;
    if (octets > 1 && (len >>> ((octets - 1) * 8)) == 0) return false;
  }
  if (limit - start < len) return false;
  tlvTag = tag;
  tlvStart = start;
  tlvEnd = start + len;
  return true;
}

export function expectTlv(at: usize, limit: usize, tag: i32): bool {
  return readTlv(at, limit) && tlvTag == tag;
}

export const TAG_BOOLEAN = 0x01;
export const TAG_INTEGER = 0x02;
export const TAG_BIT_STRING = 0x03;
export const TAG_OCTET_STRING = 0x04;
export const TAG_OID = 0x06;
export const TAG_UTF8_STRING = 0x0c;
export const TAG_NUMERIC_STRING = 0x12;
export const TAG_PRINTABLE_STRING = 0x13;
export const TAG_T61_STRING = 0x14;
export const TAG_IA5_STRING = 0x16;
export const TAG_UTC_TIME = 0x17;
export const TAG_GENERALIZED_TIME = 0x18;
export const TAG_BMP_STRING = 0x1e;
export const TAG_SEQUENCE = 0x30;
export const TAG_SET = 0x31;

/** A well-formed OID encoding: non-empty, no padded or truncated arc. */
export function validOid(start: usize, end: usize): bool {
  if (start >= end) return false;
  let arcStart = true;
  for (let p = start; p < end; p++) {
    const b = load<u8>(p);
    if (arcStart && b == 0x80) return false;
    arcStart = (b & 0x80) == 0;
  }
  return arcStart;
}

/** Whether the OID content at [start, end) is the one encoded in `oid`. */
export function oidIs(start: usize, end: usize, oid: StaticArray<u8>): bool {
  const n = <usize>oid.length;
  if (end - start != n) return false;
  return memory.compare(start, changetype<usize>(oid), n) == 0;
}
