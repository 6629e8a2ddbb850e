// mvproxy's certificate-identity HTTP filter, run inside Envoy
// (envoy.filters.http.wasm, proxy-wasm ABI 0.2.1).
//
// For every request it does what kube-apiserver's x509 authenticator would
// do with the client certificate Envoy verified, and hands the result to the
// apiserver as front-proxy request headers:
//   1. removes every header named x-remote-* (and the configured user, UID
//      and group headers and extra prefix), in any spelling;
//   2. reads and removes x-forwarded-client-cert (absent: done);
//   3. per certificate digest (memoized, bounded): checks the PEM against the
//      Hash, parses the DER: validity, subject (CN, O, UID), extended key usage;
//   4. on every request, checks the validity period against the current time;
//   5. sets user (CN), UID, one group per non-empty O, and the extra
//      authentication.kubernetes.io/credential-id = X509SHA256=<hex>; or
//      answers 401 (metav1.Status) when the certificate must be refused
//      (unless the apiserver would refuse it too and the request carries a
//      bearer token, which the apiserver then authenticates itself).
//
// Memory. Built with `--runtime minimal`: a real allocator (TLSF) plus a
// mark-and-sweep collector that runs only when the module calls __collect().
// `--runtime stub` never frees (every request would leak what the host
// allocates for header maps); `--runtime incremental` would add a shadow
// stack to every call. With minimal:
//   - buffers the host returns (header pairs, configuration) are unmanaged
//     (heap.alloc via proxy_on_memory_allocate) and freed right after use;
//   - the per-request path allocates no managed object on a cache hit: it
//     works on spans of linear memory and reuses module-level scratch buffers;
//   - stream bookkeeping lives in an unmanaged hash table (streams.ts), so
//     a request that hits the cache leaves no garbage at all;
//   - misses (parsing a new certificate) and configuration allocate managed
//     objects; the collector runs at the end of an outermost callback (no
//     managed reference live on the stack) once enough of that work has
//     piled up (about 32 misses), so memory stays bounded and requests that
//     hit the cache never pay for a collection;
//   - the certificate cache is bounded in entries and in bytes.

import {
  ACTION_CONTINUE,
  ACTION_PAUSE,
  BUFFER_PLUGIN_CONFIGURATION,
  LOG_WARN,
  MAP_HTTP_REQUEST_HEADERS,
  STATUS_OK,
  logString,
  proxy_add_header_map_value,
  proxy_get_buffer_bytes,
  proxy_get_current_time_nanoseconds,
  proxy_get_header_map_pairs,
  proxy_remove_header_map_value,
  proxy_replace_header_map_value,
  proxy_send_local_response,
} from "./abi";
import { Config, configError, defaultConfig, parseConfig } from "./config";
import { Certificate, certificateError, parseCertificate } from "./certificate";
import { sha256 } from "./sha256";
import { streamDelete, streamGet, streamSet } from "./streams";
import { XFCC_DIGEST, certEnd, certStart, decodeCert, pemToDer, scanXfcc, xfccError } from "./xfcc";

// ---------------------------------------------------------------------------
// ABI marker and memory management

export function proxy_abi_version_0_2_1(): void {}

export function proxy_on_memory_allocate(size: usize): usize {
  return heap.alloc(size);
}

export function malloc(size: usize): usize {
  return heap.alloc(size);
}

// ---------------------------------------------------------------------------
// Garbage collection at safe points

/** Nesting of callbacks from the host (a host call could call back in). */
let depth: i32 = 0;
/** Managed garbage produced since the last collection, in rough units. */
let debt: i32 = 0;
/** Collect after about this much (a miss is 64 units). */
const DEBT_LIMIT: i32 = 2048;

function enter(): void {
  depth++;
}

/** Leaves a callback; at the outermost level, collects when debt is high. */
function leave(): void {
  depth--;
  if (depth == 0 && debt >= DEBT_LIMIT) {
    debt = 0;
    __collect();
  }
}

// ---------------------------------------------------------------------------
// Contexts and configuration

/** Configuration per plugin (root) context. */
const roots = new Map<u32, Config>();
/** Used for a stream whose plugin context is unknown (never expected). */
let fallbackConfig: Config = defaultConfig();

export function proxy_on_vm_start(_rootContextId: u32, _vmConfigurationSize: usize): bool {
  return true;
}

export function proxy_on_context_create(contextId: u32, parentContextId: u32): void {
  enter();
  if (parentContextId != 0) streamSet(contextId, parentContextId);
  leave();
}

export function proxy_on_configure(rootContextId: u32, configurationSize: usize): bool {
  enter();
  let config: Config | null = null;
  if (configurationSize == 0) {
    config = defaultConfig();
  } else {
    const ptrs = memory.data(16, 8);
    if (proxy_get_buffer_bytes(BUFFER_PLUGIN_CONFIGURATION, 0, configurationSize, ptrs, ptrs + 4) == STATUS_OK) {
      const data = <usize>load<u32>(ptrs);
      const size = <usize>load<u32>(ptrs + 4);
      config = parseConfig(data, size);
      if (data != 0) heap.free(data);
      if (config === null) logString(LOG_WARN, "mvproxy identity filter: configuration refused: " + configError);
    } else {
      logString(LOG_WARN, "mvproxy identity filter: cannot read the plugin configuration");
    }
  }
  debt += DEBT_LIMIT; // configuring is rare: collect now
  if (config !== null) {
    roots.set(rootContextId, config);
    fallbackConfig = config;
  }
  leave();
  return config !== null;
}

export function proxy_on_done(_contextId: u32): bool {
  return true;
}

export function proxy_on_log(_contextId: u32): void {}

export function proxy_on_delete(contextId: u32): void {
  enter();
  if (!streamDelete(contextId) && roots.has(contextId)) {
    roots.delete(contextId);
    debt += 64;
  }
  leave();
}

function configOf(contextId: u32): Config {
  const root = streamGet(contextId);
  if (root != 0 && roots.has(root)) return roots.get(root);
  return fallbackConfig;
}

// ---------------------------------------------------------------------------
// The certificate cache: digest -> what the certificate says, bounded, the
// oldest entry evicted first. Keyed by the first 8 bytes of the digest; the
// full digest is compared on lookup.

const KIND_IDENTITY: i32 = 0;
const KIND_ANONYMOUS: i32 = 1;
const KIND_REJECTED: i32 = 2;

const LOGGED_NOT_YET_VALID: i32 = 1;
const LOGGED_EXPIRED: i32 = 2;

class Entry {
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

function cacheGet(digest: usize): Entry | null {
  const key = load<u64>(digest);
  if (!cache.has(key)) return null;
  const entry = cache.get(key);
  return entry.matches(digest) ? entry : null;
}

function cachePut(entry: Entry): void {
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

// ---------------------------------------------------------------------------
// Scratch memory reused by every miss (unmanaged; grows to the largest
// certificate seen, bounded by MAX_XFCC).

/** Larger XFCC values are refused (Envoy's default request header limit is 60 KiB). */
const MAX_XFCC: usize = 96 * 1024;
let scratch: usize = 0;
let scratchSize: usize = 0;

function scratchFor(size: usize): usize {
  if (size > scratchSize) {
    if (scratch != 0) heap.free(scratch);
    scratch = heap.alloc(size);
    scratchSize = size;
  }
  return scratch;
}

const DER_DIGEST: usize = memory.data(32, 8);
const HEX = "0123456789abcdef";

function digestHex(digest: usize): string {
  let s = "";
  for (let i: usize = 0; i < 32; i++) {
    const b = <i32>load<u8>(digest + i);
    s += HEX.charAt(b >> 4) + HEX.charAt(b & 15);
  }
  return s;
}

// ---------------------------------------------------------------------------
// Rejection

const UNAUTHORIZED_BODY = String.UTF8.encode(
  '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}',
);
const REJECT_DETAILS = String.UTF8.encode("mvproxy_client_certificate_rejected");
const REJECT_HEADERS = serializeHeaders("content-type", "application/json");

/** One header as a proxy-wasm serialized map. */
function serializeHeaders(key: string, value: string): ArrayBuffer {
  const k = String.UTF8.encode(key);
  const v = String.UTF8.encode(value);
  const out = new ArrayBuffer(12 + k.byteLength + 1 + v.byteLength + 1);
  const p = changetype<usize>(out);
  store<u32>(p, 1);
  store<u32>(p, k.byteLength, 4);
  store<u32>(p, v.byteLength, 8);
  memory.copy(p + 12, changetype<usize>(k), k.byteLength);
  store<u8>(p + 12 + k.byteLength, 0);
  memory.copy(p + 13 + k.byteLength, changetype<usize>(v), v.byteLength);
  store<u8>(p + 13 + k.byteLength + v.byteLength, 0);
  return out;
}

function reject(): i32 {
  proxy_send_local_response(
    401,
    changetype<usize>(REJECT_DETAILS),
    REJECT_DETAILS.byteLength,
    changetype<usize>(UNAUTHORIZED_BODY),
    UNAUTHORIZED_BODY.byteLength,
    changetype<usize>(REJECT_HEADERS),
    REJECT_HEADERS.byteLength,
    -1,
  );
  return ACTION_PAUSE;
}

/** XFCC values that cannot be memoized (unreadable, Hash mismatch): logged at powers of two, never flooding. */
let unreadableCount: u64 = 0;

function rejectUnreadable(reason: string): i32 {
  unreadableCount++;
  if ((unreadableCount & (unreadableCount - 1)) == 0) {
    logString(
      LOG_WARN,
      "mvproxy identity filter: client certificate rejected: " + reason + " (" + unreadableCount.toString() + " such requests so far)",
    );
  }
  debt += 64;
  return reject();
}

// ---------------------------------------------------------------------------
// Header names

const X_REMOTE = "x-remote-";
const XFCC = "x-forwarded-client-cert";
const AUTHORIZATION = "authorization";

/** Whether the name at [p, p + n) starts with the ASCII-lowercase `prefix` (case-insensitive). */
function startsWithCI(p: usize, n: usize, prefix: usize, prefixLen: usize): bool {
  if (n < prefixLen) return false;
  for (let i: usize = 0; i < prefixLen; i++) {
    let c = <u32>load<u8>(p + i);
    if (c >= 0x41 && c <= 0x5a) c |= 0x20;
    if (c != <u32>load<u8>(prefix + i)) return false;
  }
  return true;
}

function equalsCI(p: usize, n: usize, name: usize, nameLen: usize): bool {
  return n == nameLen && startsWithCI(p, n, name, nameLen);
}

const X_REMOTE_BYTES = String.UTF8.encode(X_REMOTE);
const XFCC_BYTES = String.UTF8.encode(XFCC);
const AUTHORIZATION_BYTES = String.UTF8.encode(AUTHORIZATION);

function isStripped(p: usize, n: usize, config: Config): bool {
  return (
    startsWithCI(p, n, changetype<usize>(X_REMOTE_BYTES), X_REMOTE_BYTES.byteLength) ||
    equalsCI(p, n, changetype<usize>(config.userHeader), config.userHeader.byteLength) ||
    equalsCI(p, n, changetype<usize>(config.uidHeader), config.uidHeader.byteLength) ||
    equalsCI(p, n, changetype<usize>(config.groupHeader), config.groupHeader.byteLength) ||
    startsWithCI(p, n, changetype<usize>(config.extraHeaderPrefix), config.extraHeaderPrefix.byteLength)
  );
}

// ---------------------------------------------------------------------------
// The request

const RET: usize = memory.data(16, 8);
const NOW: usize = memory.data(8, 8);

export function proxy_on_request_headers(contextId: u32, _numHeaders: u32, _endOfStream: bool): i32 {
  enter();
  const action = onRequestHeaders(configOf(contextId));
  leave();
  return action;
}

function onRequestHeaders(config: Config): i32 {
  // 1. Strip identity headers; find x-forwarded-client-cert.
  store<u32>(RET, 0);
  store<u32>(RET, 0, 4);
  if (proxy_get_header_map_pairs(MAP_HTTP_REQUEST_HEADERS, RET, RET + 4) != STATUS_OK) {
    // Cannot see the headers, so cannot strip forged identity: fail closed.
    return rejectUnreadable("cannot read the request headers");
  }
  const pairs = <usize>load<u32>(RET);
  const pairsSize = <usize>load<u32>(RET, 4);
  let xfccAt: usize = 0;
  let xfccLen: usize = 0;
  let xfccCount: i32 = 0;
  let bearer = false;
  let malformed = false;
  if (pairs != 0 && pairsSize >= 4) {
    const count = <usize>load<u32>(pairs);
    // Sizes table, then NUL-terminated keys and values.
    if (count > (pairsSize - 4) / 8) {
      malformed = true;
    } else {
      let sizes = pairs + 4;
      let data = sizes + count * 8;
      const end = pairs + pairsSize;
      for (let i: usize = 0; i < count; i++) {
        const keyLen = <usize>load<u32>(sizes);
        const valueLen = <usize>load<u32>(sizes, 4);
        sizes += 8;
        if (data > end || end - data < keyLen + valueLen + 2) {
          malformed = true;
          break;
        }
        const key = data;
        const value = data + keyLen + 1;
        data = value + valueLen + 1;
        if (isStripped(key, keyLen, config)) {
          proxy_remove_header_map_value(MAP_HTTP_REQUEST_HEADERS, key, keyLen);
        } else if (equalsCI(key, keyLen, changetype<usize>(XFCC_BYTES), XFCC_BYTES.byteLength)) {
          xfccCount++;
          xfccAt = value;
          xfccLen = valueLen;
        } else if (equalsCI(key, keyLen, changetype<usize>(AUTHORIZATION_BYTES), AUTHORIZATION_BYTES.byteLength)) {
          bearer = true;
        }
      }
    }
  }
  if (malformed) {
    if (pairs != 0) heap.free(pairs);
    return rejectUnreadable("malformed header map from the host");
  }
  if (xfccCount == 0) {
    if (pairs != 0) heap.free(pairs);
    return ACTION_CONTINUE;
  }
  // 2. The XFCC value stays readable in our copy of the pairs until freed.
  proxy_remove_header_map_value(MAP_HTTP_REQUEST_HEADERS, changetype<usize>(XFCC_BYTES), XFCC_BYTES.byteLength);
  const action = identify(config, xfccAt, xfccLen, xfccCount, bearer);
  heap.free(pairs);
  return action;
}

/**
 * A certificate the apiserver's x509 authenticator refuses does not fail the
 * request there: the next authenticator reads the bearer token. So with an
 * Authorization header the request goes on without identity (the apiserver
 * answers 401 itself if the token is no good); without one, 401 here.
 */
function refuse(bearer: bool): i32 {
  return bearer ? ACTION_CONTINUE : reject();
}

function identify(config: Config, xfcc: usize, xfccLen: usize, xfccCount: i32, bearer: bool): i32 {
  // SANITIZE_SET writes exactly one header with exactly one element.
  if (xfccCount != 1) return rejectUnreadable("unreadable x-forwarded-client-cert: more than one header");
  if (xfccLen > MAX_XFCC) return rejectUnreadable("unreadable x-forwarded-client-cert: too large");
  if (!scanXfcc(xfcc, xfccLen)) return rejectUnreadable("unreadable x-forwarded-client-cert: " + xfccError);

  // 3. Memoized per digest.
  let entry = cacheGet(XFCC_DIGEST);
  if (entry === null) {
    entry = readCertificate();
    if (entry === null) return ACTION_PAUSE; // rejected and answered, not memoized
    cachePut(entry);
  }
  if (entry.kind == KIND_REJECTED) return entry.apiserverRefuses ? refuse(bearer) : reject();

  // 4. Validity, on every request (a long-lived connection outlives its certificate).
  proxy_get_current_time_nanoseconds(NOW);
  const now = <i64>load<u64>(NOW);
  const nowSeconds = now / 1_000_000_000;
  const nowFraction = now % 1_000_000_000;
  if (nowSeconds < entry.notBefore) {
    if ((entry.logged & LOGGED_NOT_YET_VALID) == 0) {
      entry.logged |= LOGGED_NOT_YET_VALID;
      warnCertificate(entry, "the client certificate is not valid yet");
    }
    return refuse(bearer);
  }
  if (nowSeconds > entry.notAfter || (nowSeconds == entry.notAfter && nowFraction > 0)) {
    if ((entry.logged & LOGGED_EXPIRED) == 0) {
      entry.logged |= LOGGED_EXPIRED;
      warnCertificate(entry, "the client certificate has expired");
    }
    return refuse(bearer);
  }
  if (entry.kind == KIND_ANONYMOUS) return ACTION_CONTINUE;

  // 5. Identity.
  const user = entry.user!;
  proxy_replace_header_map_value(
    MAP_HTTP_REQUEST_HEADERS,
    changetype<usize>(config.userHeader),
    config.userHeader.byteLength,
    changetype<usize>(user),
    user.byteLength,
  );
  const uid = entry.uid;
  if (uid !== null) {
    proxy_replace_header_map_value(
      MAP_HTTP_REQUEST_HEADERS,
      changetype<usize>(config.uidHeader),
      config.uidHeader.byteLength,
      changetype<usize>(uid),
      uid.byteLength,
    );
  }
  const groups = entry.groups;
  for (let i = 0; i < groups.length; i++) {
    const group = unchecked(groups[i]);
    proxy_add_header_map_value(
      MAP_HTTP_REQUEST_HEADERS,
      changetype<usize>(config.groupHeader),
      config.groupHeader.byteLength,
      changetype<usize>(group),
      group.byteLength,
    );
  }
  proxy_replace_header_map_value(
    MAP_HTTP_REQUEST_HEADERS,
    changetype<usize>(config.credentialIdHeader),
    config.credentialIdHeader.byteLength,
    changetype<usize>(entry.credentialId),
    entry.credentialId.byteLength,
  );
  return ACTION_CONTINUE;
}

function warnCertificate(entry: Entry, reason: string): void {
  logString(
    LOG_WARN,
    "mvproxy identity filter: client certificate " + String.UTF8.decode(entry.credentialId) + " rejected: " + reason,
  );
}

/**
 * A cache miss: decodes the Cert of the XFCC just scanned, checks it against
 * the Hash, and reads it. Returns the entry to memoize, or null when the
 * request was rejected without memoizing (the digest is not the certificate's).
 */
function readCertificate(): Entry | null {
  debt += 64;
  const encodedLen = certEnd - certStart;
  const buf = scratchFor(encodedLen);
  const pemLen = decodeCert(buf);
  if (pemLen < 0) {
    rejectUnreadable("unreadable x-forwarded-client-cert: Cert is not URL-encoded");
    return null;
  }
  const derLen = pemToDer(buf, <usize>pemLen, buf);
  if (derLen <= 0) {
    rejectUnreadable("unreadable x-forwarded-client-cert: Cert is not one PEM certificate");
    return null;
  }
  sha256(buf, <usize>derLen, DER_DIGEST);
  if (memory.compare(DER_DIGEST, XFCC_DIGEST, 32) != 0) {
    rejectUnreadable("the client certificate does not match its Hash");
    return null;
  }

  const entry = new Entry();
  entry.d0 = load<u64>(DER_DIGEST);
  entry.d1 = load<u64>(DER_DIGEST, 8);
  entry.d2 = load<u64>(DER_DIGEST, 16);
  entry.d3 = load<u64>(DER_DIGEST, 24);
  entry.credentialId = String.UTF8.encode("X509SHA256=" + digestHex(DER_DIGEST));

  const cert = parseCertificate(buf, <usize>derLen);
  const reason = cert === null ? "the certificate cannot be parsed: " + certificateError : judge(cert, entry);
  if (reason.length > 0) {
    entry.kind = KIND_REJECTED;
    warnCertificate(entry, reason);
  }
  return entry;
}

/** Fills `entry` from a parsed certificate; returns why it is refused, or "". */
function judge(cert: Certificate, entry: Entry): string {
  entry.notBefore = cert.notBefore;
  entry.notAfter = cert.notAfter;
  // Go verifies client certificates for ExtKeyUsageClientAuth.
  if (!cert.clientAuthAllowed) return apiserverRefuses(entry, "the certificate is not valid for client authentication (extended key usage)");
  const cn = cert.commonName;
  // Upstream's CommonNameUserConversion: no CN, no user (and nothing else is read).
  if (cn === null || cn.byteLength == 0) {
    entry.kind = KIND_ANONYMOUS;
    return "";
  }
  // Upstream's parseUIDFromCert.
  if (cert.uids.length > 1) return apiserverRefuses(entry, "the certificate has more than one UID");
  let uid: ArrayBuffer | null = null;
  if (cert.uids.length == 1) {
    uid = unchecked(cert.uids[0]);
    if (uid.byteLength == 0) return apiserverRefuses(entry, "the certificate has an empty UID");
    if (!sendable(uid)) return "the certificate's UID cannot be sent as a header value";
  }
  if (!sendable(cn)) return "the certificate's CN cannot be sent as a header value (control characters or surrounding whitespace)";
  const groups = new Array<ArrayBuffer>();
  for (let i = 0; i < cert.organizations.length; i++) {
    const o = unchecked(cert.organizations[i]);
    // An empty O grants nothing: the request-header authenticator ignores empty values.
    if (o.byteLength == 0) continue;
    if (!sendable(o)) return "the certificate names a group (O) that cannot be sent as a header value (control characters or surrounding whitespace)";
    groups.push(o);
  }
  entry.kind = KIND_IDENTITY;
  entry.user = cn;
  entry.uid = uid;
  entry.groups = groups;
  return "";
}

/** Marks a refusal the apiserver makes too (see Entry.apiserverRefuses) and returns its reason. */
function apiserverRefuses(entry: Entry, reason: string): string {
  entry.apiserverRefuses = true;
  return reason;
}

/**
 * Whether HTTP carries the value faithfully: no control characters (other
 * than tab, inside) and no leading or trailing space or tab, which HTTP
 * parsers trim.
 */
function sendable(value: ArrayBuffer): bool {
  const p = changetype<usize>(value);
  const n = <usize>value.byteLength;
  if (n == 0) return true;
  for (let i: usize = 0; i < n; i++) {
    const c = load<u8>(p + i);
    if ((c < 0x20 && c != 0x09) || c == 0x7f) return false;
  }
  const first = load<u8>(p);
  const last = load<u8>(p + n - 1);
  return !(first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09);
}

