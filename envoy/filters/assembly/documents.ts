// The peer part one document plugin holds (the set), read from the plugin
// configuration (layout version 4, specified in the header of
// src/xds/documentSet.ts, its encoder), and the plugin's cache of merged
// answers, one per aggregated format, keyed by the local apiserver's ETag.
// Everything lives in unmanaged memory: the host's configuration buffer itself
// (fragments are spliced from it, never copied) and a small index of nodes.
// Reference counted: the plugin context holds one reference and every stream
// that merges with the set one more, so a reconfigure never frees a part a
// stream in flight still splices.
//
// In short (little-endian, every length a u32 byte count):
//   "MVPD"  u8 version (4)  u8 kind (0 core /api, 1 groups /apis, 2 OpenAPI v3 index)
//   64 bytes: the peer digest, lowercase hex SHA-256 of everything after it
//   kinds 0 and 1: u32 group count, then per group a node:
//     name, aggregated JSON fragment, aggregated protobuf fragment,
//     legacy JSON fragment, legacy protobuf fragment (each u32 len + bytes),
//     then (groups, versions, resources) u32 child count and the children:
//     a group's versions, a version's resources, a resource's subresources
//   kind 2: u32 path count, then per path: u32 len + key (as JSON writes it,
//     without quotes), u32 len + JSON value; keys strictly ascending
// Nothing may follow. A set with no groups (or no paths) is still a set: the
// filter then answers the local document with the merged ETag. Version 3 (no
// legacy fragments, no subresources) is refused: the control plane and this
// module ship together.
import { gzip, gzipLen } from "./deflate";
import { addDebt } from "./gc";
import { sha256 } from "./sha256";

export const KIND_CORE: u32 = 0;
export const KIND_GROUPS: u32 = 1;
export const KIND_OPENAPI: u32 = 2;

export const FORMAT_AGGREGATED_JSON: u32 = 0;
export const FORMAT_AGGREGATED_PROTOBUF: u32 = 1;
export const FORMAT_JSON: u32 = 2;
/** Legacy discovery (meta/v1), never cached: not a cache entry's index. */
export const FORMAT_LEGACY_JSON: u32 = 3;
export const FORMAT_LEGACY_PROTOBUF: u32 = 4;

/** The set layout this module reads. */
export const SET_VERSION: u8 = 4;

// Node depths: the aggregated levels, then an OpenAPI path.
const DEPTH_GROUP: i32 = 0;
const DEPTH_SUBRESOURCE: i32 = 3;
const DEPTH_PATH: i32 = 4;

const HEADER: usize = 70; // magic, version, kind, digest
export const DIGEST_HEX: usize = 64;

// The set (one unmanaged block).
const SET_REFS: usize = 0;
const SET_KIND: usize = 4;
const SET_DATA: usize = 8;
const SET_GROUPS: usize = 12;
const SET_GROUP_COUNT: usize = 16;
const SET_NODES: usize = 20; // every node, one array
const SET_CACHE: usize = 24; // three cache entries, one per format
export const CACHE_SIZE: usize = 40;
const SET_SIZE: usize = SET_CACHE + 3 * CACHE_SIZE;

// A node: a group, a version, a resource, a subresource, or an OpenAPI path.
export const N_NAME: usize = 0;
export const N_NAME_LEN: usize = 4;
export const N_JSON: usize = 8;
export const N_JSON_LEN: usize = 12;
export const N_PROTO: usize = 16;
export const N_PROTO_LEN: usize = 20;
export const N_CHILDREN: usize = 24;
export const N_CHILD_COUNT: usize = 28;
/** Set while splicing when the local document lists the node's name. */
export const N_SEEN: usize = 32;
/** The legacy (meta/v1) fragments; zero length: nothing to add for this node. */
export const N_LEGACY_JSON: usize = 36;
export const N_LEGACY_JSON_LEN: usize = 40;
export const N_LEGACY_PROTO: usize = 44;
export const N_LEGACY_PROTO_LEN: usize = 48;
export const NODE_SIZE: usize = 52;

// A cache entry: the merged answer for one format.
export const C_LOCAL_ETAG: usize = 0; // unmanaged copy, 0: empty entry
export const C_LOCAL_ETAG_LEN: usize = 4;
export const C_REVALIDATE: usize = 8; // 1 when the local ETag is the apiserver's (not a digest of its body)
export const C_BODY: usize = 12;
export const C_BODY_LEN: usize = 16;
export const C_TYPE: usize = 20;
export const C_TYPE_LEN: usize = 24;
export const C_MERGED_ETAG: usize = 28; // MERGED_ETAG_LEN bytes, quoted
export const MERGED_ETAG_LEN: usize = 66;
export const C_GZIP: usize = 32; // the body gzipped, made when first asked for (0: not yet)
export const C_GZIP_LEN: usize = 36;

/** Why the last parseDocumentSet failed. */
export let documentsError = "";

export function setKind(set: usize): u32 {
  return load<u32>(set + SET_KIND);
}

/** The peer digest (64 hex bytes in the configuration buffer). */
export function setDigest(set: usize): usize {
  return <usize>load<u32>(set + SET_DATA) + 6;
}

export function setGroups(set: usize): usize {
  return <usize>load<u32>(set + SET_GROUPS);
}

export function setGroupCount(set: usize): u32 {
  return load<u32>(set + SET_GROUP_COUNT);
}

/** The cache entry of `format`. */
export function cacheEntry(set: usize, format: u32): usize {
  return set + SET_CACHE + <usize>format * CACHE_SIZE;
}

export function nodeAt(first: usize, i: u32): usize {
  return first + <usize>i * NODE_SIZE;
}

/** Forgets every node's SEEN mark (before a splice). */
export function clearSeen(set: usize): void {
  const first = <usize>load<u32>(set + SET_NODES);
  const count = load<u32>(first - 4);
  for (let i: u32 = 0; i < count; i++) store<u32>(nodeAt(first, i) + N_SEEN, 0);
}

export function acquire(set: usize): void {
  store<u32>(set + SET_REFS, load<u32>(set + SET_REFS) + 1);
}

/** Frees a cache entry's buffers and empties it; its merged ETag buffer (allocated with the set) stays. */
export function clearCacheEntry(entry: usize): void {
  for (let off: usize = 0; off <= C_TYPE; off += 4) {
    if (off == C_LOCAL_ETAG || off == C_BODY || off == C_TYPE) {
      const p = <usize>load<u32>(entry + off);
      if (p != 0) heap.free(p);
    }
  }
  memory.fill(entry, 0, C_MERGED_ETAG);
  const gzipped = <usize>load<u32>(entry + C_GZIP);
  if (gzipped != 0) heap.free(gzipped);
  memory.fill(entry + C_GZIP, 0, 8);
}

/** The entry's merged body gzipped (C_GZIP_LEN bytes): made at the first call, kept with the entry. */
export function entryGzip(entry: usize): usize {
  let gzipped = <usize>load<u32>(entry + C_GZIP);
  if (gzipped == 0) {
    gzipped = gzip(<usize>load<u32>(entry + C_BODY), <usize>load<u32>(entry + C_BODY_LEN));
    store<u32>(entry + C_GZIP, <u32>gzipped);
    store<u32>(entry + C_GZIP_LEN, <u32>gzipLen);
  }
  return gzipped;
}

export function release(set: usize): void {
  const refs = load<u32>(set + SET_REFS) - 1;
  store<u32>(set + SET_REFS, refs);
  if (refs != 0) return;
  for (let f: u32 = 0; f < 3; f++) {
    const entry = cacheEntry(set, f);
    const merged = <usize>load<u32>(entry + C_MERGED_ETAG);
    clearCacheEntry(entry);
    if (merged != 0) heap.free(merged);
  }
  heap.free(<usize>load<u32>(set + SET_NODES) - 4);
  heap.free(<usize>load<u32>(set + SET_DATA));
  heap.free(set);
}

function fail(message: string, offset: usize): usize {
  documentsError = message + " (at byte offset " + offset.toString() + ")";
  addDebt(64);
  return 0;
}

// The walk over the configuration: a cursor, and the number of nodes seen.
let data: usize = 0;
let size: usize = 0;
let at: usize = 0;
let nodes: u32 = 0;
let failed = false;

/** Reads a u32 length and skips that many bytes; returns the length's offset, or fails. */
function span(what: string): usize {
  if (failed) return 0;
  if (size - at < 4) {
    failed = true;
    fail(what + " length truncated", at);
    return 0;
  }
  const len = <usize>load<u32>(data + at);
  if (<u64>len > <u64>(size - at - 4)) {
    failed = true;
    fail(what + " length " + len.toString() + " runs past the end", at);
    return 0;
  }
  const where = at;
  at += 4 + len;
  return where;
}

function count(what: string): u32 {
  if (failed) return 0;
  if (size - at < 4) {
    failed = true;
    fail(what + " count truncated", at);
    return 0;
  }
  const n = load<u32>(data + at);
  at += 4;
  // Every node takes at least 12 bytes: a count past that is malformed.
  if (<u64>n * 8 > <u64>(size - at)) {
    failed = true;
    fail(what + " count " + n.toString() + " runs past the end", at - 4);
    return 0;
  }
  return n;
}

/** Validates a node and its children (DEPTH_GROUP to DEPTH_SUBRESOURCE, or DEPTH_PATH); counts them. */
function walkNode(depth: i32): void {
  nodes++;
  span("name");
  span(depth == DEPTH_PATH ? "value" : "JSON fragment");
  if (depth == DEPTH_PATH) return;
  span("protobuf fragment");
  span("legacy JSON fragment");
  span("legacy protobuf fragment");
  if (depth == DEPTH_SUBRESOURCE) return;
  const n = count(depth == DEPTH_GROUP ? "version" : depth == 1 ? "resource" : "subresource");
  for (let i: u32 = 0; i < n && !failed; i++) walkNode(depth + 1);
}

/** Fills node records from the configuration, children contiguous per parent (one array per level, laid out one after the other). */
let levelNext = new StaticArray<usize>(5);

/** Stores the span at the cursor (a u32 length, then the bytes) in the node's fields at `off` and `off + 4`, and moves past it. */
function fillSpan(node: usize, off: usize): void {
  const where = span("");
  store<u32>(node + off, <u32>(data + where + 4));
  store<u32>(node + off + 4, load<u32>(data + where));
}

function fillNode(node: usize, depth: i32): void {
  fillSpan(node, N_NAME);
  fillSpan(node, N_JSON);
  if (depth == DEPTH_PATH) return;
  fillSpan(node, N_PROTO);
  fillSpan(node, N_LEGACY_JSON);
  fillSpan(node, N_LEGACY_PROTO);
  if (depth == DEPTH_SUBRESOURCE) return;
  const n = load<u32>(data + at);
  at += 4;
  const first = unchecked(levelNext[depth + 1]);
  unchecked((levelNext[depth + 1] = first + <usize>n * NODE_SIZE));
  store<u32>(node + N_CHILDREN, <u32>first);
  store<u32>(node + N_CHILD_COUNT, n);
  for (let i: u32 = 0; i < n; i++) fillNode(first + <usize>i * NODE_SIZE, depth + 1);
}

function isLowerHex(p: usize, n: usize): bool {
  for (let i: usize = 0; i < n; i++) {
    const c = load<u8>(p + i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

const DIGEST: usize = memory.data(32, 8);
const HEX = "0123456789abcdef";

/** Whether the 64 hex digits at `hex` are the SHA-256 of [p, p + n). */
function digestMatches(hex: usize, p: usize, n: usize): bool {
  sha256(p, n, DIGEST);
  for (let i: usize = 0; i < 32; i++) {
    const b = load<u8>(DIGEST + i);
    if (load<u8>(hex + 2 * i) != <u8>HEX.charCodeAt(b >> 4) || load<u8>(hex + 2 * i + 1) != <u8>HEX.charCodeAt(b & 15)) return false;
  }
  return true;
}

/** Whether the OpenAPI keys strictly ascend (bytewise), as the filter's sorted insertion needs. */
function keysAscend(first: usize, n: u32): bool {
  for (let i: u32 = 1; i < n; i++) {
    const a = nodeAt(first, i - 1);
    const b = nodeAt(first, i);
    if (compareBytes(<usize>load<u32>(a + N_NAME), <usize>load<u32>(a + N_NAME_LEN), <usize>load<u32>(b + N_NAME), <usize>load<u32>(b + N_NAME_LEN)) >= 0) return false;
  }
  return true;
}

/** Bytewise comparison of two spans: negative, zero or positive. */
export function compareBytes(a: usize, an: usize, b: usize, bn: usize): i32 {
  const n = an < bn ? an : bn;
  const c = memory.compare(a, b, n);
  if (c != 0) return c;
  return an < bn ? -1 : an > bn ? 1 : 0;
}

/**
 * Reads the set in the configuration bytes [config, config + configSize) (a
 * buffer from heap.alloc). On success returns the set (one reference, the
 * caller's), which now owns the buffer; on failure returns 0, sets
 * documentsError, and the buffer stays the caller's.
 */
export function parseDocumentSet(config: usize, configSize: usize): usize {
  if (configSize < HEADER + 4) return fail("truncated header: " + configSize.toString() + " bytes, " + (HEADER + 4).toString() + " needed", 0);
  if (load<u32>(config) != 0x4450564d) return fail('bad magic: not "MVPD"', 0);
  const version = load<u8>(config + 4);
  if (version != SET_VERSION) {
    return fail("unsupported version " + version.toString() + " (this module reads version " + SET_VERSION.toString() + ": the control plane and the module ship together)", 4);
  }
  const kind = <u32>load<u8>(config + 5);
  if (kind > KIND_OPENAPI) return fail("unknown document kind " + kind.toString(), 5);
  if (!isLowerHex(config + 6, DIGEST_HEX)) return fail("the peer digest is not 64 lowercase hex digits", 6);
  if (!digestMatches(config + 6, config + HEADER, configSize - HEADER)) return fail("the peer digest is not the SHA-256 of the peer part", 6);
  data = config;
  size = configSize;
  at = HEADER;
  nodes = 0;
  failed = false;
  const top = count(kind == KIND_OPENAPI ? "path" : "group");
  const topDepth = kind == KIND_OPENAPI ? DEPTH_PATH : DEPTH_GROUP;
  for (let i: u32 = 0; i < top && !failed; i++) walkNode(topDepth);
  if (failed) return 0;
  if (at != size) return fail((size - at).toString() + " bytes after the peer part", at);

  // The node array, preceded by its count (clearSeen reads it).
  const block = heap.alloc(4 + <usize>nodes * NODE_SIZE);
  store<u32>(block, nodes);
  const first = block + 4;
  memory.fill(first, 0, <usize>nodes * NODE_SIZE);
  // Levels one after the other: groups, versions, resources, subresources (sizes from a count pass).
  const perLevel = new StaticArray<u32>(5);
  at = HEADER + 4;
  countLevels(topDepth, top, perLevel);
  unchecked((levelNext[1] = first + <usize>top * NODE_SIZE));
  unchecked((levelNext[2] = unchecked(levelNext[1]) + <usize>unchecked(perLevel[1]) * NODE_SIZE));
  unchecked((levelNext[3] = unchecked(levelNext[2]) + <usize>unchecked(perLevel[2]) * NODE_SIZE));
  at = HEADER + 4;
  for (let i: u32 = 0; i < top; i++) fillNode(nodeAt(first, i), topDepth);
  if (kind == KIND_OPENAPI && !keysAscend(first, top)) {
    heap.free(block);
    return fail("the paths are not in strictly ascending order", HEADER);
  }

  const set = heap.alloc(SET_SIZE);
  memory.fill(set, 0, SET_SIZE);
  store<u32>(set + SET_REFS, 1);
  store<u32>(set + SET_KIND, kind);
  store<u32>(set + SET_DATA, <u32>config);
  store<u32>(set + SET_GROUPS, <u32>first);
  store<u32>(set + SET_GROUP_COUNT, top);
  store<u32>(set + SET_NODES, <u32>first);
  for (let f: u32 = 0; f < 3; f++) store<u32>(cacheEntry(set, f) + C_MERGED_ETAG, <u32>heap.alloc(MERGED_ETAG_LEN));
  return set;
}

/** Counts the nodes per level (validated already) from `at`. */
function countLevels(topDepth: i32, top: u32, perLevel: StaticArray<u32>): void {
  unchecked((perLevel[0] = top));
  for (let i: u32 = 0; i < top; i++) countNode(topDepth, perLevel);
}

function skipSpan(): void {
  at += 4 + <usize>load<u32>(data + at);
}

function countNode(depth: i32, perLevel: StaticArray<u32>): void {
  skipSpan(); // name
  skipSpan(); // JSON
  if (depth == DEPTH_PATH) return;
  skipSpan(); // protobuf
  skipSpan(); // legacy JSON
  skipSpan(); // legacy protobuf
  if (depth == DEPTH_SUBRESOURCE) return;
  const n = load<u32>(data + at);
  at += 4;
  unchecked((perLevel[depth + 1] += n));
  for (let i: u32 = 0; i < n; i++) countNode(depth + 1, perLevel);
}
