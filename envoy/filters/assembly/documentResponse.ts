// The document filter's response side (the request side: documentFilter.ts).
// The local apiserver has authenticated and authorized the client.
//   response headers:
//     a 304 to the filter's revalidation: the cached merged answer, as a
//       local reply (a 304 has no body: the upstream connection stays
//       reusable), with the apiserver's Audit-Id, priority-and-fairness and
//       Warning headers; a 304 if the client's If-None-Match names its ETag;
//     a 200 in the kind's format (by Content-Type), with a body and no
//       Content-Encoding: held (Pause), to be modified in place at the end of
//       its body; any other answer: untouched.
//   response body: never buffered by Envoy (each chunk is taken, emptied and
//     the callback returns "stop, no buffer"): collected into the record, or,
//     when the local ETag is the cache's, dropped. At its end the headers are
//     rewritten (Content-Length, ETag; :status 304 when the client's
//     If-None-Match names the merged ETag) and the body replaced by the
//     merged document, which the cache then holds for that format. A body
//     over MAX_COLLECTED_BYTES or one the splicer refuses: the local headers
//     and body go out exactly as received (failed open).
//   gzip, where kube-apiserver would (the client's first Accept-Encoding
//     lists gzip, a discovery document over 128 KiB; never the OpenAPI
//     index): the body gzipped, Content-Encoding gzip and a second Vary, in
//     place and in the local reply alike; the cache keeps the gzip form.
import {
  ACTION_CONTINUE,
  ACTION_PAUSE,
  ACTION_STOP_NO_BUFFER,
  BUFFER_HTTP_RESPONSE_BODY,
  MAP_HTTP_RESPONSE_HEADERS,
  STATUS_OK,
  proxy_add_header_map_value,
  proxy_get_buffer_bytes,
  proxy_get_header_map_pairs,
  proxy_send_local_response,
  proxy_set_buffer_bytes,
} from "./abi";
import {
  C_BODY,
  C_BODY_LEN,
  C_GZIP_LEN,
  C_LOCAL_ETAG,
  C_LOCAL_ETAG_LEN,
  C_MERGED_ETAG,
  C_REVALIDATE,
  C_TYPE,
  C_TYPE_LEN,
  FORMAT_AGGREGATED_PROTOBUF,
  FORMAT_JSON,
  FORMAT_LEGACY_JSON,
  KIND_OPENAPI,
  MERGED_ETAG_LEN,
  cacheEntry,
  clearCacheEntry,
  clearSeen,
  entryGzip,
  setGroupCount,
  setGroups,
  setKind,
} from "./documents";
import { passLocal } from "./documentFilter";
import { spliceJson } from "./jsonSplice";
import { finishLegacy } from "./legacyResponse";
import { DOC_TOP } from "./legacyPath";
import { aggregatedFormat, equalsNameCI, legacyFormat } from "./mediaRanges";
import {
  ANSWER_LOCAL,
  ANSWER_MERGED,
  ANSWER_NOT_MODIFIED,
  FAILED_OPEN,
  MERGED_CACHED,
  MERGED_SPLICED,
  countAnswer,
  countRevalidated,
} from "./metrics";
import { outLen, outTake } from "./out";
import { pairKey, pairKeyLen, pairValue, pairValueLen, pairsBegin, pairsNext } from "./pairs";
import { spliceProtobuf } from "./protobufSplice";
import { replyHeader, replyHeaderConst, replyHeadersAt, replyHeadersBuild, replyHeadersLen, replyHeadersStart } from "./replyHeaders";
import { RET, freeReturned, headerValue, removeHeader, replaceContentLength, replaceHeader, responseHeader, statusCode } from "./responseHeaders";
import { sha256 } from "./sha256";
import { mergedEtag, namesEtag, quotedHex } from "./etags";
import { streamState } from "./streams";
import {
  FLAG_GZIP,
  FLAG_REVALIDATED,
  MODE_CACHED,
  MODE_COLLECT,
  MODE_NOT_MODIFIED,
  MODE_PASS,
  MODE_WAIT,
  R_BODY,
  R_BODY_CAP,
  R_BODY_LEN,
  R_FLAGS,
  R_FORMAT,
  R_INM,
  R_INM_LEN,
  R_LOCAL_ETAG,
  R_LOCAL_ETAG_LEN,
  R_DOC,
  R_MODE,
  recordCollect,
  recordFreeBody,
} from "./streamRecord";

/** kube-apiserver gzips a body over this many bytes for a client that takes gzip. */
export const GZIP_THRESHOLD_BYTES: usize = 128 << 10;

/** The most of a local body the filter collects; past it the local answer goes through untouched. */
export const MAX_COLLECTED_BYTES: usize = 64 << 20;

const STATUS = String.UTF8.encode(":status");
const CONTENT_TYPE = String.UTF8.encode("content-type");
const CONTENT_LENGTH = String.UTF8.encode("content-length");
const CONTENT_ENCODING = String.UTF8.encode("content-encoding");
const ETAG = String.UTF8.encode("etag");
const VARY = String.UTF8.encode("vary");
const CACHE_CONTROL = String.UTF8.encode("cache-control");
const ACCEPT_VALUE = String.UTF8.encode("Accept");
const PUBLIC = String.UTF8.encode("public");
const NO_CACHE_PRIVATE = String.UTF8.encode("no-cache, private");
const IDENTITY = String.UTF8.encode("identity");
const GZIP = String.UTF8.encode("gzip");
const ACCEPT_ENCODING_VALUE = String.UTF8.encode("Accept-Encoding");
const STATUS_304 = String.UTF8.encode("304");
const DETAILS = String.UTF8.encode("mvproxy_merged_document");
// The apiserver's headers a local reply carries over.
const AUDIT_ID = String.UTF8.encode("audit-id");
const PF_FLOW_SCHEMA = String.UTF8.encode("x-kubernetes-pf-flowschema-uid");
const PF_PRIORITY_LEVEL = String.UTF8.encode("x-kubernetes-pf-prioritylevel-uid");
const WARNING = String.UTF8.encode("warning");

const SCRATCH: usize = memory.data(32, 8);

// ---------------------------------------------------------------------------
// Response headers

/** The format the local answer's Content-Type is in, for a set of `kind` and document `doc` (legacyPath.ts), or -1. */
function formatOf(p: usize, n: usize, kind: u32, doc: u32): i32 {
  // kube-apiserver serves the OpenAPI v3 index with http.ServeContent, which
  // sniffs its JSON as text/plain: the route chose the index, any type will do.
  if (kind == KIND_OPENAPI) return <i32>FORMAT_JSON;
  const aggregated = doc == DOC_TOP ? aggregatedFormat(p, n, false) : -1;
  return aggregated >= 0 ? aggregated : legacyFormat(p, n);
}

export function documentResponseHeaders(contextId: u32, endOfStream: bool): i32 {
  const state = streamState(contextId);
  if (state == 0) return ACTION_CONTINUE;
  const set = <usize>load<u32>(state);
  const record = <usize>load<u32>(state, 4);
  if (set == 0 || record == 0 || load<u32>(record + R_MODE) != MODE_WAIT) return ACTION_CONTINUE;
  store<u32>(record + R_MODE, MODE_PASS);
  if (!responseHeader(STATUS)) return passLocal();
  const status = statusCode();
  freeReturned();
  const flags = load<u32>(record + R_FLAGS);
  if (status == 304 && (flags & FLAG_REVALIDATED) != 0) return answerRevalidated(set, record, flags & 0xff);
  if (status != 200 || endOfStream) return passLocal();
  if (!responseHeader(CONTENT_TYPE)) return passLocal();
  const format = formatOf(<usize>load<u32>(RET), <usize>load<u32>(RET, 4), setKind(set), load<u32>(record + R_DOC));
  freeReturned();
  if (format < 0) return passLocal();
  if (responseHeader(CONTENT_ENCODING)) {
    const identity = equalsNameCI(<usize>load<u32>(RET), <usize>load<u32>(RET, 4), IDENTITY);
    freeReturned();
    if (!identity) return passLocal();
  }
  store<u32>(record + R_FORMAT, <u32>format);
  if (<u32>format >= FORMAT_LEGACY_JSON) {
    // Legacy discovery: no ETag, no cache; the body is spliced at its end.
    store<u32>(record + R_MODE, MODE_COLLECT);
    return ACTION_PAUSE;
  }
  const entry = cacheEntry(set, <u32>format);
  let mode = MODE_COLLECT;
  if (responseHeader(ETAG)) {
    const etag = <usize>load<u32>(RET);
    const etagLen = <usize>load<u32>(RET, 4);
    if (headerValue(etag, etagLen)) {
      store<u32>(record + R_LOCAL_ETAG, <u32>etag);
      store<u32>(record + R_LOCAL_ETAG_LEN, <u32>etagLen);
      const cached = <usize>load<u32>(entry + C_LOCAL_ETAG);
      if (cached != 0 && load<u32>(entry + C_REVALIDATE) != 0 && <usize>load<u32>(entry + C_LOCAL_ETAG_LEN) == etagLen && memory.compare(cached, etag, etagLen) == 0) {
        mode = clientHas(record, <usize>load<u32>(entry + C_MERGED_ETAG)) ? MODE_NOT_MODIFIED : MODE_CACHED;
      }
    } else {
      freeReturned();
    }
  }
  store<u32>(record + R_MODE, mode);
  return ACTION_PAUSE; // headers held until the body's end
}

function clientHas(record: usize, merged: usize): bool {
  return namesEtag(<usize>load<u32>(record + R_INM), <usize>load<u32>(record + R_INM_LEN), merged, MERGED_ETAG_LEN);
}

/** The apiserver's headers a local reply carries over (from the response header map). */
function copyApiserverHeaders(): usize {
  store<u32>(RET, 0);
  store<u32>(RET, 0, 4);
  if (proxy_get_header_map_pairs(MAP_HTTP_RESPONSE_HEADERS, RET, RET + 4) != STATUS_OK) return 0;
  const pairs = <usize>load<u32>(RET);
  const size = <usize>load<u32>(RET, 4);
  if (pairs == 0 || !pairsBegin(pairs, size)) return pairs;
  for (let r = pairsNext(); r > 0; r = pairsNext()) {
    if (
      equalsNameCI(pairKey, pairKeyLen, AUDIT_ID) ||
      equalsNameCI(pairKey, pairKeyLen, PF_FLOW_SCHEMA) ||
      equalsNameCI(pairKey, pairKeyLen, PF_PRIORITY_LEVEL) ||
      equalsNameCI(pairKey, pairKeyLen, WARNING)
    ) {
      replyHeader(pairKey, pairKeyLen, pairValue, pairValueLen);
    }
  }
  return pairs; // freed by the caller once the reply is built
}

/** Whether kube-apiserver would gzip a body of bodyLen bytes of this set's kind to this stream's client. */
export function gzips(set: usize, record: usize, bodyLen: usize): bool {
  return (load<u32>(record + R_FLAGS) & FLAG_GZIP) != 0 && bodyLen > GZIP_THRESHOLD_BYTES && setKind(set) != KIND_OPENAPI;
}

/** The local apiserver's 304 to the revalidation: the cached merged answer, as a local reply. */
function answerRevalidated(set: usize, record: usize, format: u32): i32 {
  const entry = cacheEntry(set, format);
  if (<usize>load<u32>(entry + C_LOCAL_ETAG) == 0) return passLocal(); // never expected: entries are only replaced
  const merged = <usize>load<u32>(entry + C_MERGED_ETAG);
  const notModified = clientHas(record, merged);
  const openapi = setKind(set) == KIND_OPENAPI;
  replyHeadersStart();
  if (!notModified) replyHeader(changetype<usize>(CONTENT_TYPE), CONTENT_TYPE.byteLength, <usize>load<u32>(entry + C_TYPE), <usize>load<u32>(entry + C_TYPE_LEN));
  replyHeader(changetype<usize>(ETAG), ETAG.byteLength, merged, MERGED_ETAG_LEN);
  if (!openapi) replyHeaderConst(VARY, ACCEPT_VALUE);
  replyHeaderConst(CACHE_CONTROL, openapi ? NO_CACHE_PRIVATE : PUBLIC);
  let body: usize = notModified ? 0 : <usize>load<u32>(entry + C_BODY);
  let bodyLen: usize = notModified ? 0 : <usize>load<u32>(entry + C_BODY_LEN);
  if (!notModified && gzips(set, record, bodyLen)) {
    body = entryGzip(entry);
    bodyLen = <usize>load<u32>(entry + C_GZIP_LEN);
    replyHeaderConst(CONTENT_ENCODING, GZIP);
    replyHeaderConst(VARY, ACCEPT_ENCODING_VALUE);
  }
  const pairs = copyApiserverHeaders();
  replyHeadersBuild();
  if (pairs != 0) heap.free(pairs);
  const sent = proxy_send_local_response(notModified ? 304 : 200, changetype<usize>(DETAILS), DETAILS.byteLength, body, bodyLen, replyHeadersAt, replyHeadersLen, -1);
  // Were the reply refused, a 304 to the filter's own revalidation would reach a client that did not ask for it.
  if (sent != STATUS_OK) return passLocal();
  countAnswer(notModified ? ANSWER_NOT_MODIFIED : ANSWER_MERGED);
  countAnswer(MERGED_CACHED);
  countRevalidated();
  return ACTION_PAUSE;
}

// ---------------------------------------------------------------------------
// Response body

/** Fails open: the chunk becomes everything collected (this chunk included), the held headers go as received. */
export function failOpen(record: usize, chunkSize: usize): i32 {
  proxy_set_buffer_bytes(BUFFER_HTTP_RESPONSE_BODY, 0, chunkSize, <usize>load<u32>(record + R_BODY), <usize>load<u32>(record + R_BODY_LEN));
  recordFreeBody(record);
  store<u32>(record + R_MODE, MODE_PASS);
  countAnswer(FAILED_OPEN);
  countAnswer(ANSWER_LOCAL);
  return ACTION_CONTINUE;
}

export function documentResponseBody(contextId: u32, chunkSize: usize, endOfStream: bool): i32 {
  const state = streamState(contextId);
  if (state == 0) return ACTION_CONTINUE;
  const set = <usize>load<u32>(state);
  const record = <usize>load<u32>(state, 4);
  if (set == 0 || record == 0) return ACTION_CONTINUE;
  const mode = load<u32>(record + R_MODE);
  if (mode == MODE_WAIT || mode == MODE_PASS) return ACTION_CONTINUE;
  if (mode == MODE_COLLECT && chunkSize > 0) {
    store<u32>(RET, 0);
    store<u32>(RET, 0, 4);
    if (proxy_get_buffer_bytes(BUFFER_HTTP_RESPONSE_BODY, 0, chunkSize, RET, RET + 4) != STATUS_OK) {
      // The chunk cannot be read: let everything through as it came.
      return failOpen(record, 0);
    }
    const p = <usize>load<u32>(RET);
    const n = <usize>load<u32>(RET, 4);
    const kept = recordCollect(record, p, n, MAX_COLLECTED_BYTES);
    if (p != 0) heap.free(p);
    if (!kept) {
      // Over the cap: this chunk is not collected; what was collected goes before it.
      proxy_set_buffer_bytes(BUFFER_HTTP_RESPONSE_BODY, 0, 0, <usize>load<u32>(record + R_BODY), <usize>load<u32>(record + R_BODY_LEN));
      recordFreeBody(record);
      store<u32>(record + R_MODE, MODE_PASS);
      countAnswer(FAILED_OPEN);
      countAnswer(ANSWER_LOCAL);
      return ACTION_CONTINUE;
    }
  }
  if (!endOfStream) {
    if (chunkSize > 0) proxy_set_buffer_bytes(BUFFER_HTTP_RESPONSE_BODY, 0, chunkSize, 0, 0);
    return ACTION_STOP_NO_BUFFER;
  }
  if (mode == MODE_COLLECT) return finishSpliced(set, record, chunkSize);
  countAnswer(MERGED_CACHED);
  return finish(set, record, chunkSize, mode == MODE_NOT_MODIFIED, cacheEntry(set, load<u32>(record + R_FORMAT)));
}

/** Splices the collected body; on success the cache takes the result. */
function finishSpliced(set: usize, record: usize, chunkSize: usize): i32 {
  const body = <usize>load<u32>(record + R_BODY);
  const len = <usize>load<u32>(record + R_BODY_LEN);
  const format = load<u32>(record + R_FORMAT);
  if (format >= FORMAT_LEGACY_JSON) return finishLegacy(set, record, chunkSize);
  clearSeen(set);
  const kind = setKind(set);
  const spliced =
    len > 0 &&
    (format == FORMAT_AGGREGATED_PROTOBUF
      ? spliceProtobuf(body, len, setGroups(set), setGroupCount(set))
      : spliceJson(body, len, setGroups(set), setGroupCount(set), kind == KIND_OPENAPI));
  if (!spliced) return failOpen(record, chunkSize);
  const mergedLen = outLen;
  const merged = outTake();
  // The cache entry of this format: the newest local ETag wins.
  const entry = cacheEntry(set, format);
  clearCacheEntry(entry);
  let localEtag = <usize>load<u32>(record + R_LOCAL_ETAG);
  let localEtagLen = <usize>load<u32>(record + R_LOCAL_ETAG_LEN);
  if (localEtag != 0) {
    store<u32>(entry + C_REVALIDATE, 1);
    store<u32>(record + R_LOCAL_ETAG, 0); // the entry owns it now
  } else {
    // No ETag from the apiserver: the local body's digest stands for it.
    localEtag = heap.alloc(MERGED_ETAG_LEN);
    localEtagLen = MERGED_ETAG_LEN;
    sha256(body, len, SCRATCH);
    quotedHex(SCRATCH, localEtag);
  }
  store<u32>(entry + C_LOCAL_ETAG, <u32>localEtag);
  store<u32>(entry + C_LOCAL_ETAG_LEN, <u32>localEtagLen);
  store<u32>(entry + C_BODY, <u32>merged);
  store<u32>(entry + C_BODY_LEN, <u32>mergedLen);
  const mergedEtagAt = <usize>load<u32>(entry + C_MERGED_ETAG);
  mergedEtag(set, localEtag, localEtagLen, mergedEtagAt);
  if (responseHeader(CONTENT_TYPE)) {
    store<u32>(entry + C_TYPE, load<u32>(RET));
    store<u32>(entry + C_TYPE_LEN, load<u32>(RET, 4));
  }
  recordFreeBody(record);
  countAnswer(MERGED_SPLICED);
  return finish(set, record, chunkSize, clientHas(record, mergedEtagAt), entry);
}

/** Rewrites the held headers and the last chunk: a 304 (no body) or the entry's merged body (gzipped if kube-apiserver would), with its ETag. */
function finish(set: usize, record: usize, chunkSize: usize, notModified: bool, entry: usize): i32 {
  replaceHeader(ETAG, <usize>load<u32>(entry + C_MERGED_ETAG), MERGED_ETAG_LEN);
  if (notModified) {
    replaceHeader(STATUS, changetype<usize>(STATUS_304), 3);
    removeHeader(CONTENT_LENGTH);
    removeHeader(CONTENT_TYPE);
    proxy_set_buffer_bytes(BUFFER_HTTP_RESPONSE_BODY, 0, chunkSize, 0, 0);
    countAnswer(ANSWER_NOT_MODIFIED);
  } else {
    let body = <usize>load<u32>(entry + C_BODY);
    let bodyLen = <usize>load<u32>(entry + C_BODY_LEN);
    if (gzips(set, record, bodyLen)) {
      body = entryGzip(entry);
      bodyLen = <usize>load<u32>(entry + C_GZIP_LEN);
      replaceHeader(CONTENT_ENCODING, changetype<usize>(GZIP), GZIP.byteLength);
      proxy_add_header_map_value(MAP_HTTP_RESPONSE_HEADERS, changetype<usize>(VARY), VARY.byteLength, changetype<usize>(ACCEPT_ENCODING_VALUE), ACCEPT_ENCODING_VALUE.byteLength);
    }
    replaceContentLength(bodyLen);
    proxy_set_buffer_bytes(BUFFER_HTTP_RESPONSE_BODY, 0, chunkSize, body, bodyLen);
    countAnswer(ANSWER_MERGED);
  }
  store<u32>(record + R_MODE, MODE_PASS);
  return ACTION_CONTINUE;
}
