// A strict JSON scanner over bytes in linear memory, shared by the splicers
// (jsonSplice.ts aggregated discovery and the OpenAPI index, legacyJson.ts
// legacy discovery): a cursor, whether what it read was malformed, the last
// string's bytes, the walks over an object's members and an array's
// elements, the insertions a scan records and the copy that makes them.
// Single-threaded: one splice at a time.
import { N_SEEN, nodeAt } from "./documents";
import { childCount, children, markNamed } from "./nodes";
import { outByte, outBytes, outConst, outLen } from "./out";

export let pos: usize = 0;
export let end: usize = 0;
export let bad = false;
let depth = 0;

/** Starts scanning [p, p + n). */
export function scanStart(p: usize, n: usize): void {
  pos = p;
  end = p + n;
  bad = false;
  depth = 0;
}

/** Marks what was read malformed: the splice fails. */
export function fail(): void {
  bad = true;
}

export function ws(): void {
  while (pos < end) {
    const c = load<u8>(pos);
    if (c != 0x20 && c != 0x0a && c != 0x0d && c != 0x09) return;
    pos++;
  }
}

export function eat(c: u8): bool {
  ws();
  if (pos < end && load<u8>(pos) == c) {
    pos++;
    return true;
  }
  return false;
}

export function peek(): u8 {
  ws();
  return pos < end ? load<u8>(pos) : 0;
}

/** The last string's content (between the quotes, escapes as written). */
export let strAt: usize = 0;
export let strLen: usize = 0;

export function scanString(): void {
  ws();
  if (pos >= end || load<u8>(pos) != 0x22) {
    bad = true;
    return;
  }
  pos++;
  strAt = pos;
  while (pos < end) {
    const c = load<u8>(pos);
    if (c == 0x22) {
      strLen = pos - strAt;
      pos++;
      return;
    }
    if (c < 0x20) break;
    pos += c == 0x5c ? 2 : 1;
  }
  bad = true;
}

export function skipValue(): void {
  const c = peek();
  if (c == 0x22) {
    scanString();
  } else if (c == 0x7b || c == 0x5b) {
    if (++depth > 64) {
      bad = true;
      return;
    }
    const close: u8 = c == 0x7b ? 0x7d : 0x5d;
    pos++;
    if (!eat(close)) {
      while (!bad) {
        if (c == 0x7b) {
          scanString();
          if (!eat(0x3a)) bad = true;
        }
        if (bad) break;
        skipValue();
        if (eat(0x2c)) continue;
        if (!eat(close)) bad = true;
        break;
      }
    }
    depth--;
  } else {
    // A number, true, false, null: a run of their characters.
    const start = pos;
    while (pos < end) {
      const d = load<u8>(pos);
      if (!((d >= 0x30 && d <= 0x39) || (d >= 0x61 && d <= 0x7a) || d == 0x2d || d == 0x2b || d == 0x2e || d == 0x45)) break;
      pos++;
    }
    if (pos == start) bad = true;
  }
}

/** Whether the last string is `key` (bytes as written). */
export function strIs(key: ArrayBuffer): bool {
  return strLen == <usize>key.byteLength && memory.compare(strAt, changetype<usize>(key), strLen) == 0;
}

/** The node among `count` at `first` named by the last string, marked seen; 0 if none. */
export function findNamed(first: usize, count: u32): usize {
  return markNamed(first, count, strAt, strLen);
}

/**
 * Walks the members of the object at pos, calling `member(level, node)` for
 * each key (the key in strAt/strLen, pos at its value), which must consume
 * the value. AssemblyScript has no closures: the level says whose members.
 */
export function members(level: i32, node: usize, member: (level: i32, node: usize) => void): void {
  if (!eat(0x7b)) {
    bad = true;
    return;
  }
  if (++depth > 64) {
    bad = true;
    return;
  }
  if (!eat(0x7d)) {
    while (!bad) {
      scanString();
      if (bad || !eat(0x3a)) {
        bad = true;
        break;
      }
      member(level, node);
      if (eat(0x2c)) continue;
      if (!eat(0x7d)) bad = true;
      break;
    }
  }
  depth--;
}

/**
 * Walks the elements of the array at pos, calling `element(level, node)` at
 * each, which must consume it. Returns how many there were (bad set when
 * malformed).
 */
export function elements(level: i32, node: usize, element: (level: i32, node: usize) => void): i32 {
  if (!eat(0x5b)) {
    bad = true;
    return 0;
  }
  let n = 0;
  if (!eat(0x5d)) {
    while (!bad) {
      n++;
      element(level, node);
      if (eat(0x2c)) continue;
      if (!eat(0x5d)) bad = true;
      break;
    }
  }
  return n;
}

// ---------------------------------------------------------------------------
// Insertions, in document order: position, what (the splicer's code), a peer
// node, whether the list there had local entries, and a spare word.

let inserts: usize = 0;
let insertCap: usize = 0;
export let insertCount: usize = 0;
const RECORD: usize = 20;

export function insertsStart(): void {
  insertCount = 0;
}

export function record(at: usize, what: u32, node: usize, nonEmpty: bool): void {
  if (insertCount == insertCap) {
    insertCap = insertCap == 0 ? 64 : insertCap << 1;
    inserts = inserts == 0 ? heap.alloc(insertCap * RECORD) : heap.realloc(inserts, insertCap * RECORD);
  }
  const r = inserts + insertCount * RECORD;
  store<u32>(r, <u32>at);
  store<u32>(r, what, 4);
  store<u32>(r, <u32>node, 8);
  store<u32>(r, nonEmpty ? 1 : 0, 12);
  store<u32>(r, 0, 16);
  insertCount++;
}

/** The i-th insertion's record: I_AT, I_WHAT, I_NODE, I_NON_EMPTY, I_EXTRA (u32 each). */
export function insertAt(i: usize): usize {
  return inserts + i * RECORD;
}
export const I_AT: usize = 0;
export const I_WHAT: usize = 4;
export const I_NODE: usize = 8;
export const I_NON_EMPTY: usize = 12;
export const I_EXTRA: usize = 16;

/**
 * Writes the fragments (at node offset `fragment`, N_JSON or N_LEGACY_JSON)
 * of the unseen nodes among `count` at `first`, comma-separated, skipping
 * empty ones; `comma`: a comma before the first too. Returns whether it wrote
 * any.
 */
export function emitUnseen(first: usize, count: u32, comma: bool, fragment: usize): bool {
  let wrote = false;
  for (let i: u32 = 0; i < count; i++) {
    const n = nodeAt(first, i);
    const len = <usize>load<u32>(n + fragment + 4);
    if (load<u32>(n + N_SEEN) != 0 || len == 0) continue;
    if (comma) outByte(0x2c);
    comma = true;
    wrote = true;
    outBytes(<usize>load<u32>(n + fragment), len);
  }
  return wrote;
}

/** Whether some unseen node among `count` at `first` has a non-empty fragment at `fragment`. */
function hasUnseen(first: usize, count: u32, fragment: usize): bool {
  for (let i: u32 = 0; i < count; i++) {
    const n = nodeAt(first, i);
    if (load<u32>(n + N_SEEN) == 0 && load<u32>(n + fragment + 4) != 0) return true;
  }
  return false;
}

/** For an entry that lacks the field: `prefix` (`,"name":[`), the fragments of the node's unseen children, `]`; nothing when it has none. */
export function emitChildrenField(prefix: ArrayBuffer, node: usize, fragment: usize): void {
  if (!hasUnseen(children(node), childCount(node), fragment)) return;
  outConst(prefix);
  emitUnseen(children(node), childCount(node), false, fragment);
  outByte(0x5d);
}

/**
 * Copies the scanned body (from `body` to the scan's end) into out.ts, and at
 * each recorded insertion's position what `insert(what, node, nonEmpty,
 * record)` writes. Returns whether anything was written (false: out of memory).
 */
export function copyWithInserts(body: usize, insert: (what: u32, node: usize, nonEmpty: bool, record: usize) => void): bool {
  let copied = body;
  for (let i: usize = 0; i < insertCount; i++) {
    const r = insertAt(i);
    const at = <usize>load<u32>(r + I_AT);
    outBytes(copied, at - copied);
    copied = at;
    insert(load<u32>(r + I_WHAT), <usize>load<u32>(r + I_NODE), load<u32>(r + I_NON_EMPTY) != 0, r);
  }
  outBytes(copied, end - copied);
  return outLen > 0;
}
