// The merged document set of one plugin (root) context, read from
// the plugin configuration (format below; the encoder is
// src/xds/documentSet.ts). The set lives in unmanaged memory: the host's
// configuration buffer itself (bodies are served from it, never copied) and
// a small index with each variant's response header maps serialized once,
// so a request allocates nothing. Reference counted: the root context holds
// one reference, and every stream that will answer from the set holds one,
// so a reconfigure never frees documents a stream in flight still serves.
//
// Configuration (little-endian; every length a u32 byte count):
//   "MVPD"  u8 version (2)  u8 kind (0 core /api, 1 groups /apis, 2 OpenAPI v3 index)
//   u32 len + the local apiserver's own ETag for the document (len 0: none)
//   u32 variant count, then per variant:
//     u8 format (0 aggregated JSON, 1 aggregated protobuf, 2 plain JSON: the OpenAPI index)
//     u8 encoding (0 identity, 1 gzip)
//     u32 len + ETag (quoted, as sent)  u32 len + Content-Type  u32 len + body
// Nothing may follow the last variant. Kinds 0 and 1 take formats 0 and 1,
// kind 2 takes format 2; each (format, encoding) at most once.
import { addDebt } from "./gc";

export const KIND_CORE: u32 = 0;
export const KIND_GROUPS: u32 = 1;
export const KIND_OPENAPI: u32 = 2;

export const FORMAT_AGGREGATED_JSON: u32 = 0;
export const FORMAT_AGGREGATED_PROTOBUF: u32 = 1;
export const FORMAT_JSON: u32 = 2;

export const ENCODING_IDENTITY: u32 = 0;
export const ENCODING_GZIP: u32 = 1;

/** Three formats times two encodings; the stream state keeps one bit per variant. */
const MAX_VARIANTS: u32 = 6;

// The set (one unmanaged block): header, then one record per variant.
const SET_REFS: usize = 0;
const SET_KIND: usize = 4;
const SET_DATA: usize = 8;
const SET_COUNT: usize = 12;
const SET_LOCAL_ETAG: usize = 16;
const SET_LOCAL_ETAG_LEN: usize = 20;
const SET_VARIANTS: usize = 24;
export const V_FORMAT: usize = 0;
export const V_ENCODING: usize = 4;
export const V_BODY: usize = 8;
export const V_BODY_LEN: usize = 12;
export const V_ETAG: usize = 16;
export const V_ETAG_LEN: usize = 20;
export const V_H200: usize = 24;
export const V_H200_LEN: usize = 28;
export const V_H304: usize = 32;
export const V_H304_LEN: usize = 36;
const V_SIZE: usize = 40;

/** Why the last parseDocumentSet failed. */
export let documentsError = "";

export function setKind(set: usize): u32 {
  return load<u32>(set + SET_KIND);
}

export function setCount(set: usize): u32 {
  return load<u32>(set + SET_COUNT);
}

/** The local apiserver's own ETag for the document (in the configuration buffer), or 0. */
export function setLocalEtag(set: usize): usize {
  return <usize>load<u32>(set + SET_LOCAL_ETAG);
}

export function setLocalEtagLen(set: usize): usize {
  return <usize>load<u32>(set + SET_LOCAL_ETAG_LEN);
}

export function variantAt(set: usize, i: u32): usize {
  return set + SET_VARIANTS + <usize>i * V_SIZE;
}

/** The variant of `format` in `encoding`, or -1. */
export function findVariant(set: usize, format: u32, encoding: u32): i32 {
  const count = setCount(set);
  for (let i: u32 = 0; i < count; i++) {
    const v = variantAt(set, i);
    if (load<u32>(v + V_FORMAT) == format && load<u32>(v + V_ENCODING) == encoding) return <i32>i;
  }
  return -1;
}

export function acquire(set: usize): void {
  store<u32>(set + SET_REFS, load<u32>(set + SET_REFS) + 1);
}

export function release(set: usize): void {
  const refs = load<u32>(set + SET_REFS) - 1;
  store<u32>(set + SET_REFS, refs);
  if (refs != 0) return;
  const count = setCount(set);
  for (let i: u32 = 0; i < count; i++) {
    const v = variantAt(set, i);
    heap.free(<usize>load<u32>(v + V_H200));
    heap.free(<usize>load<u32>(v + V_H304));
  }
  heap.free(<usize>load<u32>(set + SET_DATA));
  heap.free(set);
}

function fail(message: string, offset: usize): usize {
  documentsError = message + " (at byte offset " + offset.toString() + ")";
  addDebt(64);
  return 0;
}

/** Whether [p, p + n) is a non-empty header value Envoy accepts (no control characters). */
function headerValue(p: usize, n: usize): bool {
  if (n == 0) return false;
  for (let i: usize = 0; i < n; i++) {
    const c = load<u8>(p + i);
    if ((c < 0x20 && c != 0x09) || c == 0x7f) return false;
  }
  return true;
}

/**
 * Reads the document set in the configuration bytes [data, data + size)
 * (a buffer from heap.alloc). On success returns the set (one reference,
 * the caller's), which now owns `data`; on failure returns 0, sets
 * documentsError, and `data` stays the caller's.
 */
export function parseDocumentSet(data: usize, size: usize): usize {
  if (size < 14) return fail("truncated header: " + size.toString() + " bytes, 14 needed", 0);
  if (load<u32>(data) != 0x4450564d) return fail('bad magic: not "MVPD"', 0);
  const version = load<u8>(data + 4);
  if (version != 2) return fail("unsupported version " + version.toString(), 4);
  const kind = <u32>load<u8>(data + 5);
  if (kind > KIND_OPENAPI) return fail("unknown document kind " + kind.toString(), 5);
  const localEtagLen = <usize>load<u32>(data + 6);
  if (<u64>localEtagLen > <u64>(size - 14)) return fail("local ETag length " + localEtagLen.toString() + " runs past the end", 6);
  if (localEtagLen > 0 && !headerValue(data + 10, localEtagLen)) return fail("the local ETag is not a header value", 10);
  const variantsAt: usize = 14 + localEtagLen;
  const count = load<u32>(data + variantsAt - 4);
  if (count > MAX_VARIANTS) return fail("variant count " + count.toString() + " above " + MAX_VARIANTS.toString(), variantsAt - 4);
  // First pass: validate everything before allocating.
  let at: usize = variantsAt;
  let seen: u32 = 0;
  for (let i: u32 = 0; i < count; i++) {
    const where = "variant " + i.toString() + ": ";
    if (size - at < 2) return fail(where + "truncated format/encoding", at);
    const format = <u32>load<u8>(data + at);
    if (format > FORMAT_JSON || (kind == KIND_OPENAPI) != (format == FORMAT_JSON)) {
      return fail(where + "format " + format.toString() + " not valid for document kind " + kind.toString(), at);
    }
    const encoding = <u32>load<u8>(data + at + 1);
    if (encoding > ENCODING_GZIP) return fail(where + "unknown encoding " + encoding.toString(), at + 1);
    const bit: u32 = 1 << (format * 2 + encoding);
    if ((seen & bit) != 0) return fail(where + "format and encoding repeated", at);
    seen |= bit;
    at += 2;
    for (let f = 0; f < 3; f++) {
      const field = f == 0 ? "ETag" : f == 1 ? "Content-Type" : "body";
      if (size - at < 4) return fail(where + field + " length truncated", at);
      const len = <usize>load<u32>(data + at);
      if (<u64>len > <u64>(size - at - 4)) return fail(where + field + " length " + len.toString() + " runs past the end", at);
      if (f < 2 && !headerValue(data + at + 4, len)) return fail(where + field + " is empty or not a header value", at + 4);
      at += 4 + len;
    }
  }
  if (at != size) return fail((size - at).toString() + " bytes after the last variant", at);

  const set = heap.alloc(SET_VARIANTS + <usize>count * V_SIZE);
  store<u32>(set + SET_REFS, 1);
  store<u32>(set + SET_KIND, kind);
  store<u32>(set + SET_DATA, <u32>data);
  store<u32>(set + SET_COUNT, count);
  store<u32>(set + SET_LOCAL_ETAG, localEtagLen > 0 ? <u32>(data + 10) : 0);
  store<u32>(set + SET_LOCAL_ETAG_LEN, <u32>localEtagLen);
  at = variantsAt;
  for (let i: u32 = 0; i < count; i++) {
    const v = variantAt(set, i);
    const format = <u32>load<u8>(data + at);
    const encoding = <u32>load<u8>(data + at + 1);
    at += 2;
    const etagLen = <usize>load<u32>(data + at);
    const etag = data + at + 4;
    at += 4 + etagLen;
    const typeLen = <usize>load<u32>(data + at);
    const type = data + at + 4;
    at += 4 + typeLen;
    const bodyLen = <usize>load<u32>(data + at);
    store<u32>(v + V_FORMAT, format);
    store<u32>(v + V_ENCODING, encoding);
    store<u32>(v + V_BODY, <u32>(data + at + 4));
    store<u32>(v + V_BODY_LEN, <u32>bodyLen);
    store<u32>(v + V_ETAG, <u32>etag);
    store<u32>(v + V_ETAG_LEN, <u32>etagLen);
    at += 4 + bodyLen;
    buildHeaders(v, kind == KIND_OPENAPI, encoding == ENCODING_GZIP, etag, etagLen, type, typeLen);
  }
  return set;
}

// ---------------------------------------------------------------------------
// Response headers, as src/discovery/response.ts sends them (and, for gzip,
// as kube-apiserver's deferredResponseWriter adds them).

const CONTENT_TYPE = String.UTF8.encode("content-type");
const ETAG = String.UTF8.encode("etag");
const VARY = String.UTF8.encode("vary");
const CACHE_CONTROL = String.UTF8.encode("cache-control");
const CONTENT_ENCODING = String.UTF8.encode("content-encoding");
const ACCEPT = String.UTF8.encode("Accept");
const ACCEPT_ENCODING = String.UTF8.encode("Accept-Encoding");
const PUBLIC = String.UTF8.encode("public");
const NO_CACHE_PRIVATE = String.UTF8.encode("no-cache, private");
const GZIP = String.UTF8.encode("gzip");

const keys = new StaticArray<usize>(8);
const keyLens = new StaticArray<usize>(8);
const values = new StaticArray<usize>(8);
const valueLens = new StaticArray<usize>(8);
let pairs: i32 = 0;

function add(key: ArrayBuffer, value: usize, valueLen: usize): void {
  unchecked((keys[pairs] = changetype<usize>(key)));
  unchecked((keyLens[pairs] = <usize>key.byteLength));
  unchecked((values[pairs] = value));
  unchecked((valueLens[pairs] = valueLen));
  pairs++;
}

function addConst(key: ArrayBuffer, value: ArrayBuffer): void {
  add(key, changetype<usize>(value), <usize>value.byteLength);
}

/** Serializes the pairs added since the last call (proxy-wasm map format) into a new unmanaged buffer at v + off. */
function emit(v: usize, off: usize): void {
  let size: usize = 4 + <usize>pairs * 8;
  for (let i = 0; i < pairs; i++) size += unchecked(keyLens[i]) + unchecked(valueLens[i]) + 2;
  const out = heap.alloc(size);
  store<u32>(out, pairs);
  let sizes = out + 4;
  let p = out + 4 + <usize>pairs * 8;
  for (let i = 0; i < pairs; i++) {
    const kl = unchecked(keyLens[i]);
    const vl = unchecked(valueLens[i]);
    store<u32>(sizes, <u32>kl);
    store<u32>(sizes, <u32>vl, 4);
    sizes += 8;
    memory.copy(p, unchecked(keys[i]), kl);
    store<u8>(p + kl, 0);
    p += kl + 1;
    memory.copy(p, unchecked(values[i]), vl);
    store<u8>(p + vl, 0);
    p += vl + 1;
  }
  store<u32>(v + off, <u32>out);
  store<u32>(v + off + 4, <u32>size);
  pairs = 0;
}

function buildHeaders(v: usize, openapi: bool, gzip: bool, etag: usize, etagLen: usize, type: usize, typeLen: usize): void {
  const cacheControl = openapi ? NO_CACHE_PRIVATE : PUBLIC;
  // 200
  add(CONTENT_TYPE, type, typeLen);
  add(ETAG, etag, etagLen);
  if (!openapi) addConst(VARY, ACCEPT);
  addConst(CACHE_CONTROL, cacheControl);
  if (gzip) {
    addConst(CONTENT_ENCODING, GZIP);
    addConst(VARY, ACCEPT_ENCODING);
  }
  emit(v, V_H200);
  // 304: ETag, Vary and Cache-Control, no body (and no content headers).
  add(ETAG, etag, etagLen);
  if (!openapi) addConst(VARY, ACCEPT);
  addConst(CACHE_CONTROL, cacheControl);
  emit(v, V_H304);
}
