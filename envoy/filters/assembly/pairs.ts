// The walk over a header map as proxy_get_header_map_pairs returns it: a u32
// count, a sizes table (u32 key length, u32 value length per pair), then the
// NUL-terminated keys and values. Shared by both filters' request paths, so it
// allocates nothing: AssemblyScript has no closures over locals, so the walk
// is a module-level cursor and each pair lands in the exported globals below.
//
//   if (!pairsBegin(pairs, size)) { /* count does not fit: malformed */ }
//   let r = pairsNext();
//   for (; r > 0; r = pairsNext()) { /* pairKey, pairKeyLen, pairValue, pairValueLen */ }
//   if (r < 0) { /* a pair runs past the end: malformed */ }

let sizesAt: usize = 0;
let dataAt: usize = 0;
let endAt: usize = 0;
let left: usize = 0;

/** The current pair (valid after pairsNext() returned 1, while the buffer lives). */
export let pairKey: usize = 0;
export let pairKeyLen: usize = 0;
export let pairValue: usize = 0;
export let pairValueLen: usize = 0;

/**
 * Starts a walk over the pairs buffer [pairs, pairs + size). An absent buffer
 * (0) or one shorter than the count walks as empty. Returns false, with an
 * empty walk, when the count cannot fit in the buffer.
 */
export function pairsBegin(pairs: usize, size: usize): bool {
  left = 0;
  if (pairs == 0 || size < 4) return true;
  const count = <usize>load<u32>(pairs);
  if (count > (size - 4) / 8) return false;
  sizesAt = pairs + 4;
  dataAt = sizesAt + count * 8;
  endAt = pairs + size;
  left = count;
  return true;
}

/** 1: the next pair is in pairKey/pairKeyLen/pairValue/pairValueLen; 0: no more pairs; -1: malformed (the walk ends). */
export function pairsNext(): i32 {
  if (left == 0) return 0;
  const keyLen = <usize>load<u32>(sizesAt);
  const valueLen = <usize>load<u32>(sizesAt, 4);
  sizesAt += 8;
  const data = dataAt;
  if (data > endAt || endAt - data < keyLen + valueLen + 2) {
    left = 0;
    return -1;
  }
  left--;
  pairKey = data;
  pairKeyLen = keyLen;
  pairValue = data + keyLen + 1;
  pairValueLen = valueLen;
  dataAt = pairValue + valueLen + 1;
  return 1;
}
