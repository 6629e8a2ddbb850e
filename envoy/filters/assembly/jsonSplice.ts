// The merge rule on JSON bytes (src/discovery/peerPart.ts): the local
// apiserver's document as it is, plus, at each level, the peer part's entries
// it lacks by name, after the local entries of that level, in the peer part's
// order. Two passes over the local body: a strict scan that finds where each
// level's list ends (and marks the peer nodes the local document names), then
// the copy with the peer fragments inserted there (out.ts).
//
// Aggregated discovery (kube-apiserver's compact JSON, Go's field order):
//   {"kind":..,"items":[{"metadata":{"name":..},"versions":[{"version":..,
//   "resources":[{"resource":..},..],"freshness":..},..]},..]}
// A group without "versions" (or a version without "resources") gets the
// field after its "metadata" (its "version"). The OpenAPI v3 index:
//   {"paths":{"<key>":{..},..}}: a peer key the local lacks goes before the
// first local key above it (both sorted, as Go writes a map).
// Anything else (no "items" array, a group named after its versions, bad
// JSON, nesting over 64): the splice fails, the local body goes through.
import { N_CHILDREN, N_CHILD_COUNT, N_JSON, N_JSON_LEN, N_NAME, N_NAME_LEN, N_SEEN, compareBytes, nodeAt } from "./documents";
import { outByte, outBytes, outConst, outLen, outStart } from "./out";

let pos: usize = 0, end: usize = 0;
let bad = false;
let depth = 0;

// Insertions, in document order: position, what, the peer node, whether the list had local entries.
const INSERT_GROUPS: u32 = 0; // before the "]" of items: the unseen peer groups
const INSERT_CHILDREN: u32 = 1; // before the "]" of versions/resources: the node's unseen children
const INSERT_VERSIONS_FIELD: u32 = 2; // after a group's metadata: ,"versions":[..]
const INSERT_RESOURCES_FIELD: u32 = 3; // after a version's name: ,"resources":[..]
const INSERT_PATHS_END: u32 = 4; // before the "}" of paths: the unseen peer paths left
const INSERT_PATHS_BEFORE: u32 = 5; // before a local key (its length in the last word): the unseen peer paths below it
let inserts: usize = 0, insertCap: usize = 0, insertCount: usize = 0;
const RECORD: usize = 16;

function record(at: usize, what: u32, node: usize, nonEmpty: bool): void {
  if (insertCount == insertCap) {
    insertCap = insertCap == 0 ? 64 : insertCap << 1;
    inserts = inserts == 0 ? heap.alloc(insertCap * RECORD) : heap.realloc(inserts, insertCap * RECORD);
  }
  const r = inserts + insertCount * RECORD;
  store<u32>(r, <u32>at);
  store<u32>(r, what, 4);
  store<u32>(r, <u32>node, 8);
  store<u32>(r, nonEmpty ? 1 : 0, 12);
  insertCount++;
}

// ---------------------------------------------------------------------------
// The scanner

function ws(): void {
  while (pos < end) {
    const c = load<u8>(pos);
    if (c != 0x20 && c != 0x0a && c != 0x0d && c != 0x09) return;
    pos++;
  }
}

function eat(c: u8): bool {
  ws();
  if (pos < end && load<u8>(pos) == c) {
    pos++;
    return true;
  }
  return false;
}

function peek(): u8 {
  ws();
  return pos < end ? load<u8>(pos) : 0;
}

/** The last string's content (between the quotes, escapes as written). */
let strAt: usize = 0;
let strLen: usize = 0;

function scanString(): void {
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

function skipValue(): void {
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
function strIs(key: ArrayBuffer): bool {
  return strLen == <usize>key.byteLength && memory.compare(strAt, changetype<usize>(key), strLen) == 0;
}

/** The child of `parent` (or of the `count` nodes at `first`) named by the last string, marked seen; 0 if none. */
function findNamed(first: usize, count: u32): usize {
  for (let i: u32 = 0; i < count; i++) {
    const n = nodeAt(first, i);
    if (<usize>load<u32>(n + N_NAME_LEN) == strLen && memory.compare(<usize>load<u32>(n + N_NAME), strAt, strLen) == 0) {
      store<u32>(n + N_SEEN, 1);
      return n;
    }
  }
  return 0;
}

const ITEMS = String.UTF8.encode("items");
const METADATA = String.UTF8.encode("metadata");
const NAME = String.UTF8.encode("name");
const VERSIONS = String.UTF8.encode("versions");
const VERSION = String.UTF8.encode("version");
const RESOURCES = String.UTF8.encode("resources");
const RESOURCE = String.UTF8.encode("resource");
const PATHS = String.UTF8.encode("paths");

/**
 * Walks the members of the object at pos, calling `member(level, node)` for
 * each key (the key in strAt/strLen, pos at its value), which must consume
 * the value. AssemblyScript has no closures: the level says whose members.
 */
function members(level: i32, node: usize): void {
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

// Per level, what the member walk found (a stack would be needed for deeper nesting; three levels suffice).
let groupName = false;
let groupNode: usize = 0;
let groupMetaEnd: usize = 0;
let groupHasVersions = false;
let versionNode: usize = 0;
let versionNameEnd: usize = 0;
let versionNamed = false;
let versionHasResources = false;
let metaNamed = false;
let foundList = false;
let indexMode = false;

const LEVEL_LIST: i32 = 0;
const LEVEL_GROUP: i32 = 1;
const LEVEL_META: i32 = 2;
const LEVEL_VERSION: i32 = 3;
const LEVEL_RESOURCE: i32 = 4;
const LEVEL_INDEX: i32 = 5;

let peerGroups: usize = 0;
let peerGroupCount: u32 = 0;

function member(level: i32, node: usize): void {
  if (level == LEVEL_LIST && !indexMode && strIs(ITEMS)) {
    foundList = true;
    list(LEVEL_GROUP, 0);
  } else if (level == LEVEL_GROUP && strIs(METADATA)) {
    members(LEVEL_META, 0);
    groupMetaEnd = pos;
    groupName = true;
    // A group without a name (the core group's): named "".
    if (!metaNamed && !bad) {
      strLen = 0;
      groupNode = findNamed(peerGroups, peerGroupCount);
    }
  } else if (level == LEVEL_META && strIs(NAME)) {
    scanString();
    metaNamed = true;
    if (!bad) groupNode = findNamed(peerGroups, peerGroupCount);
  } else if (level == LEVEL_GROUP && strIs(VERSIONS)) {
    if (!groupName) bad = true; // versions before the name: the peer group is not known yet
    groupHasVersions = true;
    list(LEVEL_VERSION, groupNode);
  } else if (level == LEVEL_VERSION && strIs(VERSION)) {
    scanString();
    versionNameEnd = pos;
    versionNamed = true;
    if (!bad && node != 0) versionNode = findNamed(<usize>load<u32>(node + N_CHILDREN), load<u32>(node + N_CHILD_COUNT));
  } else if (level == LEVEL_VERSION && strIs(RESOURCES)) {
    if (!versionNamed) bad = true;
    versionHasResources = true;
    list(LEVEL_RESOURCE, versionNode);
  } else if (level == LEVEL_RESOURCE && strIs(RESOURCE)) {
    scanString();
    if (!bad && node != 0) findNamed(<usize>load<u32>(node + N_CHILDREN), load<u32>(node + N_CHILD_COUNT));
  } else if (level == LEVEL_INDEX) {
    pathKey();
  } else if (level == LEVEL_LIST && indexMode && strIs(PATHS)) {
    foundList = true;
    members(LEVEL_INDEX, 0);
    if (!bad) record(pos - 1, INSERT_PATHS_END, 0, pathCount > 0);
  } else {
    skipValue();
  }
}

/** An array of `level` objects at pos, children of peer `node`; records the insertion before its "]". */
function list(level: i32, node: usize): void {
  if (!eat(0x5b)) {
    bad = true;
    return;
  }
  let n = 0;
  if (!eat(0x5d)) {
    while (!bad) {
      n++;
      if (level == LEVEL_GROUP) {
        groupNode = 0;
        groupName = false;
        groupHasVersions = false;
        metaNamed = false;
        members(LEVEL_GROUP, 0);
        if (!bad && !groupHasVersions && groupNode != 0) record(groupMetaEnd, INSERT_VERSIONS_FIELD, groupNode, false);
      } else if (level == LEVEL_VERSION) {
        versionNode = 0;
        versionNamed = false;
        versionHasResources = false;
        members(LEVEL_VERSION, node);
        if (!bad && !versionHasResources && versionNode != 0) record(versionNameEnd, INSERT_RESOURCES_FIELD, versionNode, false);
      } else {
        members(LEVEL_RESOURCE, node);
      }
      if (eat(0x2c)) continue;
      if (!eat(0x5d)) bad = true;
      break;
    }
  }
  if (bad) return;
  if (level == LEVEL_GROUP) record(pos - 1, INSERT_GROUPS, 0, n > 0);
  else if (node != 0) record(pos - 1, INSERT_CHILDREN, node, n > 0);
}

// The OpenAPI index: local keys in order; each records where to insert the peer keys below it.
let pathCount: i32 = 0;

function pathKey(): void {
  pathCount++;
  findNamed(peerGroups, peerGroupCount);
  // Before the key's opening quote; the key is read again at emission, so its length is kept.
  record(strAt - 1, INSERT_PATHS_BEFORE, 0, false);
  store<u32>(inserts + (insertCount - 1) * RECORD + 12, <u32>strLen);
  skipValue();
}

// ---------------------------------------------------------------------------
// The copy

const COMMA_VERSIONS = String.UTF8.encode(',"versions":[');
const COMMA_RESOURCES = String.UTF8.encode(',"resources":[');

/** Writes the unseen nodes among `count` at `first`, comma-separated; `comma`: a comma before the first too. */
function unseen(first: usize, count: u32, comma: bool): void {
  for (let i: u32 = 0; i < count; i++) {
    const n = nodeAt(first, i);
    if (load<u32>(n + N_SEEN) != 0) continue;
    if (comma) outByte(0x2c);
    comma = true;
    outBytes(<usize>load<u32>(n + N_JSON), <usize>load<u32>(n + N_JSON_LEN));
  }
}

function hasUnseen(first: usize, count: u32): bool {
  for (let i: u32 = 0; i < count; i++) if (load<u32>(nodeAt(first, i) + N_SEEN) == 0) return true;
  return false;
}

/** Peer paths below the key [key, key + keyLen) (all remaining when keyLen is ~0), from `next`; returns the next index. */
function pathsBefore(next: u32, key: usize, keyLen: usize, atEnd: bool, hadLocal: bool): u32 {
  let comma = hadLocal;
  for (; next < peerGroupCount; next++) {
    const n = nodeAt(peerGroups, next);
    const name = <usize>load<u32>(n + N_NAME);
    const nameLen = <usize>load<u32>(n + N_NAME_LEN);
    if (!atEnd && compareBytes(name, nameLen, key, keyLen) >= 0) break;
    if (load<u32>(n + N_SEEN) != 0) continue;
    if (atEnd && comma) outByte(0x2c);
    outByte(0x22);
    outBytes(name, nameLen);
    outByte(0x22);
    outByte(0x3a);
    outBytes(<usize>load<u32>(n + N_JSON), <usize>load<u32>(n + N_JSON_LEN));
    if (!atEnd) outByte(0x2c);
    comma = true;
  }
  return next;
}

/**
 * Splices the peer nodes (`count` at `first`: groups, or OpenAPI paths when
 * `index`) into the local JSON body [body, body + len); the result is in
 * out.ts (outLen bytes). Returns false when the local body is not one to
 * splice. Every node's SEEN mark must be clear.
 */
export function spliceJson(body: usize, len: usize, first: usize, count: u32, index: bool): bool {
  pos = body;
  end = body + len;
  bad = false;
  depth = 0;
  insertCount = 0;
  foundList = false;
  pathCount = 0;
  indexMode = index;
  peerGroups = first;
  peerGroupCount = count;
  members(LEVEL_LIST, 0);
  ws();
  if (bad || !foundList || pos != end) return false;
  outStart(len + len / 8 + 1024);
  let copied = body;
  let nextPath: u32 = 0;
  for (let i: usize = 0; i < insertCount; i++) {
    const r = inserts + i * RECORD;
    const at = <usize>load<u32>(r);
    const what = load<u32>(r, 4);
    const node = <usize>load<u32>(r, 8);
    const nonEmpty = load<u32>(r, 12) != 0;
    outBytes(copied, at - copied);
    copied = at;
    if (what == INSERT_GROUPS) {
      unseen(first, count, nonEmpty);
    } else if (what == INSERT_CHILDREN) {
      unseen(<usize>load<u32>(node + N_CHILDREN), load<u32>(node + N_CHILD_COUNT), nonEmpty);
    } else if (what == INSERT_VERSIONS_FIELD || what == INSERT_RESOURCES_FIELD) {
      const children = <usize>load<u32>(node + N_CHILDREN);
      const n = load<u32>(node + N_CHILD_COUNT);
      if (!hasUnseen(children, n)) continue;
      outConst(what == INSERT_VERSIONS_FIELD ? COMMA_VERSIONS : COMMA_RESOURCES);
      unseen(children, n, false);
      outByte(0x5d);
    } else if (what == INSERT_PATHS_BEFORE) {
      // The key starts after its quote; its length is the record's last word.
      nextPath = pathsBefore(nextPath, at + 1, <usize>load<u32>(r, 12), false, true);
    } else {
      nextPath = pathsBefore(nextPath, 0, 0, true, nonEmpty);
    }
  }
  outBytes(copied, end - copied);
  return outLen > 0;
}
