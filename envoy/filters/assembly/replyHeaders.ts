// A header map for a local reply (proxy_send_local_response), in the
// proxy-wasm serialization: a u32 count, a (key length, value length) pair
// per header, then each key and value NUL-terminated. Built in one reused
// unmanaged buffer; the values are copied, so their memory may go at once.

const MAX_PAIRS = 32;
const keys = new StaticArray<usize>(MAX_PAIRS);
const keyLens = new StaticArray<usize>(MAX_PAIRS);
const values = new StaticArray<usize>(MAX_PAIRS);
const valueLens = new StaticArray<usize>(MAX_PAIRS);
let pairs: i32 = 0;

let buffer: usize = 0;
let bufferCap: usize = 0;
/** The map built by replyHeadersBuild: its address and size. */
export let replyHeadersAt: usize = 0;
export let replyHeadersLen: usize = 0;

export function replyHeadersStart(): void {
  pairs = 0;
}

/** Adds a header (ignored past MAX_PAIRS: the copied apiserver headers are a handful). The spans must live until replyHeadersBuild. */
export function replyHeader(key: usize, keyLen: usize, value: usize, valueLen: usize): void {
  if (pairs == MAX_PAIRS) return;
  unchecked((keys[pairs] = key));
  unchecked((keyLens[pairs] = keyLen));
  unchecked((values[pairs] = value));
  unchecked((valueLens[pairs] = valueLen));
  pairs++;
}

export function replyHeaderConst(key: ArrayBuffer, value: ArrayBuffer): void {
  replyHeader(changetype<usize>(key), <usize>key.byteLength, changetype<usize>(value), <usize>value.byteLength);
}

/** Serializes the headers added since replyHeadersStart into replyHeadersAt/replyHeadersLen. */
export function replyHeadersBuild(): void {
  let size: usize = 4 + <usize>pairs * 8;
  for (let i = 0; i < pairs; i++) size += unchecked(keyLens[i]) + unchecked(valueLens[i]) + 2;
  if (size > bufferCap) {
    if (buffer != 0) heap.free(buffer);
    bufferCap = size < 1024 ? 1024 : size;
    buffer = heap.alloc(bufferCap);
  }
  store<u32>(buffer, pairs);
  let sizes = buffer + 4;
  let p = buffer + 4 + <usize>pairs * 8;
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
  replyHeadersAt = buffer;
  replyHeadersLen = size;
}
