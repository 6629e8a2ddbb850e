// The document filter: a stream of a route that enables it is a request for
// one merged document (/api, /apis or /openapi/v3; the route decides). The
// client gets the local apiserver's document as the apiserver serves it at
// this request, with the peer part (documents.ts) spliced in by the merge
// rule (src/discovery/peerPart.ts), and the merged ETag; no call out of
// Envoy. The request side (this file):
//   nothing held, `profile=nopeer` in an Accept, unreadable headers:
//     untouched. Otherwise remember the client's If-None-Match, remove it and
//     Accept-Encoding (the apiserver answers uncompressed; the filter gzips
//     where kube-apiserver would, documentResponse.ts), and, when the plugin holds a merged answer for the format
//     the Accept certainly negotiates (revalidationFormat) built from the
//     apiserver's own ETag, send that ETag as If-None-Match: an unchanged
//     document then costs the apiserver a 304.
// The response side: documentResponse.ts.
// Per stream: the set (one reference) and a small record in unmanaged memory
// (streamRecord.ts). Nothing is logged per request.
import {
  ACTION_CONTINUE,
  MAP_HTTP_REQUEST_HEADERS,
  STATUS_OK,
  proxy_add_header_map_value,
  proxy_get_header_map_pairs,
  proxy_remove_header_map_value,
} from "./abi";
import { C_LOCAL_ETAG, C_LOCAL_ETAG_LEN, C_REVALIDATE, acquire, cacheEntry, release } from "./documents";
import { DOC_NONE, DOC_TOP, docNode, documentOfPath } from "./legacyPath";
import { equalsNameCI, hasNoPeer, revalidationFormat, takesGzip } from "./mediaRanges";
import { ANSWER_LOCAL, countAnswer } from "./metrics";
import { pairKey, pairKeyLen, pairValue, pairValueLen, pairsBegin, pairsNext } from "./pairs";
import { streamState } from "./streams";
import { FLAG_GZIP, FLAG_REVALIDATED, R_DOC, R_DOC_NODE, R_FLAGS, R_INM, R_INM_LEN, R_SENT_ETAG, R_SENT_ETAG_LEN, recordFree, recordNew } from "./streamRecord";

const ACCEPT = String.UTF8.encode("accept");
const IF_NONE_MATCH = String.UTF8.encode("if-none-match");
const ACCEPT_ENCODING = String.UTF8.encode("accept-encoding");
const PATH = String.UTF8.encode(":path");

const RET: usize = memory.data(8, 8);

/** The local answer goes through untouched: counted, continue. */
export function passLocal(): i32 {
  countAnswer(ANSWER_LOCAL);
  return ACTION_CONTINUE;
}

/** A copy of [p, p + n) in unmanaged memory, appended to an existing copy with a comma (If-None-Match headers joined as one list). */
function appendValue(old: usize, oldLen: usize, p: usize, n: usize): usize {
  const size = oldLen == 0 ? n : oldLen + 1 + n;
  const copy = heap.alloc(size == 0 ? 1 : size);
  if (oldLen != 0) {
    memory.copy(copy, old, oldLen);
    store<u8>(copy + oldLen, 0x2c);
    memory.copy(copy + oldLen + 1, p, n);
    heap.free(old);
  } else {
    memory.copy(copy, p, n);
  }
  appendedLen = size;
  return copy;
}
let appendedLen: usize = 0;

export function documentRequestHeaders(contextId: u32, set: usize): i32 {
  if (set == 0) return passLocal();
  const state = streamState(contextId);
  if (state == 0) return passLocal();
  if (load<u32>(state) != 0) return ACTION_CONTINUE; // already taken: counted at its response
  store<u32>(RET, 0);
  store<u32>(RET, 0, 4);
  if (proxy_get_header_map_pairs(MAP_HTTP_REQUEST_HEADERS, RET, RET + 4) != STATUS_OK) return passLocal();
  const pairs = <usize>load<u32>(RET);
  const pairsSize = <usize>load<u32>(RET, 4);
  let nopeer = false;
  let accepts = 0;
  let format: i32 = -1;
  let inm: usize = 0;
  let inmLen: usize = 0;
  let ifNoneMatch = false;
  let acceptEncoding = false;
  let gzip = false;
  let doc = DOC_TOP;
  let node: usize = 0;
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
        inm = appendValue(inm, inmLen, value, valueLen);
        inmLen = appendedLen;
      } else if (equalsNameCI(key, keyLen, ACCEPT_ENCODING)) {
        // kube-apiserver reads the first Accept-Encoding header only.
        if (!acceptEncoding) gzip = takesGzip(value, valueLen);
        acceptEncoding = true;
      } else if (equalsNameCI(key, keyLen, PATH)) {
        doc = documentOfPath(set, value, valueLen);
        node = docNode;
      }
    }
    if (r < 0) malformed = true;
  }
  if (pairs != 0) heap.free(pairs);
  // Unreadable headers, the apiserver's own document asked for, or a legacy
  // document the part adds nothing to: the local answer goes through.
  if (malformed || nopeer || doc == DOC_NONE) {
    if (inm != 0) heap.free(inm);
    return passLocal();
  }
  if (ifNoneMatch) proxy_remove_header_map_value(MAP_HTTP_REQUEST_HEADERS, changetype<usize>(IF_NONE_MATCH), IF_NONE_MATCH.byteLength);
  if (acceptEncoding) proxy_remove_header_map_value(MAP_HTTP_REQUEST_HEADERS, changetype<usize>(ACCEPT_ENCODING), ACCEPT_ENCODING.byteLength);
  const record = recordNew();
  store<u32>(record + R_INM, <u32>inm);
  store<u32>(record + R_INM_LEN, <u32>inmLen);
  if (gzip) store<u32>(record + R_FLAGS, FLAG_GZIP);
  store<u32>(record + R_DOC, doc);
  store<u32>(record + R_DOC_NODE, <u32>node);
  // Only /api and /apis are ever aggregated (and cached): never revalidate another document.
  if (accepts == 1 && format >= 0 && doc == DOC_TOP) {
    const entry = cacheEntry(set, <u32>format);
    const etag = <usize>load<u32>(entry + C_LOCAL_ETAG);
    const etagLen = <usize>load<u32>(entry + C_LOCAL_ETAG_LEN);
    if (etag != 0 && load<u32>(entry + C_REVALIDATE) != 0) {
      // A copy: the entry may be replaced by another stream before this one's response.
      const sent = heap.alloc(etagLen);
      memory.copy(sent, etag, etagLen);
      const added = proxy_add_header_map_value(MAP_HTTP_REQUEST_HEADERS, changetype<usize>(IF_NONE_MATCH), IF_NONE_MATCH.byteLength, sent, etagLen);
      if (added == STATUS_OK) {
        store<u32>(record + R_FLAGS, load<u32>(record + R_FLAGS) | FLAG_REVALIDATED | <u32>format);
        store<u32>(record + R_SENT_ETAG, <u32>sent);
        store<u32>(record + R_SENT_ETAG_LEN, <u32>etagLen);
      } else {
        heap.free(sent);
      }
    }
  }
  store<u32>(state, <u32>set);
  store<u32>(state, <u32>record, 4);
  acquire(set);
  return ACTION_CONTINUE;
}

/** Releases what a stream holds (its set and record), at the end of the stream. */
export function documentStreamDone(contextId: u32): void {
  const state = streamState(contextId);
  if (state == 0) return;
  const set = <usize>load<u32>(state);
  const record = <usize>load<u32>(state, 4);
  store<u32>(state, 0);
  store<u32>(state, 0, 4);
  if (record != 0) recordFree(record);
  if (set != 0) release(set);
}
