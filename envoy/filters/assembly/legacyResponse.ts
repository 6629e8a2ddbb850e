// The end of a legacy discovery answer (meta/v1; the document and its peer
// node were chosen at the request, legacyPath.ts): the collected local 200
// body spliced (legacyJson.ts, legacyProtobuf.ts) and sent in place of the
// local one, with the local headers but Content-Length (the merged body's)
// and ETag (removed: the local one names another body; legacy answers carry
// none and are never cached). Gzipped where kube-apiserver would, as the
// aggregated answers (documentResponse.ts). Refused by the splicer: the local
// answer goes out as received (failed open).
import { ACTION_CONTINUE, BUFFER_HTTP_RESPONSE_BODY, MAP_HTTP_RESPONSE_HEADERS, proxy_add_header_map_value, proxy_set_buffer_bytes } from "./abi";
import { FORMAT_LEGACY_JSON, KIND_CORE, clearSeen, setGroupCount, setGroups, setKind } from "./documents";
import { failOpen, gzips } from "./documentResponse";
import { gzip, gzipLen } from "./deflate";
import { LEGACY_GROUP, LEGACY_GROUP_LIST, LEGACY_RESOURCE_LIST, LEGACY_VERSIONS, spliceLegacyJson } from "./legacyJson";
import { DOC_GROUP, DOC_RESOURCE_LIST } from "./legacyPath";
import { nodeNamed } from "./nodes";
import { spliceLegacyProtobuf } from "./legacyProtobuf";
import { ANSWER_MERGED, MERGED_SPLICED, countAnswer } from "./metrics";
import { outLen, outTake } from "./out";
import { removeHeader, replaceContentLength, replaceHeader } from "./responseHeaders";
import { MODE_PASS, R_BODY, R_BODY_LEN, R_DOC, R_DOC_NODE, R_FORMAT, R_MODE, recordFreeBody } from "./streamRecord";

const ETAG = String.UTF8.encode("etag");
const CONTENT_ENCODING = String.UTF8.encode("content-encoding");
const GZIP = String.UTF8.encode("gzip");
const VARY = String.UTF8.encode("vary");
const ACCEPT_ENCODING_VALUE = String.UTF8.encode("Accept-Encoding");

export function finishLegacy(set: usize, record: usize, chunkSize: usize): i32 {
  const body = <usize>load<u32>(record + R_BODY);
  const len = <usize>load<u32>(record + R_BODY_LEN);
  const doc = load<u32>(record + R_DOC);
  const groups = setGroups(set);
  const count = setGroupCount(set);
  let legacy = LEGACY_RESOURCE_LIST;
  let node = <usize>load<u32>(record + R_DOC_NODE);
  if (doc == DOC_GROUP) {
    legacy = LEGACY_GROUP;
  } else if (doc != DOC_RESOURCE_LIST) {
    // /api or /apis: the core group's versions, or the group list.
    legacy = setKind(set) == KIND_CORE ? LEGACY_VERSIONS : LEGACY_GROUP_LIST;
    node = legacy == LEGACY_VERSIONS ? nodeNamed(groups, count, 0, 0) : 0;
  }
  clearSeen(set);
  const spliced =
    len > 0 &&
    (load<u32>(record + R_FORMAT) == FORMAT_LEGACY_JSON
      ? spliceLegacyJson(body, len, legacy, groups, count, node)
      : spliceLegacyProtobuf(body, len, legacy, groups, count, node));
  if (!spliced) return failOpen(record, chunkSize);
  let mergedLen = outLen;
  let merged = outTake();
  if (gzips(set, record, mergedLen)) {
    const gzipped = gzip(merged, mergedLen);
    heap.free(merged);
    merged = gzipped;
    mergedLen = gzipLen;
    replaceHeader(CONTENT_ENCODING, changetype<usize>(GZIP), GZIP.byteLength);
    proxy_add_header_map_value(MAP_HTTP_RESPONSE_HEADERS, changetype<usize>(VARY), VARY.byteLength, changetype<usize>(ACCEPT_ENCODING_VALUE), ACCEPT_ENCODING_VALUE.byteLength);
  }
  removeHeader(ETAG);
  replaceContentLength(mergedLen);
  proxy_set_buffer_bytes(BUFFER_HTTP_RESPONSE_BODY, 0, chunkSize, merged, mergedLen);
  heap.free(merged);
  recordFreeBody(record);
  store<u32>(record + R_MODE, MODE_PASS);
  countAnswer(MERGED_SPLICED);
  countAnswer(ANSWER_MERGED);
  return ACTION_CONTINUE;
}
