// The identity module: mvproxy's identity filter inside Envoy
// (envoy.filters.http.wasm, proxy-wasm ABI 0.2.1; vm_id "mvproxy.identity",
// fail closed). The document filters are another module in another VM
// (documentModule.ts): this one exports no body callback and no response
// callback, so no response and no body ever enters this VM.
//
// For every request the identity filter does what kube-apiserver's x509
// authenticator would do with the client certificate Envoy verified, and
// hands the result to the apiserver as front-proxy request headers:
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
//     a request that hits the cache (cache.ts) leaves no garbage at all;
//   - misses (parsing a new certificate) and configuration allocate managed
//     objects; the collector runs at the end of an outermost callback (no
//     managed reference live on the stack) once enough of that work has
//     piled up (about 32 misses; gc.ts), so memory stays bounded and requests
//     that hit the cache never pay for a collection;
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
} from "./abi";
import { KIND_ANONYMOUS, KIND_REJECTED, LOGGED_EXPIRED, LOGGED_NOT_YET_VALID, cacheGet, cachePut } from "./cache";
import { Config, configError, defaultConfig, parseConfig } from "./config";
import { DEBT_LIMIT, addDebt, enter, leave } from "./gc";
import { AUTHORIZATION_BYTES, XFCC_BYTES, equalsCI, isStripped } from "./headers";
import { MAX_XFCC, readCertificate, warnCertificate } from "./identity";
import { pairKey, pairKeyLen, pairValue, pairValueLen, pairsBegin, pairsNext } from "./pairs";
import { refuse, reject, rejectUnreadable } from "./rejection";
import { streamDelete, streamGet } from "./streams";
import { XFCC_DIGEST, scanXfcc, xfccError } from "./xfcc";

// ---------------------------------------------------------------------------
// ABI entry points shared with the document module (moduleEntry.ts)

export {
  malloc,
  proxy_abi_version_0_2_1,
  proxy_on_context_create,
  proxy_on_done,
  proxy_on_log,
  proxy_on_memory_allocate,
  proxy_on_vm_start,
} from "./moduleEntry";

// ---------------------------------------------------------------------------
// Contexts and configuration

/** Configuration per plugin (root) context. */
const roots = new Map<u32, Config>();
/** Used for a stream whose plugin context is unknown (never expected). */
let fallbackConfig: Config = defaultConfig();

export function proxy_on_configure(rootContextId: u32, configurationSize: usize): bool {
  enter();
  let data: usize = 0;
  let size: usize = 0;
  if (configurationSize != 0) {
    const ptrs = memory.data(16, 8);
    store<u32>(ptrs, 0);
    store<u32>(ptrs, 0, 4);
    if (proxy_get_buffer_bytes(BUFFER_PLUGIN_CONFIGURATION, 0, configurationSize, ptrs, ptrs + 4) == STATUS_OK) {
      data = <usize>load<u32>(ptrs);
      size = <usize>load<u32>(ptrs + 4);
    } else {
      logString(LOG_WARN, "mvproxy filter: cannot read the plugin configuration");
      leave();
      return false;
    }
  }
  const config = size == 0 ? defaultConfig() : parseConfig(data, size);
  if (data != 0) heap.free(data);
  addDebt(DEBT_LIMIT); // configuring is rare: collect now
  if (config === null) {
    logString(LOG_WARN, "mvproxy identity filter: configuration refused: " + configError);
    leave();
    return false;
  }
  roots.set(rootContextId, config);
  fallbackConfig = config;
  leave();
  return true;
}

export function proxy_on_delete(contextId: u32): void {
  enter();
  if (!streamDelete(contextId) && roots.has(contextId)) {
    roots.delete(contextId);
    addDebt(64);
  }
  leave();
}

function configOf(contextId: u32): Config {
  const root = streamGet(contextId);
  if (root != 0 && roots.has(root)) return roots.get(root);
  return fallbackConfig;
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

// No proxy_on_response_headers and no proxy_on_response_body (the ABI
// requires neither): Envoy then never calls into this VM for a response, so
// watches and long lists never touch it.

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
  // Absent or empty: no headers. Sizes table, then NUL-terminated keys and values.
  let malformed = !pairsBegin(pairs, pairsSize);
  if (!malformed) {
    let r = pairsNext();
    for (; r > 0; r = pairsNext()) {
      const key = pairKey;
      const keyLen = pairKeyLen;
      if (isStripped(key, keyLen, config)) {
        proxy_remove_header_map_value(MAP_HTTP_REQUEST_HEADERS, key, keyLen);
      } else if (equalsCI(key, keyLen, changetype<usize>(XFCC_BYTES), XFCC_BYTES.byteLength)) {
        xfccCount++;
        xfccAt = pairValue;
        xfccLen = pairValueLen;
      } else if (equalsCI(key, keyLen, changetype<usize>(AUTHORIZATION_BYTES), AUTHORIZATION_BYTES.byteLength)) {
        bearer = true;
      }
    }
    if (r < 0) malformed = true;
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
  setRequestHeader(config.userHeader, entry.user!, true);
  const uid = entry.uid;
  if (uid !== null) setRequestHeader(config.uidHeader, uid, true);
  const groups = entry.groups;
  for (let i = 0; i < groups.length; i++) setRequestHeader(config.groupHeader, unchecked(groups[i]), false);
  setRequestHeader(config.credentialIdHeader, entry.credentialId, true);
  return ACTION_CONTINUE;
}

/** Sets a request header: replacing any value (`replace`), or adding one more. */
function setRequestHeader(name: ArrayBuffer, value: ArrayBuffer, replace: bool): void {
  const n = changetype<usize>(name);
  const v = changetype<usize>(value);
  if (replace) proxy_replace_header_map_value(MAP_HTTP_REQUEST_HEADERS, n, name.byteLength, v, value.byteLength);
  else proxy_add_header_map_value(MAP_HTTP_REQUEST_HEADERS, n, name.byteLength, v, value.byteLength);
}
