// Reading media ranges and header values in linear memory, for the
// document filter (documentFilter.ts): spans, Accept and Content-Type media
// ranges as kube-apiserver reads them, Accept-Encoding. Nothing here
// allocates.
import { equalsCI } from "./headers";
import { FORMAT_AGGREGATED_JSON, FORMAT_AGGREGATED_PROTOBUF, FORMAT_LEGACY_JSON, FORMAT_LEGACY_PROTOBUF } from "./documents";

const MEDIA_JSON = String.UTF8.encode("application/json");
const MEDIA_PROTOBUF = String.UTF8.encode("application/vnd.kubernetes.protobuf");
const PARAM_G = String.UTF8.encode("g");
const PARAM_V = String.UTF8.encode("v");
const PARAM_AS = String.UTF8.encode("as");
const PARAM_PROFILE = String.UTF8.encode("profile");
const PARAM_Q = String.UTF8.encode("q");
const APIDISCOVERY = String.UTF8.encode("apidiscovery.k8s.io");
const V2 = String.UTF8.encode("v2");
const LIST = String.UTF8.encode("APIGroupDiscoveryList");
const NOPEER = String.UTF8.encode("nopeer");
const GZIP = String.UTF8.encode("gzip");

// ---------------------------------------------------------------------------
// Spans of linear memory

function isSpace(c: u32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d || c == 0x0b || c == 0x0c;
}

/** Trims [p, p + n): the start goes to TRIM_AT, the length is returned. */
export let trimAt: usize = 0;
export function trim(p: usize, n: usize): usize {
  while (n > 0 && isSpace(load<u8>(p))) {
    p++;
    n--;
  }
  while (n > 0 && isSpace(load<u8>(p + n - 1))) n--;
  trimAt = p;
  return n;
}

function equals(p: usize, n: usize, b: ArrayBuffer): bool {
  return n == <usize>b.byteLength && memory.compare(p, changetype<usize>(b), n) == 0;
}

export function equalsNameCI(p: usize, n: usize, b: ArrayBuffer): bool {
  return equalsCI(p, n, changetype<usize>(b), <usize>b.byteLength);
}

/** Index of the next `sep` (or `alt`) at or after `i` outside double quotes, or n. */
function nextSeparator(p: usize, n: usize, i: usize, sep: u32, alt: u32): usize {
  let quoted = false;
  for (; i < n; i++) {
    const c = <u32>load<u8>(p + i);
    if (quoted && c == 0x5c) i++;
    else if (c == 0x22) quoted = !quoted;
    else if (!quoted && (c == sep || c == alt)) return i;
  }
  return n;
}

/** Whether the parameter `name=value` at [p, p + n) has this name (case-insensitive) and value (exact, quotes removed). */
let paramValueAt: usize = 0;
let paramValueLen: usize = 0;
function readParam(p: usize, n: usize, name: ArrayBuffer): bool {
  let eq: usize = 0;
  while (eq < n && load<u8>(p + eq) != 0x3d) eq++;
  if (eq == n) return false;
  const nameLen = trim(p, eq);
  if (!equalsNameCI(trimAt, nameLen, name)) return false;
  let valueLen = trim(p + eq + 1, n - eq - 1);
  let value = trimAt;
  if (valueLen >= 2 && load<u8>(value) == 0x22 && load<u8>(value + valueLen - 1) == 0x22) {
    value++;
    valueLen -= 2;
  }
  paramValueAt = value;
  paramValueLen = valueLen;
  return true;
}

// ---------------------------------------------------------------------------
// Request headers

/** Whether any media range of this Accept value has the parameter profile=nopeer. */
export function hasNoPeer(p: usize, n: usize): bool {
  let i: usize = 0;
  let first = true; // the media type itself, not a parameter
  while (i <= n) {
    const end = nextSeparator(p, n, i, 0x2c, 0x3b);
    if (!first && readParam(p + i, end - i, PARAM_PROFILE) && equals(paramValueAt, paramValueLen, NOPEER)) return true;
    first = end < n && load<u8>(p + end) == 0x2c;
    i = end + 1;
  }
  return false;
}

/** Whether some parameter q of a media range in [p, p + n) has a value not starting with "0" (so it may outrank the first range). */
function hasHighQuality(p: usize, n: usize): bool {
  let i: usize = 0;
  while (i <= n) {
    const end = nextSeparator(p, n, i, 0x2c, 0x3b);
    if (readParam(p + i, end - i, PARAM_Q) && (paramValueLen == 0 || load<u8>(paramValueAt) != 0x30)) return true;
    i = end + 1;
  }
  return false;
}

/**
 * The aggregated format kube-apiserver is certain to negotiate from this
 * Accept value (its goautoneg parse: ranges sorted by q, stably below 12;
 * media types and parameter names compared exactly), or -1 when in doubt.
 * Certain when the first range is exactly aggregated v2 JSON or protobuf
 * (parameters g, v and as, nothing else), no range may outrank it (no q
 * above 0.x), there are at most 11 ranges, and nothing is quoted or tabbed.
 */
export function revalidationFormat(p: usize, n: usize): i32 {
  let ranges = 1;
  for (let i: usize = 0; i < n; i++) {
    const c = load<u8>(p + i);
    if (c == 0x22 || c == 0x09) return -1;
    if (c == 0x2c) ranges++;
  }
  if (ranges > 11 || hasHighQuality(p, n)) return -1;
  return aggregatedFormat(p, nextSeparator(p, n, 0, 0x2c, 0x2c), true);
}

/**
 * The aggregated discovery format (v2) the media range [p, p + n) names, or
 * -1: JSON or protobuf with exactly g=apidiscovery.k8s.io, v=v2 and
 * as=APIGroupDiscoveryList, in any order. `exact`: compared as kube-apiserver
 * reads a client's Accept (type and parameter names case-sensitive, no empty
 * parameter); otherwise as a media type (a Content-Type the apiserver wrote).
 */
export function aggregatedFormat(p: usize, n: usize, exact: bool): i32 {
  let end = nextSeparator(p, n, 0, 0x3b, 0x3b);
  const typeLen = trim(p, end);
  const json = exact ? equals(trimAt, typeLen, MEDIA_JSON) : equalsNameCI(trimAt, typeLen, MEDIA_JSON);
  if (!json && !(exact ? equals(trimAt, typeLen, MEDIA_PROTOBUF) : equalsNameCI(trimAt, typeLen, MEDIA_PROTOBUF))) return -1;
  let seen = 0;
  while (end < n) {
    const start = end + 1;
    end = nextSeparator(p, n, start, 0x3b, 0x3b);
    const len = end - start;
    if (!exact && trim(p + start, len) == 0) continue;
    if (isParam(p + start, len, PARAM_G, APIDISCOVERY, exact) && (seen & 1) == 0) seen |= 1;
    else if (isParam(p + start, len, PARAM_V, V2, exact) && (seen & 2) == 0) seen |= 2;
    else if (isParam(p + start, len, PARAM_AS, LIST, exact) && (seen & 4) == 0) seen |= 4;
    else return -1;
  }
  if (seen != 7) return -1;
  return json ? <i32>FORMAT_AGGREGATED_JSON : <i32>FORMAT_AGGREGATED_PROTOBUF;
}

/**
 * The legacy discovery format (meta/v1) a Content-Type the apiserver wrote
 * names, or -1: JSON or protobuf (case-insensitive) with no g, v or as
 * parameter (those name another kind of document).
 */
export function legacyFormat(p: usize, n: usize): i32 {
  let end = nextSeparator(p, n, 0, 0x3b, 0x3b);
  const typeLen = trim(p, end);
  const json = equalsNameCI(trimAt, typeLen, MEDIA_JSON);
  if (!json && !equalsNameCI(trimAt, typeLen, MEDIA_PROTOBUF)) return -1;
  while (end < n) {
    const start = end + 1;
    end = nextSeparator(p, n, start, 0x3b, 0x3b);
    const len = end - start;
    if (readParam(p + start, len, PARAM_G) || readParam(p + start, len, PARAM_V) || readParam(p + start, len, PARAM_AS)) return -1;
  }
  return json ? <i32>FORMAT_LEGACY_JSON : <i32>FORMAT_LEGACY_PROTOBUF;
}

/** Whether the parameter at [p, p + n) is `name=value` (the value exact, the name exact or case-insensitive). */
function isParam(p: usize, n: usize, name: ArrayBuffer, value: ArrayBuffer, exact: bool): bool {
  return readParam(p, n, name) && equals(paramValueAt, paramValueLen, value) && (!exact || exactName(p, name));
}

/** Whether the parameter at p (leading spaces allowed) is named exactly `name` (readParam compares names case-insensitively; goautoneg does not). */
function exactName(p: usize, name: ArrayBuffer): bool {
  while (load<u8>(p) == 0x20) p++;
  return memory.compare(p, changetype<usize>(name), <usize>name.byteLength) == 0;
}

/** kube-apiserver's negotiateContentEncoding: some comma-separated token, trimmed, is exactly "gzip". */
export function takesGzip(p: usize, n: usize): bool {
  let i: usize = 0;
  while (i <= n) {
    let end = i;
    while (end < n && load<u8>(p + end) != 0x2c) end++;
    const len = trim(p + i, end - i);
    if (equals(trimAt, len, GZIP)) return true;
    i = end + 1;
  }
  return false;
}
