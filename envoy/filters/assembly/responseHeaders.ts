// Reading the response headers the local apiserver sent, for the document
// filter (documentResponse.ts): one header's value into RET, the status code,
// whether a value is one Envoy accepts as a header value; and the edits the
// filter makes to the held headers.
import { MAP_HTTP_RESPONSE_HEADERS, STATUS_OK, proxy_get_header_map_value, proxy_remove_header_map_value, proxy_replace_header_map_value } from "./abi";

/** Where the last responseHeader put the value: its address (u32), then its length (u32). */
export const RET: usize = memory.data(8, 8);

/** Reads one response header's (first) value into RET; false when absent. The caller frees it (freeReturned). */
export function responseHeader(name: ArrayBuffer): bool {
  store<u32>(RET, 0);
  store<u32>(RET, 0, 4);
  return proxy_get_header_map_value(MAP_HTTP_RESPONSE_HEADERS, changetype<usize>(name), name.byteLength, RET, RET + 4) == STATUS_OK;
}

export function freeReturned(): void {
  const p = <usize>load<u32>(RET);
  if (p != 0) heap.free(p);
}

export function statusCode(): i32 {
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

/** Whether [p, p + n) is a non-empty header value (no control characters). */
export function headerValue(p: usize, n: usize): bool {
  if (n == 0) return false;
  for (let i: usize = 0; i < n; i++) {
    const c = load<u8>(p + i);
    if ((c < 0x20 && c != 0x09) || c == 0x7f) return false;
  }
  return true;
}

export function replaceHeader(name: ArrayBuffer, value: usize, valueLen: usize): void {
  proxy_replace_header_map_value(MAP_HTTP_RESPONSE_HEADERS, changetype<usize>(name), name.byteLength, value, valueLen);
}

export function removeHeader(name: ArrayBuffer): void {
  proxy_remove_header_map_value(MAP_HTTP_RESPONSE_HEADERS, changetype<usize>(name), name.byteLength);
}

const CONTENT_LENGTH = String.UTF8.encode("content-length");
const DIGITS: usize = memory.data(16, 8);

/** Sets Content-Length to `n` (decimal). */
export function replaceContentLength(n: usize): void {
  let digits: usize = 0;
  for (let v = n; digits == 0 || v != 0; v /= 10) digits++;
  for (let i: usize = digits, v = n; i > 0; i--, v /= 10) store<u8>(DIGITS + i - 1, <u8>(0x30 + (v % 10)));
  proxy_replace_header_map_value(MAP_HTTP_RESPONSE_HEADERS, changetype<usize>(CONTENT_LENGTH), CONTENT_LENGTH.byteLength, DIGITS, digits);
}
