// Huffman codes for deflate's dynamic blocks (deflate.ts): code lengths from
// symbol frequencies, limited to a maximum length (15 for literals, lengths
// and distances, 7 for the code-length alphabet), and the canonical codes
// those lengths define (RFC 1951 3.2.2), bit-reversed for the bit writer.
// The tree is built in static scratch memory by repeatedly joining the two
// lightest nodes (at most 288 leaves: a linear scan is cheap enough once per
// block); a tree deeper than the limit is rebuilt from halved frequencies.

// Per node (576: 288 leaves and their joins) or per symbol (288): weights, parents, whether still to join, leaf symbols, frequencies.
const WEIGHT: usize = memory.data(576 * 4, 4);
const PARENT: usize = memory.data(576 * 2, 2);
const ACTIVE: usize = memory.data(576, 1);
const LEAF_SYMBOL: usize = memory.data(288 * 2, 2);
const SCALED: usize = memory.data(288 * 4, 4);
const COUNT: usize = memory.data(16 * 2, 2);
const NEXT: usize = memory.data(16 * 2, 2);

/** Reverses the low `bits` bits of `code` (deflate sends Huffman codes from their most significant bit). */
export function reverseBits(code: u32, bits: u32): u32 {
  let r: u32 = 0;
  for (let i: u32 = 0; i < bits; i++) {
    r = (r << 1) | (code & 1);
    code >>>= 1;
  }
  return r;
}

/** The active node of least weight other than `except` (-1: none). */
function lightest(nodes: i32, except: i32): i32 {
  let best: i32 = -1;
  let bestWeight: u32 = 0xffffffff;
  for (let k: i32 = 0; k < nodes; k++) {
    if (k == except || load<u8>(ACTIVE + <usize>k) == 0) continue;
    const w = load<u32>(WEIGHT + (<usize>k << 2));
    if (w < bestWeight) {
      best = k;
      bestWeight = w;
    }
  }
  return best;
}

/** Code lengths (u8 per symbol at `lengths`) of the tree over SCALED's frequencies; false when a leaf is deeper than `limit`. */
function tryLengths(n: u32, limit: u32, lengths: usize): bool {
  memory.fill(lengths, 0, <usize>n);
  let leaves: i32 = 0;
  for (let s: u32 = 0; s < n; s++) {
    const f = load<u32>(SCALED + (<usize>s << 2));
    if (f == 0) continue;
    store<u32>(WEIGHT + (<usize>leaves << 2), f);
    store<u16>(LEAF_SYMBOL + (<usize>leaves << 1), <u16>s);
    store<u8>(ACTIVE + <usize>leaves, 1);
    leaves++;
  }
  if (leaves == 0) return true;
  if (leaves == 1) {
    store<u8>(lengths + <usize>load<u16>(LEAF_SYMBOL), 1);
    return true;
  }
  let nodes = leaves;
  for (let left = leaves; left > 1; left--) {
    const a = lightest(nodes, -1);
    const b = lightest(nodes, a);
    store<u32>(WEIGHT + (<usize>nodes << 2), load<u32>(WEIGHT + (<usize>a << 2)) + load<u32>(WEIGHT + (<usize>b << 2)));
    store<u16>(PARENT + (<usize>a << 1), <u16>nodes);
    store<u16>(PARENT + (<usize>b << 1), <u16>nodes);
    store<u8>(ACTIVE + <usize>a, 0);
    store<u8>(ACTIVE + <usize>b, 0);
    store<u8>(ACTIVE + <usize>nodes, 1);
    nodes++;
  }
  const root = nodes - 1;
  store<u8>(ACTIVE + <usize>root, 0);
  for (let j: i32 = 0; j < leaves; j++) {
    let depth: u32 = 0;
    for (let k = j; k != root; k = <i32>load<u16>(PARENT + (<usize>k << 1))) depth++;
    if (depth > limit) return false;
    store<u8>(lengths + <usize>load<u16>(LEAF_SYMBOL + (<usize>j << 1)), <u8>depth);
  }
  return true;
}

/** Code lengths, at most `limit`, for the n frequencies (u32) at `freq`, into n bytes at `lengths`; unused symbols get 0. */
export function codeLengths(freq: usize, n: u32, limit: u32, lengths: usize): void {
  memory.copy(SCALED, freq, <usize>n << 2);
  while (!tryLengths(n, limit, lengths)) {
    // Flatter frequencies make a shallower tree; a used symbol stays used.
    for (let s: u32 = 0; s < n; s++) {
      const f = load<u32>(SCALED + (<usize>s << 2));
      if (f != 0) store<u32>(SCALED + (<usize>s << 2), (f + 1) >> 1);
    }
  }
}

/** The canonical codes (u16 per symbol at `codes`, bit-reversed) of the n lengths at `lengths`. */
export function canonicalCodes(lengths: usize, n: u32, codes: usize): void {
  memory.fill(COUNT, 0, 32);
  for (let s: u32 = 0; s < n; s++) {
    const len = <usize>load<u8>(lengths + <usize>s);
    if (len != 0) store<u16>(COUNT + (len << 1), load<u16>(COUNT + (len << 1)) + 1);
  }
  let code: u32 = 0;
  for (let bits: usize = 1; bits < 16; bits++) {
    code = (code + <u32>load<u16>(COUNT + ((bits - 1) << 1))) << 1;
    store<u16>(NEXT + (bits << 1), <u16>code);
  }
  for (let s: u32 = 0; s < n; s++) {
    const len = <usize>load<u8>(lengths + <usize>s);
    if (len == 0) continue;
    const next = <u32>load<u16>(NEXT + (len << 1));
    store<u16>(NEXT + (len << 1), <u16>(next + 1));
    store<u16>(codes + (<usize>s << 1), <u16>reverseBits(next, <u32>len));
  }
}
