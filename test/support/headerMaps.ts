// The proxy-wasm serialization of header maps (spec: "Maps with HTTP fields"),
// for test/support/proxyWasmHost.ts.
import type { HeaderList } from './proxyWasmHost.js';

const utf8 = new TextDecoder('utf-8');
const encoder = new TextEncoder();

/** The proxy-wasm serialization of a header map (spec: "Maps with HTTP fields"). */
export function serializeHeaderMap(headers: HeaderList): Uint8Array {
  const pairs = headers.map(([k, v]) => [encoder.encode(k), encoder.encode(v)] as const);
  let size = 4 + pairs.length * 8;
  for (const [k, v] of pairs) size += k.length + v.length + 2;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, pairs.length, true);
  let at = 4;
  for (const [k, v] of pairs) {
    view.setUint32(at, k.length, true);
    view.setUint32(at + 4, v.length, true);
    at += 8;
  }
  for (const [k, v] of pairs) {
    out.set(k, at);
    at += k.length + 1;
    out.set(v, at);
    at += v.length + 1;
  }
  return out;
}

export function deserializeHeaderMap(bytes: Uint8Array): HeaderList {
  if (bytes.length === 0 || (bytes.length === 1 && bytes[0] === 0)) return [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = view.getUint32(0, true);
  const sizes: Array<[number, number]> = [];
  let at = 4;
  for (let i = 0; i < count; i++) {
    sizes.push([view.getUint32(at, true), view.getUint32(at + 4, true)]);
    at += 8;
  }
  const out: HeaderList = [];
  for (const [kl, vl] of sizes) {
    const key = utf8.decode(bytes.subarray(at, at + kl));
    at += kl + 1;
    const value = utf8.decode(bytes.subarray(at, at + vl));
    at += vl + 1;
    out.push([key, value]);
  }
  return out;
}
