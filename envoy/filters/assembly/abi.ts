// Host functions of the proxy-wasm ABI 0.2.1 this filter uses, bound by hand
// from the specification (github.com/proxy-wasm/spec, abi-versions/v0.2.1).
// Every pointer is an offset into this module's linear memory; every
// function returns a proxy_status_t (0 = OK). Buffers the host returns
// (`return_*_data`) are allocated through proxy_on_memory_allocate and
// belong to the module, which frees them (heap.free) once read.

export const STATUS_OK: i32 = 0;
export const STATUS_NOT_FOUND: i32 = 1;

export const LOG_INFO: i32 = 2;
export const LOG_WARN: i32 = 3;

export const ACTION_CONTINUE: i32 = 0;
export const ACTION_PAUSE: i32 = 1;
/**
 * A body callback's "stop iteration, no buffer" (Envoy's FilterDataStatus 3,
 * which proxy-wasm hosts pass through as they are): Envoy neither forwards
 * nor buffers the chunk; the filter keeps what it needs of it.
 */
export const ACTION_STOP_NO_BUFFER: i32 = 3;

export const BUFFER_HTTP_RESPONSE_BODY: i32 = 1;
export const BUFFER_VM_CONFIGURATION: i32 = 6;
export const BUFFER_PLUGIN_CONFIGURATION: i32 = 7;

export const MAP_HTTP_REQUEST_HEADERS: i32 = 0;
export const MAP_HTTP_RESPONSE_HEADERS: i32 = 2;

export const METRIC_COUNTER: i32 = 0;

// @ts-ignore: decorator
@external("env", "proxy_log")
export declare function proxy_log(level: i32, messageData: usize, messageSize: usize): i32;

// @ts-ignore: decorator
@external("env", "proxy_get_current_time_nanoseconds")
export declare function proxy_get_current_time_nanoseconds(returnTime: usize): i32;

// @ts-ignore: decorator
@external("env", "proxy_get_buffer_bytes")
export declare function proxy_get_buffer_bytes(bufferId: i32, start: usize, maxSize: usize, returnData: usize, returnSize: usize): i32;

/** Replaces `size` bytes from `start` of a buffer with [data, data + dataSize) (start 0 and the whole size: the whole chunk). */
// @ts-ignore: decorator
@external("env", "proxy_set_buffer_bytes")
export declare function proxy_set_buffer_bytes(bufferId: i32, start: usize, size: usize, data: usize, dataSize: usize): i32;

// @ts-ignore: decorator
@external("env", "proxy_get_header_map_pairs")
export declare function proxy_get_header_map_pairs(mapId: i32, returnData: usize, returnSize: usize): i32;

// @ts-ignore: decorator
@external("env", "proxy_get_header_map_value")
export declare function proxy_get_header_map_value(mapId: i32, keyData: usize, keySize: usize, returnData: usize, returnSize: usize): i32;

/** A host property; the path's segments are separated by NUL bytes (none after the last). */
// @ts-ignore: decorator
@external("env", "proxy_get_property")
export declare function proxy_get_property(pathData: usize, pathSize: usize, returnData: usize, returnSize: usize): i32;

// @ts-ignore: decorator
@external("env", "proxy_add_header_map_value")
export declare function proxy_add_header_map_value(mapId: i32, keyData: usize, keySize: usize, valueData: usize, valueSize: usize): i32;

// @ts-ignore: decorator
@external("env", "proxy_replace_header_map_value")
export declare function proxy_replace_header_map_value(mapId: i32, keyData: usize, keySize: usize, valueData: usize, valueSize: usize): i32;

// @ts-ignore: decorator
@external("env", "proxy_remove_header_map_value")
export declare function proxy_remove_header_map_value(mapId: i32, keyData: usize, keySize: usize): i32;

// @ts-ignore: decorator
@external("env", "proxy_send_local_response")
export declare function proxy_send_local_response(
  statusCode: u32,
  detailsData: usize,
  detailsSize: usize,
  bodyData: usize,
  bodySize: usize,
  headersData: usize,
  headersSize: usize,
  grpcStatus: i32,
): i32;

/** Defines a metric (type METRIC_COUNTER, ...) named by the UTF-8 name; its id (per VM) goes to returnMetricId. */
// @ts-ignore: decorator
@external("env", "proxy_define_metric")
export declare function proxy_define_metric(metricType: i32, nameData: usize, nameSize: usize, returnMetricId: usize): i32;

// @ts-ignore: decorator
@external("env", "proxy_increment_metric")
export declare function proxy_increment_metric(metricId: u32, offset: i64): i32;

/** Logs an AssemblyScript string (UTF-8 encoded) at `level`. Not on any hot path. */
export function logString(level: i32, message: string): void {
  const bytes = String.UTF8.encode(message);
  proxy_log(level, changetype<usize>(bytes), <usize>bytes.byteLength);
}
