// The document filter's counters (proxy-wasm counter metrics: wasmcustom.<name>
// in Envoy's stats, <name> in /stats/prometheus), one per outcome of
// a request it saw:
//   mvproxy_document_answers_merged        200 with the merged document sent;
//   mvproxy_document_answers_not_modified  304 sent (If-None-Match matched);
//   mvproxy_document_answers_local         the local answer went through untouched;
// and, of the first two, those the local apiserver authorized with a 304 to
// the filter's revalidation (it encoded no document):
//   mvproxy_document_local_not_modified;
// and how the merged answers were made:
//   mvproxy_document_merged_spliced        the local body spliced with the peer part (a cache miss);
//   mvproxy_document_merged_cached         from the cache (the local ETag unchanged);
//   mvproxy_document_failed_open           the local body passed untouched: unparsable, or over the cap.
// Defined once per VM (metric ids are per VM), when a document plugin is
// first configured. A counter whose definition failed is never incremented:
// the filter works on without it. Counting allocates nothing.
import { METRIC_COUNTER, STATUS_OK, proxy_define_metric, proxy_increment_metric } from "./abi";

export const ANSWER_MERGED: i32 = 0;
export const ANSWER_NOT_MODIFIED: i32 = 1;
export const ANSWER_LOCAL: i32 = 2;
const LOCAL_NOT_MODIFIED: i32 = 3;
export const MERGED_SPLICED: i32 = 4;
export const MERGED_CACHED: i32 = 5;
export const FAILED_OPEN: i32 = 6;

const NAME_MERGED = String.UTF8.encode("mvproxy_document_answers_merged");
const NAME_NOT_MODIFIED = String.UTF8.encode("mvproxy_document_answers_not_modified");
const NAME_LOCAL = String.UTF8.encode("mvproxy_document_answers_local");
const NAME_LOCAL_NOT_MODIFIED = String.UTF8.encode("mvproxy_document_local_not_modified");
const NAME_SPLICED = String.UTF8.encode("mvproxy_document_merged_spliced");
const NAME_CACHED = String.UTF8.encode("mvproxy_document_merged_cached");
const NAME_FAILED_OPEN = String.UTF8.encode("mvproxy_document_failed_open");

/** Per counter: the metric id (u32), then whether it is defined (u32, 0 or 1). */
const IDS: usize = memory.data(56, 4);
let defineTried = false;

function define(outcome: i32, name: ArrayBuffer): void {
  const at = IDS + <usize>outcome * 8;
  store<u32>(at, 0);
  store<u32>(at, 0, 4);
  if (proxy_define_metric(METRIC_COUNTER, changetype<usize>(name), <usize>name.byteLength, at) == STATUS_OK) store<u32>(at, 1, 4);
}

/** Defines the counters, the first time only (later calls do nothing, even if that one failed). */
export function defineAnswerMetrics(): void {
  if (defineTried) return;
  defineTried = true;
  define(ANSWER_MERGED, NAME_MERGED);
  define(ANSWER_NOT_MODIFIED, NAME_NOT_MODIFIED);
  define(ANSWER_LOCAL, NAME_LOCAL);
  define(LOCAL_NOT_MODIFIED, NAME_LOCAL_NOT_MODIFIED);
  define(MERGED_SPLICED, NAME_SPLICED);
  define(MERGED_CACHED, NAME_CACHED);
  define(FAILED_OPEN, NAME_FAILED_OPEN);
}

/** Counts one answer of this outcome (nothing if its counter is not defined). */
export function countAnswer(outcome: i32): void {
  const at = IDS + <usize>outcome * 8;
  if (load<u32>(at, 4) != 0) proxy_increment_metric(load<u32>(at), 1);
}

/** Counts one 304 of the local apiserver to the filter's revalidation. */
export function countRevalidated(): void {
  countAnswer(LOCAL_NOT_MODIFIED);
}
