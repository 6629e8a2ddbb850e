// The document filter (root_id "mvproxy.discovery"): a
// stream of a route that enables it is a request for one merged document
// (/api, /apis or /openapi/v3; the route decides). Instead of the local
// apiserver's own document the client gets the one the control plane put in
// the plugin configuration (documents.ts), once the local apiserver has
// authenticated and authorized the request (its 200), as the ext_proc
// server (src/servers/extProc.ts, src/discovery/response.ts) does for a
// document over the push budget:
//   request headers: nothing held, or `profile=nopeer` in Accept: untouched.
//     Otherwise remember which variants If-None-Match names and whether the
//     client takes gzip (as kube-apiserver's negotiateContentEncoding: a
//     token exactly "gzip" in Accept-Encoding), and remove both headers so
//     the local apiserver answers uncompressed. When the set holds the local
//     apiserver's own ETag and the Accept leaves no doubt which format the
//     apiserver negotiates (revalidationFormat), send that ETag as
//     If-None-Match: the apiserver then answers an empty 304 once it has
//     authorized the request, instead of encoding a document that would be
//     dropped. Otherwise it answers 200 in full.
//   response headers: a 200 in a format the set holds (by the local
//     Content-Type, negotiated by the apiserver from the client's Accept),
//     or a 304 to the filter's own revalidation (in the format decided on
//     the request), is replaced: 304 if the client's If-None-Match named the
//     ETag, else 200 with the document (gzip variant when taken and held), as
//     a local response. A 200 to a revalidation (the local document changed
//     since the ETag was pushed) is handled as any 200.
// Per stream the state is two words in the stream table (streams.ts): the
// document set (one reference held) and flags. Nothing managed is allocated
// and nothing is logged per request. Every request seen is counted once
// (metrics.ts): merged (200 sent), not modified (304 sent) or local (the
// local answer went through untouched).
import {
  ACTION_CONTINUE,
  ACTION_PAUSE,
  MAP_HTTP_REQUEST_HEADERS,
  MAP_HTTP_RESPONSE_HEADERS,
  STATUS_OK,
  proxy_get_header_map_pairs,
  proxy_get_header_map_value,
  proxy_add_header_map_value,
  proxy_remove_header_map_value,
  proxy_send_local_response,
} from "./abi";
import {
  ENCODING_GZIP,
  ENCODING_IDENTITY,
  FORMAT_AGGREGATED_JSON,
  FORMAT_AGGREGATED_PROTOBUF,
  FORMAT_JSON,
  KIND_OPENAPI,
  V_BODY,
  V_BODY_LEN,
  V_ETAG,
  V_ETAG_LEN,
  V_H200,
  V_H200_LEN,
  V_H304,
  V_H304_LEN,
  acquire,
  findVariant,
  release,
  setCount,
  setKind,
  setLocalEtag,
  setLocalEtagLen,
  variantAt,
} from "./documents";
import { aggregatedFormat, equalsNameCI, hasNoPeer, revalidationFormat, takesGzip, trim, trimAt } from "./mediaRanges";
import { ANSWER_LOCAL, ANSWER_MERGED, ANSWER_NOT_MODIFIED, countAnswer, countRevalidated } from "./metrics";
import { pairKey, pairKeyLen, pairValue, pairValueLen, pairsBegin, pairsNext } from "./pairs";
import { streamState } from "./streams";

/**
 * Stream flags (state word 1): the client takes gzip; the filter revalidated
 * with the local ETag, and in which format (bits 8-9); the low bits: variants
 * the client's If-None-Match names.
 */
const FLAG_GZIP: u32 = 0x80000000;
const FLAG_REVALIDATED: u32 = 0x40000000;
const FORMAT_SHIFT: u32 = 8;

const ACCEPT = String.UTF8.encode("accept");
const IF_NONE_MATCH = String.UTF8.encode("if-none-match");
const ACCEPT_ENCODING = String.UTF8.encode("accept-encoding");
const STATUS = String.UTF8.encode(":status");
const CONTENT_TYPE = String.UTF8.encode("content-type");
const DETAILS = String.UTF8.encode("mvproxy_merged_document");

const RET: usize = memory.data(8, 8);

/** The variants whose ETag an If-None-Match value names (a list; `*`; W/ tags compare equal), one bit each. */
function matchMask(set: usize, p: usize, n: usize): u32 {
  const count = setCount(set);
  let mask: u32 = 0;
  let i: usize = 0;
  while (i <= n) {
    let end = i;
    while (end < n && load<u8>(p + end) != 0x2c) end++;
    let len = trim(p + i, end - i);
    let tag = trimAt;
    if (len == 1 && load<u8>(tag) == 0x2a) return (1 << count) - 1;
    if (len >= 2 && load<u8>(tag) == 0x57 && load<u8>(tag + 1) == 0x2f) {
      tag += 2;
      len -= 2;
    }
    for (let v: u32 = 0; v < count; v++) {
      const at = variantAt(set, v);
      const etagLen = <usize>load<u32>(at + V_ETAG_LEN);
      if (len == etagLen && memory.compare(tag, <usize>load<u32>(at + V_ETAG), len) == 0) mask |= 1 << v;
    }
    i = end + 1;
  }
  return mask;
}

/** The local answer goes through untouched: counted, continue. */
function passLocal(): i32 {
  countAnswer(ANSWER_LOCAL);
  return ACTION_CONTINUE;
}

export function documentRequestHeaders(contextId: u32, set: usize): i32 {
  if (set == 0 || setCount(set) == 0) return passLocal();
  const state = streamState(contextId);
  if (state == 0) return passLocal();
  if (load<u32>(state) != 0) return ACTION_CONTINUE; // already taken: counted at its response
  store<u32>(RET, 0);
  store<u32>(RET, 0, 4);
  if (proxy_get_header_map_pairs(MAP_HTTP_REQUEST_HEADERS, RET, RET + 4) != STATUS_OK) return passLocal();
  const pairs = <usize>load<u32>(RET);
  const pairsSize = <usize>load<u32>(RET, 4);
  let nopeer = false;
  let gzip = false;
  let accepts = 0;
  let format: i32 = -1;
  let mask: u32 = 0;
  let ifNoneMatch = false;
  let acceptEncoding = false;
  // An absent or empty map counts as unreadable here.
  let malformed = pairs == 0 || pairsSize < 4 || !pairsBegin(pairs, pairsSize);
  if (!malformed) {
    let r = pairsNext();
    for (; r > 0; r = pairsNext()) {
      const key = pairKey;
      const keyLen = pairKeyLen;
      const value = pairValue;
      const valueLen = pairValueLen;
      if (equalsNameCI(key, keyLen, ACCEPT)) {
        if (hasNoPeer(value, valueLen)) nopeer = true;
        // kube-apiserver reads the first Accept header only: with more, stay in doubt.
        if (++accepts == 1) format = revalidationFormat(value, valueLen);
      } else if (equalsNameCI(key, keyLen, IF_NONE_MATCH)) {
        ifNoneMatch = true;
        mask |= matchMask(set, value, valueLen);
      } else if (equalsNameCI(key, keyLen, ACCEPT_ENCODING)) {
        acceptEncoding = true;
        if (takesGzip(value, valueLen)) gzip = true;
      }
    }
    if (r < 0) malformed = true;
  }
  if (pairs != 0) heap.free(pairs);
  // Unreadable headers or the apiserver's own document asked for: the local answer goes through.
  if (malformed || nopeer) return passLocal();
  let flags = gzip ? mask | FLAG_GZIP : mask;
  if (ifNoneMatch) proxy_remove_header_map_value(MAP_HTTP_REQUEST_HEADERS, changetype<usize>(IF_NONE_MATCH), IF_NONE_MATCH.byteLength);
  if (acceptEncoding) proxy_remove_header_map_value(MAP_HTTP_REQUEST_HEADERS, changetype<usize>(ACCEPT_ENCODING), ACCEPT_ENCODING.byteLength);
  const localEtagLen = setLocalEtagLen(set);
  if (accepts == 1 && format >= 0 && localEtagLen > 0 && findVariant(set, <u32>format, ENCODING_IDENTITY) >= 0) {
    const added = proxy_add_header_map_value(
      MAP_HTTP_REQUEST_HEADERS,
      changetype<usize>(IF_NONE_MATCH),
      IF_NONE_MATCH.byteLength,
      setLocalEtag(set),
      localEtagLen,
    );
    if (added == STATUS_OK) flags |= FLAG_REVALIDATED | (<u32>format << FORMAT_SHIFT);
  }
  store<u32>(state, <u32>set);
  store<u32>(state, flags, 4);
  acquire(set);
  return ACTION_CONTINUE;
}

// ---------------------------------------------------------------------------
// Response headers

/** The format the local answer's Content-Type is in, for a set of `kind`, or -1 (not one to replace). */
function formatOf(p: usize, n: usize, kind: u32): i32 {
  // kube-apiserver serves the OpenAPI v3 index with http.ServeContent, which
  // sniffs its JSON as text/plain: the route chose the index, any type will do.
  if (kind == KIND_OPENAPI) return <i32>FORMAT_JSON;
  return aggregatedFormat(p, n, false);
}

/** Reads one response header's (first) value into RET; returns false when absent. The caller frees the buffer. */
function responseHeader(name: ArrayBuffer): bool {
  store<u32>(RET, 0);
  store<u32>(RET, 0, 4);
  return proxy_get_header_map_value(MAP_HTTP_RESPONSE_HEADERS, changetype<usize>(name), name.byteLength, RET, RET + 4) == STATUS_OK;
}

function freeReturned(): void {
  const p = <usize>load<u32>(RET);
  if (p != 0) heap.free(p);
}

/** Whether the last chooseVariant took the local apiserver's 304 to a revalidation. */
let localNotModified = false;

/** The variant to answer with, or -1 to let the local answer through. */
function chooseVariant(set: usize, flags: u32): i32 {
  if (!responseHeader(STATUS)) return -1;
  const status = statusCode();
  freeReturned();
  let format: i32 = -1;
  localNotModified = status == 304 && (flags & FLAG_REVALIDATED) != 0;
  if (localNotModified) {
    format = <i32>((flags >> FORMAT_SHIFT) & 3);
  } else if (status == 200) {
    if (!responseHeader(CONTENT_TYPE)) return -1;
    format = formatOf(<usize>load<u32>(RET), <usize>load<u32>(RET, 4), setKind(set));
    freeReturned();
  }
  if (format < 0) return -1;
  const gzip = (flags & FLAG_GZIP) != 0;
  if (gzip) {
    const zipped = findVariant(set, <u32>format, ENCODING_GZIP);
    if (zipped >= 0) return zipped;
  }
  return findVariant(set, <u32>format, ENCODING_IDENTITY);
}

/** The three-digit status in RET, or 0. */
function statusCode(): i32 {
  const p = <usize>load<u32>(RET);
  if (<usize>load<u32>(RET, 4) != 3) return 0;
  let code: i32 = 0;
  for (let i: usize = 0; i < 3; i++) {
    const digit = <i32>load<u8>(p + i) - 0x30;
    if (digit < 0 || digit > 9) return 0;
    code = code * 10 + digit;
  }
  return code;
}

export function documentResponseHeaders(contextId: u32): i32 {
  const state = streamState(contextId);
  if (state == 0) return ACTION_CONTINUE;
  const set = <usize>load<u32>(state);
  if (set == 0) return ACTION_CONTINUE;
  const flags = load<u32>(state, 4);
  const chosen = chooseVariant(set, flags);
  if (chosen < 0) return passLocal();
  const v = variantAt(set, <u32>chosen);
  const notModified = (flags & (<u32>1 << <u32>chosen)) != 0;
  const headers = <usize>load<u32>(v + (notModified ? V_H304 : V_H200));
  const headersLen = <usize>load<u32>(v + (notModified ? V_H304_LEN : V_H200_LEN));
  const body: usize = notModified ? 0 : <usize>load<u32>(v + V_BODY);
  const bodyLen: usize = notModified ? 0 : <usize>load<u32>(v + V_BODY_LEN);
  const sent = proxy_send_local_response(
    notModified ? 304 : 200,
    changetype<usize>(DETAILS),
    DETAILS.byteLength,
    body,
    bodyLen,
    headers,
    headersLen,
    -1,
  );
  // Envoy takes a local reply at response headers (nothing has reached the
  // client yet); were it refused, a 304 to the filter's own revalidation would
  // go through to a client that did not ask for it.
  if (sent != STATUS_OK) return passLocal();
  countAnswer(notModified ? ANSWER_NOT_MODIFIED : ANSWER_MERGED);
  if (localNotModified) countRevalidated();
  return ACTION_PAUSE;
}

/** Releases what a stream holds (its document set), at the end of the stream. */
export function documentStreamDone(contextId: u32): void {
  const state = streamState(contextId);
  if (state == 0) return;
  const set = <usize>load<u32>(state);
  if (set == 0) return;
  store<u32>(state, 0);
  store<u32>(state, 0, 4);
  release(set);
}
