// gzip (RFC 1952) of deflate (RFC 1951), for the document filter's merged
// documents: kube-apiserver gzips an answer over 128 KiB at level 1, so the
// filter does too, once per cached merged document. The LZ77 is greedy and
// follows at most MAX_PROBES earlier positions of the same hash (a 3-byte
// match at most 32 KiB back, extended to 258 bytes), as a fast level does. Its symbols are collected
// per block (up to BLOCK_SYMBOLS) and each block goes out with the codes
// that make it smaller: its own Huffman codes (huffman.ts, a dynamic block)
// or the fixed ones. Everything works in unmanaged memory: the output is
// allocated once at its bound, the hash table, its chains and the block's
// symbols once per call; nothing is allocated per byte.
import { canonicalCodes, codeLengths, reverseBits } from "./huffman";

const WINDOW: usize = 32768;
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 258;
const HASH_BITS: u32 = 15;
const HASH_SIZE: usize = 1 << HASH_BITS;
const BLOCK_SYMBOLS: usize = 1 << 16;
const MAX_PROBES: i32 = 4;

/** The length of the last gzip result. */
export let gzipLen: usize = 0;

// The CRC-32 table (reflected polynomial 0xEDB88320), built once.
const CRC_TABLE: usize = memory.data(1024, 4);
let crcReady = false;

function crcInit(): void {
  for (let n: u32 = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    store<u32>(CRC_TABLE + (<usize>n << 2), c);
  }
  crcReady = true;
}

/** CRC-32 (as gzip and zlib compute it) of [p, p + n). */
export function crc32(p: usize, n: usize): u32 {
  if (!crcReady) crcInit();
  let c: u32 = 0xffffffff;
  for (let i: usize = 0; i < n; i++) {
    c = load<u32>(CRC_TABLE + (<usize>((c ^ load<u8>(p + i)) & 0xff) << 2)) ^ (c >>> 8);
  }
  return c ^ 0xffffffff;
}

// Codes, a u16 (bit-reversed) and a u8 length per symbol: the fixed ones
// (RFC 1951 3.2.6), built once, and a block's own.
const FIXED_LIT_CODE: usize = memory.data(288 * 2, 2);
const FIXED_LIT_BITS: usize = memory.data(288, 1);
const FIXED_DIST_CODE: usize = memory.data(30 * 2, 2);
const FIXED_DIST_BITS: usize = memory.data(30, 1);
const LIT_CODE: usize = memory.data(286 * 2, 2);
const LIT_BITS: usize = memory.data(286, 1);
const DIST_CODE: usize = memory.data(30 * 2, 2);
const DIST_BITS: usize = memory.data(30, 1);
const CL_CODE: usize = memory.data(19 * 2, 2);
const CL_BITS: usize = memory.data(19, 1);
// A block's frequencies (u32 per symbol) and its code lengths run-length coded (symbol, extra value).
const LIT_FREQ: usize = memory.data(286 * 4, 4);
const DIST_FREQ: usize = memory.data(30 * 4, 4);
const CL_FREQ: usize = memory.data(19 * 4, 4);
const RLE: usize = memory.data(316 * 2, 1);
/** The order the code-length code lengths go out in. */
const CL_ORDER: StaticArray<u8> = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
let codesReady = false;

function codesInit(): void {
  for (let s: u32 = 0; s < 288; s++) {
    const bits: u32 = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
    const code: u32 = s < 144 ? 0x30 + s : s < 256 ? 0x190 + s - 144 : s < 280 ? s - 256 : 0xc0 + s - 280;
    store<u16>(FIXED_LIT_CODE + (<usize>s << 1), <u16>reverseBits(code, bits));
    store<u8>(FIXED_LIT_BITS + <usize>s, <u8>bits);
  }
  for (let s: u32 = 0; s < 30; s++) {
    store<u16>(FIXED_DIST_CODE + (<usize>s << 1), <u16>reverseBits(s, 5));
    store<u8>(FIXED_DIST_BITS + <usize>s, 5);
  }
  codesReady = true;
}

// The bit writer: bits go out least significant first, 32 at a time.
let bitBuf: u64 = 0;
let bitCount: u32 = 0;
let outAt: usize = 0;

function putBits(value: u32, bits: u32): void {
  bitBuf |= <u64>value << bitCount;
  bitCount += bits;
  if (bitCount >= 32) {
    store<u32>(outAt, <u32>bitBuf);
    outAt += 4;
    bitBuf >>= 32;
    bitCount -= 32;
  }
}

function flushBits(): void {
  while (bitCount > 0) {
    store<u8>(outAt, <u8>bitBuf);
    outAt++;
    bitBuf >>= 8;
    bitCount = bitCount > 8 ? bitCount - 8 : 0;
  }
  bitBuf = 0;
}

function putCode(codes: usize, bits: usize, s: u32): void {
  putBits(<u32>load<u16>(codes + (<usize>s << 1)), <u32>load<u8>(bits + <usize>s));
}

// A match's length symbol (257..285) and extra bits; its distance symbol (0..29) and extra bits.
function lengthSymbol(len: u32): u32 {
  if (len == 258) return 285;
  if (len <= 10) return 254 + len;
  const x = len - 3;
  const b = 31 - clz<u32>(x); // x >= 8: b >= 3
  return 257 + 4 * (b - 1) + ((x >>> (b - 2)) & 3);
}

function lengthExtraBits(len: u32): u32 {
  return len <= 10 || len == 258 ? 0 : 29 - clz<u32>(len - 3);
}

function distanceSymbol(dist: u32): u32 {
  if (dist <= 4) return dist - 1;
  const x = dist - 1;
  const b = 31 - clz<u32>(x); // x >= 4: b >= 2
  return 2 * b + ((x >>> (b - 1)) & 1);
}

function distanceExtraBits(dist: u32): u32 {
  return dist <= 4 ? 0 : 30 - clz<u32>(dist - 1);
}

// A block's symbols: a literal byte, or (distance << 9 | length) for a match.
let symbols: usize = 0;
let symbolCount: usize = 0;

/** The n code lengths as the bits of the block header codes them (run lengths: 16 repeats, 17 and 18 zeros); returns the RLE count. */
function runLengths(hlit: u32, hdist: u32): u32 {
  const total = hlit + hdist;
  let count: u32 = 0;
  let i: u32 = 0;
  while (i < total) {
    const v = i < hlit ? load<u8>(LIT_BITS + <usize>i) : load<u8>(DIST_BITS + <usize>(i - hlit));
    let run: u32 = 1;
    while (i + run < total && (i + run < hlit ? load<u8>(LIT_BITS + <usize>(i + run)) : load<u8>(DIST_BITS + <usize>(i + run - hlit))) == v) run++;
    i += run;
    if (v != 0) {
      store<u8>(RLE + <usize>(count++ << 1), v);
      run--;
    }
    while (run >= 3) {
      const r: u32 = v != 0 ? min<u32>(run, 6) : min<u32>(run, 138);
      const s: u8 = v != 0 ? 16 : r >= 11 ? 18 : 17;
      store<u8>(RLE + <usize>(count << 1), s);
      store<u8>(RLE + <usize>(count++ << 1) + 1, <u8>(r - (s == 18 ? 11 : 3)));
      run -= r;
    }
    for (; run > 0; run--) store<u8>(RLE + <usize>(count++ << 1), v);
  }
  return count;
}

/** Sends the block's symbols (and its end) with the codes its header chose; the last block when `final`. */
function flushBlock(final: bool): void {
  memory.fill(LIT_FREQ, 0, 286 * 4);
  memory.fill(DIST_FREQ, 0, 30 * 4);
  memory.fill(CL_FREQ, 0, 19 * 4);
  for (let k: usize = 0; k < symbolCount; k++) {
    const v = load<u32>(symbols + (k << 2));
    const lit = v < 256 ? v : lengthSymbol(v & 0x1ff);
    store<u32>(LIT_FREQ + (<usize>lit << 2), load<u32>(LIT_FREQ + (<usize>lit << 2)) + 1);
    if (v >= 256) {
      const d = <usize>distanceSymbol(v >>> 9) << 2;
      store<u32>(DIST_FREQ + d, load<u32>(DIST_FREQ + d) + 1);
    }
  }
  store<u32>(LIT_FREQ + (256 << 2), 1); // the end of the block
  codeLengths(LIT_FREQ, 286, 15, LIT_BITS);
  codeLengths(DIST_FREQ, 30, 15, DIST_BITS);
  let hlit: u32 = 286;
  while (hlit > 257 && load<u8>(LIT_BITS + <usize>(hlit - 1)) == 0) hlit--;
  let hdist: u32 = 30;
  while (hdist > 1 && load<u8>(DIST_BITS + <usize>(hdist - 1)) == 0) hdist--;
  const rle = runLengths(hlit, hdist);
  for (let k: u32 = 0; k < rle; k++) {
    const s = <usize>load<u8>(RLE + <usize>(k << 1)) << 2;
    store<u32>(CL_FREQ + s, load<u32>(CL_FREQ + s) + 1);
  }
  codeLengths(CL_FREQ, 19, 7, CL_BITS);
  let clUsed: u32 = 0;
  for (let s: usize = 0; s < 19; s++) if (load<u8>(CL_BITS + s) != 0) clUsed++;
  let hclen: u32 = 19;
  while (hclen > 4 && load<u8>(CL_BITS + <usize>unchecked(CL_ORDER[hclen - 1])) == 0) hclen--;
  // Both costs leave out the extra bits, the same either way.
  let dynamicBits: u64 = 14 + 3 * <u64>hclen;
  for (let k: u32 = 0; k < rle; k++) {
    const s = load<u8>(RLE + <usize>(k << 1));
    dynamicBits += <u64>load<u8>(CL_BITS + <usize>s) + (s == 16 ? 2 : s == 17 ? 3 : s == 18 ? 7 : 0);
  }
  let fixedBits: u64 = 0;
  for (let s: usize = 0; s < 286; s++) {
    const f = <u64>load<u32>(LIT_FREQ + (s << 2));
    dynamicBits += f * <u64>load<u8>(LIT_BITS + s);
    fixedBits += f * <u64>load<u8>(FIXED_LIT_BITS + s);
  }
  for (let s: usize = 0; s < 30; s++) {
    const f = <u64>load<u32>(DIST_FREQ + (s << 2));
    dynamicBits += f * <u64>load<u8>(DIST_BITS + s);
    fixedBits += f * 5;
  }
  putBits(final ? 1 : 0, 1);
  let litCode = FIXED_LIT_CODE;
  let litBits = FIXED_LIT_BITS;
  let distCode = FIXED_DIST_CODE;
  let distBits = FIXED_DIST_BITS;
  // A code-length code of one symbol would be incomplete, which inflaters refuse.
  if (dynamicBits < fixedBits && clUsed >= 2) {
    putBits(2, 2); // BTYPE 10: dynamic codes
    canonicalCodes(LIT_BITS, 286, LIT_CODE);
    canonicalCodes(DIST_BITS, 30, DIST_CODE);
    canonicalCodes(CL_BITS, 19, CL_CODE);
    putBits(hlit - 257, 5);
    putBits(hdist - 1, 5);
    putBits(hclen - 4, 4);
    for (let k: u32 = 0; k < hclen; k++) putBits(<u32>load<u8>(CL_BITS + <usize>unchecked(CL_ORDER[k])), 3);
    for (let k: u32 = 0; k < rle; k++) {
      const s = <u32>load<u8>(RLE + <usize>(k << 1));
      putCode(CL_CODE, CL_BITS, s);
      if (s >= 16) putBits(<u32>load<u8>(RLE + <usize>(k << 1) + 1), s == 16 ? 2 : s == 17 ? 3 : 7);
    }
    litCode = LIT_CODE;
    litBits = LIT_BITS;
    distCode = DIST_CODE;
    distBits = DIST_BITS;
  } else {
    putBits(1, 2); // BTYPE 01: fixed codes
  }
  for (let k: usize = 0; k < symbolCount; k++) {
    const v = load<u32>(symbols + (k << 2));
    if (v < 256) {
      putCode(litCode, litBits, v);
      continue;
    }
    const len = v & 0x1ff;
    const dist = v >>> 9;
    putCode(litCode, litBits, lengthSymbol(len));
    const lenExtra = lengthExtraBits(len);
    if (lenExtra != 0) putBits((len - 3) & ((1 << lenExtra) - 1), lenExtra);
    putCode(distCode, distBits, distanceSymbol(dist));
    const distExtra = distanceExtraBits(dist);
    if (distExtra != 0) putBits((dist - 1) & ((1 << distExtra) - 1), distExtra);
  }
  putCode(litCode, litBits, 256);
  symbolCount = 0;
}

function addSymbol(v: u32): void {
  store<u32>(symbols + (symbolCount << 2), v);
  if (++symbolCount == BLOCK_SYMBOLS) flushBlock(false);
}

/** The most bytes gzip writes for n input bytes (a block costs at most its fixed-code size: 9 bits a literal, less per matched byte). */
export function gzipBound(n: usize): usize {
  return 18 + ((n * 9 + 7) >> 3) + (n >> 14) + 16;
}

function hashAt(p: usize): usize {
  const key: u32 = load<u32>(p) & 0xffffff;
  return <usize>((key * <u32>0x9e3779b1) >>> (32 - HASH_BITS));
}

/** The length of the common prefix of [a, ...) and [b, ...), at most max. */
function matchLength(a: usize, b: usize, max: usize): usize {
  let len: usize = 0;
  while (len + 8 <= max && load<u64>(a + len) == load<u64>(b + len)) len += 8;
  while (len < max && load<u8>(a + len) == load<u8>(b + len)) len++;
  return len;
}

/**
 * gzip of [src, src + n): a new heap.alloc buffer (the caller frees it),
 * gzipLen bytes long. Header as Go's compress/gzip writes it at its fastest
 * level (no name, no time, XFL 4, OS unknown); CRC-32 and size trailer.
 */
export function gzip(src: usize, n: usize): usize {
  if (!codesReady) codesInit();
  const out = heap.alloc(gzipBound(n));
  // 1f 8b, CM 8 (deflate), FLG 0, MTIME 0, XFL 4, OS 255
  store<u32>(out, 0x00088b1f);
  store<u32>(out + 4, 0);
  store<u8>(out + 8, 4);
  store<u8>(out + 9, 255);
  outAt = out + 10;
  bitBuf = 0;
  bitCount = 0;
  symbols = heap.alloc(BLOCK_SYMBOLS << 2);
  symbolCount = 0;
  // Per hash, the newest position + 1 (0: none); per position (mod WINDOW), the previous one of its hash.
  const table = heap.alloc(HASH_SIZE << 2);
  memory.fill(table, 0, HASH_SIZE << 2);
  const chain = heap.alloc(WINDOW << 2);
  let i: usize = 0;
  // Hashing reads 4 bytes: the last 3 go as literals.
  while (i + 4 <= n) {
    const h = table + (hashAt(src + i) << 2);
    const head = src + i;
    const room = n - i;
    const max = room < MAX_MATCH ? room : MAX_MATCH;
    let best: usize = 0;
    let bestDist: usize = 0;
    let candidate = <usize>load<u32>(h);
    for (let probes = MAX_PROBES; candidate != 0 && probes > 0; probes--) {
      const c = candidate - 1;
      if (i - c > WINDOW) break;
      if ((load<u32>(src + c) & 0xffffff) == (load<u32>(head) & 0xffffff)) {
        const len = MIN_MATCH + matchLength(src + c + MIN_MATCH, head + MIN_MATCH, max - MIN_MATCH);
        if (len > best) {
          best = len;
          bestDist = i - c;
          if (len == max) break;
        }
      }
      candidate = <usize>load<u32>(chain + ((c & (WINDOW - 1)) << 2));
    }
    store<u32>(chain + ((i & (WINDOW - 1)) << 2), load<u32>(h));
    store<u32>(h, <u32>(i + 1));
    if (best == 0) {
      addSymbol(<u32>load<u8>(head));
      i++;
      continue;
    }
    addSymbol((<u32>bestDist << 9) | <u32>best);
    // Every position the match covers enters the table (those that can still be hashed).
    const end = i + best;
    for (let j = i + 1; j < end && j + 4 <= n; j++) {
      const hj = table + (hashAt(src + j) << 2);
      store<u32>(chain + ((j & (WINDOW - 1)) << 2), load<u32>(hj));
      store<u32>(hj, <u32>(j + 1));
    }
    i = end;
  }
  for (; i < n; i++) addSymbol(<u32>load<u8>(src + i));
  flushBlock(true);
  flushBits();
  heap.free(table);
  heap.free(chain);
  heap.free(symbols);
  store<u32>(outAt, crc32(src, n));
  store<u32>(outAt + 4, <u32>n);
  outAt += 8;
  gzipLen = outAt - out;
  return heap.realloc(out, gzipLen); // gives back what the bound over-reserved
}
