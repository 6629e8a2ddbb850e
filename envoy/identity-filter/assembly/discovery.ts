// The merged-discovery document filter (root_id "mvproxy.discovery"): a
// stream of a route that enables it is a request for one merged document
// (/api, /apis or /openapi/v3; the route decides). Instead of the local
// apiserver's own document the client gets the one the control plane put in
// the plugin configuration (documents.ts), once the local apiserver has
// authenticated and authorized the request (its 200), as the ext_proc
// server (src/servers/extProc.ts, src/discovery/response.ts) did:
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
import { equalsCI } from "./headers";
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
const MEDIA_JSON = String.UTF8.encode("application/json");
const MEDIA_PROTOBUF = String.UTF8.encode("application/vnd.kubernetes.protobuf");
const PARAM_G = String.UTF8.encode("g");
const PARAM_V = String.UTF8.encode("v");
const PARAM_AS = String.UTF8.encode("as");
const PARAM_PROFILE = String.UTF8.encode("profile");
const PARAM_Q = String.UTF8.encode("q");
const APIDISCOVERY = String.UTF8.encode("apidiscovery.k8s.io");
const V2 = String.UTF8.encode("v2");
const LIST = String.UTF8.encode("APIGroupDiscoveryList");
const NOPEER = String.UTF8.encode("nopeer");
const GZIP = String.UTF8.encode("gzip");

const RET: usize = memory.data(8, 8);

// ---------------------------------------------------------------------------
// Spans of linear memory

function isSpace(c: u32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d || c == 0x0b || c == 0x0c;
}

/** Trims [p, p + n): the start goes to TRIM_AT, the length is returned. */
let trimAt: usize = 0;
function trim(p: usize, n: usize): usize {
  while (n > 0 && isSpace(load<u8>(p))) {
    p++;
    n--;
  }
  while (n > 0 && isSpace(load<u8>(p + n - 1))) n--;
  trimAt = p;
  return n;
}

function equals(p: usize, n: usize, b: ArrayBuffer): bool {
  return n == <usize>b.byteLength && memory.compare(p, changetype<usize>(b), n) == 0;
}

function equalsNameCI(p: usize, n: usize, b: ArrayBuffer): bool {
  return equalsCI(p, n, changetype<usize>(b), <usize>b.byteLength);
}

/** Index of the next `sep` (or `alt`) at or after `i` outside double quotes, or n. */
function nextSeparator(p: usize, n: usize, i: usize, sep: u32, alt: u32): usize {
  let quoted = false;
  for (; i < n; i++) {
    const c = <u32>load<u8>(p + i);
    if (quoted && c == 0x5c) i++;
    else if (c == 0x22) quoted = !quoted;
    else if (!quoted && (c == sep || c == alt)) return i;
  }
  return n;
}

/** Whether the parameter `name=value` at [p, p + n) has this name (case-insensitive) and value (exact, quotes removed). */
let paramValueAt: usize = 0;
let paramValueLen: usize = 0;
function readParam(p: usize, n: usize, name: ArrayBuffer): bool {
  let eq: usize = 0;
  while (eq < n && load<u8>(p + eq) != 0x3d) eq++;
  if (eq == n) return false;
  const nameLen = trim(p, eq);
  if (!equalsNameCI(trimAt, nameLen, name)) return false;
  let valueLen = trim(p + eq + 1, n - eq - 1);
  let value = trimAt;
  if (valueLen >= 2 && load<u8>(value) == 0x22 && load<u8>(value + valueLen - 1) == 0x22) {
    value++;
    valueLen -= 2;
  }
  paramValueAt = value;
  paramValueLen = valueLen;
  return true;
}

// ---------------------------------------------------------------------------
// Request headers

/** Whether any media range of this Accept value has the parameter profile=nopeer. */
function hasNoPeer(p: usize, n: usize): bool {
  let i: usize = 0;
  let first = true; // the media type itself, not a parameter
  while (i <= n) {
    const end = nextSeparator(p, n, i, 0x2c, 0x3b);
    if (!first && readParam(p + i, end - i, PARAM_PROFILE) && equals(paramValueAt, paramValueLen, NOPEER)) return true;
    first = end < n && load<u8>(p + end) == 0x2c;
    i = end + 1;
  }
  return false;
}

/** Whether some parameter q of a media range in [p, p + n) has a value not starting with "0" (so it may outrank the first range). */
function hasHighQuality(p: usize, n: usize): bool {
  let i: usize = 0;
  while (i <= n) {
    const end = nextSeparator(p, n, i, 0x2c, 0x3b);
    if (readParam(p + i, end - i, PARAM_Q) && (paramValueLen == 0 || load<u8>(paramValueAt) != 0x30)) return true;
    i = end + 1;
  }
  return false;
}

/**
 * The aggregated format kube-apiserver is certain to negotiate from this
 * Accept value (its goautoneg parse: ranges sorted by q, stably below 12;
 * media types and parameter names compared exactly), or -1 when in doubt.
 * Certain when the first range is exactly aggregated v2 JSON or protobuf
 * (parameters g, v and as, nothing else), no range may outrank it (no q
 * above 0.x), there are at most 11 ranges, and nothing is quoted or tabbed.
 */
function revalidationFormat(p: usize, n: usize): i32 {
  let ranges = 1;
  for (let i: usize = 0; i < n; i++) {
    const c = load<u8>(p + i);
    if (c == 0x22 || c == 0x09) return -1;
    if (c == 0x2c) ranges++;
  }
  if (ranges > 11 || hasHighQuality(p, n)) return -1;
  const first = nextSeparator(p, n, 0, 0x2c, 0x2c);
  let end = nextSeparator(p, first, 0, 0x3b, 0x3b);
  const typeLen = trim(p, end);
  const json = equals(trimAt, typeLen, MEDIA_JSON);
  if (!json && !equals(trimAt, typeLen, MEDIA_PROTOBUF)) return -1;
  let seen = 0;
  while (end < first) {
    const start = end + 1;
    end = nextSeparator(p, first, start, 0x3b, 0x3b);
    const len = end - start;
    if (readParam(p + start, len, PARAM_G) && (seen & 1) == 0 && equals(paramValueAt, paramValueLen, APIDISCOVERY) && exactName(p + start, PARAM_G)) seen |= 1;
    else if (readParam(p + start, len, PARAM_V) && (seen & 2) == 0 && equals(paramValueAt, paramValueLen, V2) && exactName(p + start, PARAM_V)) seen |= 2;
    else if (readParam(p + start, len, PARAM_AS) && (seen & 4) == 0 && equals(paramValueAt, paramValueLen, LIST) && exactName(p + start, PARAM_AS)) seen |= 4;
    else return -1;
  }
  if (seen != 7) return -1;
  return json ? <i32>FORMAT_AGGREGATED_JSON : <i32>FORMAT_AGGREGATED_PROTOBUF;
}

/** Whether the parameter at p (leading spaces allowed) is named exactly `name` (readParam compares names case-insensitively; goautoneg does not). */
function exactName(p: usize, name: ArrayBuffer): bool {
  while (load<u8>(p) == 0x20) p++;
  return memory.compare(p, changetype<usize>(name), <usize>name.byteLength) == 0;
}

/** kube-apiserver's negotiateContentEncoding: some comma-separated token, trimmed, is exactly "gzip". */
function takesGzip(p: usize, n: usize): bool {
  let i: usize = 0;
  while (i <= n) {
    let end = i;
    while (end < n && load<u8>(p + end) != 0x2c) end++;
    const len = trim(p + i, end - i);
    if (equals(trimAt, len, GZIP)) return true;
    i = end + 1;
  }
  return false;
}

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

export function discoveryRequestHeaders(contextId: u32, set: usize): i32 {
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
  let end = nextSeparator(p, n, 0, 0x3b, 0x3b);
  const typeLen = trim(p, end);
  const json = equalsNameCI(trimAt, typeLen, MEDIA_JSON);
  if (!json && !equalsNameCI(trimAt, typeLen, MEDIA_PROTOBUF)) return -1;
  // Exactly g=apidiscovery.k8s.io, v=v2, as=APIGroupDiscoveryList, in any order.
  let seen = 0;
  while (end < n) {
    const start = end + 1;
    end = nextSeparator(p, n, start, 0x3b, 0x3b);
    const len = end - start;
    if (trim(p + start, len) == 0) continue;
    if (readParam(p + start, len, PARAM_G) && (seen & 1) == 0 && equals(paramValueAt, paramValueLen, APIDISCOVERY)) seen |= 1;
    else if (readParam(p + start, len, PARAM_V) && (seen & 2) == 0 && equals(paramValueAt, paramValueLen, V2)) seen |= 2;
    else if (readParam(p + start, len, PARAM_AS) && (seen & 4) == 0 && equals(paramValueAt, paramValueLen, LIST)) seen |= 4;
    else return -1;
  }
  if (seen != 7) return -1;
  return json ? <i32>FORMAT_AGGREGATED_JSON : <i32>FORMAT_AGGREGATED_PROTOBUF;
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

export function discoveryResponseHeaders(contextId: u32): i32 {
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
  if (sent != STATUS_OK) return passLocal();
  countAnswer(notModified ? ANSWER_NOT_MODIFIED : ANSWER_MERGED);
  if (localNotModified) countRevalidated();
  return ACTION_PAUSE;
}

/** Releases what a stream holds (its document set), at the end of the stream. */
export function discoveryStreamDone(contextId: u32): void {
  const state = streamState(contextId);
  if (state == 0) return;
  const set = <usize>load<u32>(state);
  if (set == 0) return;
  store<u32>(state, 0);
  store<u32>(state, 0, 4);
  release(set);
}
