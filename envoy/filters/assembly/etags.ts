// ETags of the document filter's answers (src/discovery/peerPart.ts mergedEtag)
// and the client's If-None-Match read against them. Nothing here allocates
// per request but the input buffer, which grows once and is reused.
import { DIGEST_HEX, setDigest } from "./documents";
import { trim, trimAt } from "./mediaRanges";
import { sha256 } from "./sha256";

const SCRATCH: usize = memory.data(32, 8);

const HEX = "0123456789abcdef";
let etagInput: usize = 0;
let etagInputCap: usize = 0;

/** Writes the merged ETag (MERGED_ETAG_LEN bytes, quoted) of a local ETag and the set's digest to `out` (src/discovery/peerPart.ts mergedEtag). */
export function mergedEtag(set: usize, local: usize, localLen: usize, out: usize): void {
  const size = localLen + 1 + DIGEST_HEX;
  if (size > etagInputCap) {
    if (etagInput != 0) heap.free(etagInput);
    etagInputCap = size < 256 ? 256 : size;
    etagInput = heap.alloc(etagInputCap);
  }
  memory.copy(etagInput, local, localLen);
  store<u8>(etagInput + localLen, 0x20);
  memory.copy(etagInput + localLen + 1, setDigest(set), DIGEST_HEX);
  sha256(etagInput, size, SCRATCH);
  quotedHex(SCRATCH, out);
}

/** `"` + 64 lowercase hex of the 32 bytes at `digest` + `"`. */
export function quotedHex(digest: usize, out: usize): void {
  store<u8>(out, 0x22);
  for (let i: usize = 0; i < 32; i++) {
    const b = load<u8>(digest + i);
    store<u8>(out + 1 + 2 * i, <u8>HEX.charCodeAt(b >> 4));
    store<u8>(out + 2 + 2 * i, <u8>HEX.charCodeAt(b & 15));
  }
  store<u8>(out + 65, 0x22);
}

/** Whether the If-None-Match list [p, p + n) names `etag` (`*`; W/"x" equals "x"). */
export function namesEtag(p: usize, n: usize, etag: usize, etagLen: usize): bool {
  if (p == 0) return false;
  let i: usize = 0;
  while (i <= n) {
    let end = i;
    while (end < n && load<u8>(p + end) != 0x2c) end++;
    let len = trim(p + i, end - i);
    let tag = trimAt;
    if (len == 1 && load<u8>(tag) == 0x2a) return true;
    if (len >= 2 && load<u8>(tag) == 0x57 && load<u8>(tag + 1) == 0x2f) {
      tag += 2;
      len -= 2;
    }
    if (len == etagLen && memory.compare(tag, etag, len) == 0) return true;
    i = end + 1;
  }
  return false;
}
