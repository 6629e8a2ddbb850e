// The document module: the document filters (root_id "mvproxy.discovery"),
// one plugin per merged document (/api, /apis, the OpenAPI v3 index), in a
// VM of their own (vm_id "mvproxy.documents", fail_open: a trap here costs
// the merged document, never a request, and never the identity filter's VM,
// which runs identityModule.ts). Each plugin holds the peer part the control
// plane pushed (documents.ts) and merges it into the local apiserver's
// document at every request (documentFilter.ts, documentResponse.ts,
// jsonSplice.ts, protobufSplice.ts).
//
// Memory: built with `--runtime minimal` (see identityModule.ts). The
// per-request path allocates only unmanaged memory (the stream record, the
// collected body, the merged body the cache keeps), freed at the stream's
// end or when the cache entry is replaced; configuration allocates managed
// objects (error strings) and collects at once.
import { BUFFER_PLUGIN_CONFIGURATION, LOG_WARN, STATUS_OK, logString, proxy_get_buffer_bytes } from "./abi";
import { documentRequestHeaders, documentStreamDone } from "./documentFilter";
import { documentResponseBody, documentResponseHeaders } from "./documentResponse";
import { documentsError, parseDocumentSet, release } from "./documents";
import { DEBT_LIMIT, addDebt, enter, leave } from "./gc";
import { defineAnswerMetrics } from "./metrics";
import { streamDelete, streamGet } from "./streams";

export {
  malloc,
  proxy_abi_version_0_2_1,
  proxy_on_context_create,
  proxy_on_done,
  proxy_on_log,
  proxy_on_memory_allocate,
  proxy_on_vm_start,
} from "./moduleEntry";

/** The set (documents.ts; 0: none held) per plugin context. */
const roots = new Map<u32, u32>();

/** Replaces the plugin's set (empty configuration: none held); a stream in flight keeps its own reference. */
export function proxy_on_configure(rootContextId: u32, configurationSize: usize): bool {
  enter();
  defineAnswerMetrics(); // once per VM
  let data: usize = 0;
  let size: usize = 0;
  if (configurationSize != 0) {
    const ptrs = memory.data(8, 8);
    store<u32>(ptrs, 0);
    store<u32>(ptrs, 0, 4);
    if (proxy_get_buffer_bytes(BUFFER_PLUGIN_CONFIGURATION, 0, configurationSize, ptrs, ptrs + 4) != STATUS_OK) {
      logString(LOG_WARN, "mvproxy document filter: cannot read the plugin configuration");
      leave();
      return false;
    }
    data = <usize>load<u32>(ptrs);
    size = <usize>load<u32>(ptrs + 4);
  }
  let set: usize = 0;
  let ok = true;
  if (size != 0) {
    set = parseDocumentSet(data, size);
    if (set == 0) {
      heap.free(data);
      logString(LOG_WARN, "mvproxy document filter: configuration refused: " + documentsError);
      ok = false;
    }
  } else if (data != 0) {
    heap.free(data);
  }
  if (ok) {
    if (roots.has(rootContextId)) {
      const old = <usize>roots.get(rootContextId);
      if (old != 0) release(old);
    }
    roots.set(rootContextId, <u32>set);
  } else if (!roots.has(rootContextId)) {
    roots.set(rootContextId, 0); // the part held before stays; none yet
  }
  addDebt(DEBT_LIMIT); // configuring is rare: collect now
  leave();
  return ok;
}

export function proxy_on_delete(contextId: u32): void {
  enter();
  documentStreamDone(contextId);
  if (!streamDelete(contextId) && roots.has(contextId)) {
    const set = <usize>roots.get(contextId);
    if (set != 0) release(set);
    roots.delete(contextId);
    addDebt(64);
  }
  leave();
}

export function proxy_on_request_headers(contextId: u32, _numHeaders: u32, _endOfStream: bool): i32 {
  enter();
  const root = streamGet(contextId);
  const set = root != 0 && roots.has(root) ? <usize>roots.get(root) : 0;
  const action = documentRequestHeaders(contextId, set);
  leave();
  return action;
}

export function proxy_on_response_headers(contextId: u32, _numHeaders: u32, endOfStream: bool): i32 {
  enter();
  const action = documentResponseHeaders(contextId, endOfStream);
  leave();
  return action;
}

export function proxy_on_response_body(contextId: u32, bodySize: usize, endOfStream: bool): i32 {
  enter();
  const action = documentResponseBody(contextId, bodySize, endOfStream);
  leave();
  return action;
}
