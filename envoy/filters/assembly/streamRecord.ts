// What a document filter stream remembers between its callbacks, in one
// block of unmanaged memory (its address is the stream's second state word,
// streams.ts): the client's If-None-Match, the revalidation the filter sent,
// what the response side decided, which document the request asks for, and
// the local body collected so far.

/** FLAG_GZIP, FLAG_REVALIDATED | the format (low bits): the filter sent the cache's local ETag as If-None-Match. */
export const R_FLAGS: usize = 0;
export const FLAG_REVALIDATED: u32 = 0x100;
/** The client takes gzip (its first Accept-Encoding lists `gzip`, kube-apiserver's rule). */
export const FLAG_GZIP: u32 = 0x200;
export const R_MODE: usize = 4;
/** The client's If-None-Match values, joined with commas (unmanaged copy; 0: none). */
export const R_INM: usize = 8;
export const R_INM_LEN: usize = 12;
/** The local body collected so far (MODE_COLLECT). */
export const R_BODY: usize = 16;
export const R_BODY_LEN: usize = 20;
export const R_BODY_CAP: usize = 24;
export const R_FORMAT: usize = 28;
/** The local ETag of the answer (copied from its headers; 0: it had none). */
export const R_LOCAL_ETAG: usize = 32;
export const R_LOCAL_ETAG_LEN: usize = 36;
/** The ETag sent to revalidate (a copy). */
export const R_SENT_ETAG: usize = 40;
export const R_SENT_ETAG_LEN: usize = 44;
/** Which document the request asks for (legacyPath.ts DOC_*), and the peer node its legacy merge reads. */
export const R_DOC: usize = 48;
export const R_DOC_NODE: usize = 52;
const RECORD_SIZE: usize = 56;

/** Waiting for the response. */
export const MODE_WAIT: u32 = 0;
/** The local answer goes through (decided, or failed open). */
export const MODE_PASS: u32 = 1;
/** Collecting the local body to splice at its end. */
export const MODE_COLLECT: u32 = 2;
/** Dropping the local body (its ETag is the cache's): the cached merged body goes out at its end. */
export const MODE_CACHED: u32 = 3;
/** Dropping the local body: a 304 goes out at its end (the client's If-None-Match names the merged ETag). */
export const MODE_NOT_MODIFIED: u32 = 4;

export function recordNew(): usize {
  const record = heap.alloc(RECORD_SIZE);
  memory.fill(record, 0, RECORD_SIZE);
  return record;
}

function freeField(record: usize, off: usize): void {
  const p = <usize>load<u32>(record + off);
  if (p != 0) heap.free(p);
  store<u32>(record + off, 0);
}

/** Frees the collected body (and forgets it). */
export function recordFreeBody(record: usize): void {
  freeField(record, R_BODY);
  store<u32>(record + R_BODY_LEN, 0);
  store<u32>(record + R_BODY_CAP, 0);
}

export function recordFree(record: usize): void {
  freeField(record, R_INM);
  freeField(record, R_BODY);
  freeField(record, R_LOCAL_ETAG);
  freeField(record, R_SENT_ETAG);
  heap.free(record);
}

/** Appends [p, p + n) to the record's body; false past `max` bytes. */
export function recordCollect(record: usize, p: usize, n: usize, max: usize): bool {
  const len = <usize>load<u32>(record + R_BODY_LEN);
  if (<u64>len + <u64>n > <u64>max) return false;
  let cap = <usize>load<u32>(record + R_BODY_CAP);
  let body = <usize>load<u32>(record + R_BODY);
  if (len + n > cap) {
    cap = cap == 0 ? 64 << 10 : cap;
    while (cap < len + n) cap <<= 1;
    body = body == 0 ? heap.alloc(cap) : heap.realloc(body, cap);
    store<u32>(record + R_BODY, <u32>body);
    store<u32>(record + R_BODY_CAP, <u32>cap);
  }
  memory.copy(body + len, p, n);
  store<u32>(record + R_BODY_LEN, <u32>(len + n));
  return true;
}
