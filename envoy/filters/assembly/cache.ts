// The certificate cache: certificate digest -> what the certificate says
// (an Entry), bounded in entries and in bytes, the oldest entry evicted first.
// Keyed by the first 8 bytes of the digest; the full digest is compared on lookup.

export const KIND_IDENTITY: i32 = 0;
export const KIND_ANONYMOUS: i32 = 1;
export const KIND_REJECTED: i32 = 2;

export const LOGGED_NOT_YET_VALID: i32 = 1;
export const LOGGED_EXPIRED: i32 = 2;

export class Entry {
  d0: u64 = 0;
  d1: u64 = 0;
  d2: u64 = 0;
  d3: u64 = 0;
  kind: i32 = KIND_REJECTED;
  notBefore: i64 = 0;
  notAfter: i64 = 0;
  user: ArrayBuffer | null = null;
  uid: ArrayBuffer | null = null;
  groups: Array<ArrayBuffer> = [];
  /** "X509SHA256=<lowercase hex>" */
  credentialId: ArrayBuffer = new ArrayBuffer(0);
  /** Validity-period rejections already logged (LOGGED_*). */
  logged: i32 = 0;
  /**
   * A rejection kube-apiserver's x509 authenticator makes too (extended key
   * usage, UIDs): there it is not fatal, and the request's bearer token may
   * still authenticate it. Rejections of our own (a name HTTP cannot carry,
   * a certificate that cannot be read) are always a 401.
   */
  apiserverRefuses: bool = false;

  /** What the entry costs the cache's byte budget. */
  bytes(): usize {
    let n = ENTRY_OVERHEAD + <usize>this.credentialId.byteLength;
    const user = this.user;
    if (user !== null) n += <usize>user.byteLength;
    const uid = this.uid;
    if (uid !== null) n += <usize>uid.byteLength;
    for (let i = 0; i < this.groups.length; i++) n += 16 + <usize>unchecked(this.groups[i]).byteLength;
    return n;
  }

  matches(digest: usize): bool {
    return (
      this.d0 == load<u64>(digest) &&
      this.d1 == load<u64>(digest, 8) &&
      this.d2 == load<u64>(digest, 16) &&
      this.d3 == load<u64>(digest, 24)
    );
  }
}

const CACHE_CAPACITY: i32 = 4096;
/**
 * Bytes of identity data (names, plus a fixed cost per entry) the cache may
 * hold: typical certificates fill the 4096 entries with about 1 MiB; a few
 * with huge subjects evict older entries instead of growing without bound.
 */
const CACHE_BYTES: usize = 4 << 20;
const ENTRY_OVERHEAD: usize = 256;
const cache = new Map<u64, Entry>();
/** Insertion order, for eviction: a queue of `ringCount` entries from `ringHead`. */
const ring = new StaticArray<Entry | null>(CACHE_CAPACITY);
let ringHead: i32 = 0;
let ringCount: i32 = 0;
let cacheBytes: usize = 0;

export function cacheGet(digest: usize): Entry | null {
  const key = load<u64>(digest);
  if (!cache.has(key)) return null;
  const entry = cache.get(key);
  return entry.matches(digest) ? entry : null;
}

export function cachePut(entry: Entry): void {
  const size = entry.bytes();
  while (ringCount > 0 && (ringCount == CACHE_CAPACITY || cacheBytes + size > CACHE_BYTES)) {
    const old = unchecked(ring[ringHead])!;
    if (cache.has(old.d0) && cache.get(old.d0) === old) cache.delete(old.d0);
    unchecked((ring[ringHead] = null));
    cacheBytes -= old.bytes();
    ringHead = (ringHead + 1) % CACHE_CAPACITY;
    ringCount--;
  }
  unchecked((ring[(ringHead + ringCount) % CACHE_CAPACITY] = entry));
  ringCount++;
  cacheBytes += size;
  cache.set(entry.d0, entry);
}
