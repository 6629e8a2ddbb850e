// gzip (RFC 1952) around one deflate block (RFC 1951) with the fixed
// Huffman codes, for the document filter's merged documents: kube-apiserver
// gzips an answer over 128 KiB at level 1, so the filter does too, once per
// cached merged document. The LZ77 is greedy with one hash-table probe per
// position (a 3-byte match at most 32 KiB back, extended to 258 bytes), as a
// fast level does; discovery JSON repeats itself enough for that to shrink
// it several times. Everything works in unmanaged memory: the output is
// allocated once at its bound, the hash table once per call; nothing is
// allocated per byte.

const WINDOW: usize = 32768;
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 258;
const HASH_BITS: u32 = 15;
const HASH_SIZE: usize = 1 << HASH_BITS;

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

// The fixed literal/length codes (RFC 1951 3.2.6), bit-reversed (deflate
// sends Huffman codes from their most significant bit, the bit writer from
// the least): a u16 code and a u8 length per symbol.
const LIT_CODE: usize = memory.data(288 * 2, 2);
const LIT_BITS: usize = memory.data(288, 1);
let codesReady = false;

function reverse(code: u32, bits: u32): u32 {
  let r: u32 = 0;
  for (let i: u32 = 0; i < bits; i++) {
    r = (r << 1) | (code & 1);
    code >>>= 1;
  }
  return r;
}

function codesInit(): void {
  for (let s: u32 = 0; s < 288; s++) {
    let code: u32;
    let bits: u32;
    if (s < 144) {
      code = 0x30 + s;
      bits = 8;
    } else if (s < 256) {
      code = 0x190 + (s - 144);
      bits = 9;
    } else if (s < 280) {
      code = s - 256;
      bits = 7;
    } else {
      code = 0xc0 + (s - 280);
      bits = 8;
    }
    store<u16>(LIT_CODE + (<usize>s << 1), <u16>reverse(code, bits));
    store<u8>(LIT_BITS + <usize>s, <u8>bits);
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

function putSymbol(s: u32): void {
  putBits(<u32>load<u16>(LIT_CODE + (<usize>s << 1)), <u32>load<u8>(LIT_BITS + <usize>s));
}

/** A match: its length code (and extra bits), then its distance code (and extra bits). */
function putMatch(len: u32, dist: u32): void {
  if (len == 258) {
    putSymbol(285);
  } else if (len <= 10) {
    putSymbol(254 + len);
  } else {
    const x = len - 3;
    const b = 31 - clz<u32>(x); // x >= 8: b >= 3
    putSymbol(257 + 4 * (b - 1) + ((x >>> (b - 2)) & 3));
    putBits(x & ((1 << (b - 2)) - 1), b - 2);
  }
  if (dist <= 4) {
    putBits(reverse(dist - 1, 5), 5);
  } else {
    const x = dist - 1;
    const b = 31 - clz<u32>(x); // x >= 4: b >= 2
    putBits(reverse(2 * b + ((x >>> (b - 1)) & 1), 5), 5);
    putBits(x & ((1 << (b - 1)) - 1), b - 1);
  }
}

/** The most bytes gzip writes for n input bytes (a literal costs at most 9 bits, a match less per byte). */
export function gzipBound(n: usize): usize {
  return 18 + ((n * 9 + 7) >> 3) + 16;
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
  putBits(1, 1); // BFINAL
  putBits(1, 2); // BTYPE 01: fixed codes
  const table = heap.alloc(HASH_SIZE << 2); // position + 1 per hash, 0: none
  memory.fill(table, 0, HASH_SIZE << 2);
  let i: usize = 0;
  // Hashing reads 4 bytes: the last 3 go as literals.
  while (i + 4 <= n) {
    const h = table + (hashAt(src + i) << 2);
    const candidate = <usize>load<u32>(h);
    store<u32>(h, <u32>(i + 1));
    if (candidate != 0) {
      const c = candidate - 1;
      const dist = i - c;
      if (dist <= WINDOW && (load<u32>(src + c) & 0xffffff) == (load<u32>(src + i) & 0xffffff)) {
        const room = n - i;
        const len = MIN_MATCH + matchLength(src + c + MIN_MATCH, src + i + MIN_MATCH, (room < MAX_MATCH ? room : MAX_MATCH) - MIN_MATCH);
        putMatch(<u32>len, <u32>dist);
        // Every position the match covers enters the table (those that can still be hashed).
        const end = i + len;
        for (let j = i + 1; j < end && j + 4 <= n; j++) store<u32>(table + (hashAt(src + j) << 2), <u32>(j + 1));
        i = end;
        continue;
      }
    }
    putSymbol(<u32>load<u8>(src + i));
    i++;
  }
  while (i < n) {
    putSymbol(<u32>load<u8>(src + i));
    i++;
  }
  putSymbol(256); // end of block
  flushBits();
  heap.free(table);
  store<u32>(outAt, crc32(src, n));
  store<u32>(outAt + 4, <u32>n);
  outAt += 8;
  gzipLen = outAt - out;
  return heap.realloc(out, gzipLen); // gives back what the bound over-reserved
}
