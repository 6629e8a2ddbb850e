// One growable output buffer in unmanaged memory, where the document filter
// writes a merged document (jsonSplice.ts, protobufSplice.ts) and a local
// reply's header map. Single-threaded (one VM, one callback at a time); the
// caller takes the bytes (outTake) and owns them from then on.

let out: usize = 0;
let outCap: usize = 0;
/** Bytes written since outStart. */
export let outLen: usize = 0;

/** Starts a new output with room for `capacity` bytes (it grows as needed). */
export function outStart(capacity: usize): void {
  if (capacity < 64) capacity = 64;
  if (out == 0 || outCap < capacity) {
    if (out != 0) heap.free(out);
    out = heap.alloc(capacity);
    outCap = capacity;
  }
  outLen = 0;
}

function reserve(n: usize): void {
  if (outLen + n <= outCap) return;
  let cap = outCap << 1;
  while (cap < outLen + n) cap <<= 1;
  out = heap.realloc(out, cap);
  outCap = cap;
}

export function outBytes(p: usize, n: usize): void {
  if (n == 0) return;
  reserve(n);
  memory.copy(out + outLen, p, n);
  outLen += n;
}

export function outByte(b: u8): void {
  reserve(1);
  store<u8>(out + outLen, b);
  outLen++;
}

export function outConst(bytes: ArrayBuffer): void {
  outBytes(changetype<usize>(bytes), <usize>bytes.byteLength);
}

export function outU32(v: u32): void {
  reserve(4);
  store<u32>(out + outLen, v);
  outLen += 4;
}

/** Writes a protobuf varint. */
export function outVarint(v: u32): void {
  while (v >= 0x80) {
    outByte(<u8>((v & 0x7f) | 0x80));
    v >>>= 7;
  }
  outByte(<u8>v);
}

/** The address of byte `at` of the output (valid until the next write). */
export function outAt(at: usize): usize {
  return out + at;
}

/** Takes the output: the unmanaged buffer holding outLen bytes, which the caller frees; the next outStart allocates anew. */
export function outTake(): usize {
  const taken = out;
  out = 0;
  outCap = 0;
  return taken;
}

/** Number of bytes a varint of `v` takes. */
export function varintSize(v: u32): usize {
  let n: usize = 1;
  while (v >= 0x80) {
    v >>>= 7;
    n++;
  }
  return n;
}
