// The merge rule on JSON bytes (src/discovery/peerPart.ts): the local
// apiserver's document as it is, plus, at each level, the peer part's entries
// it lacks by name, after the local entries of that level, in the peer part's
// order. Two passes over the local body: a strict scan (jsonScan.ts) that
// finds where each level's list ends (and marks the peer nodes the local
// document names), then the copy with the peer fragments inserted there
// (out.ts).
//
// Aggregated discovery (kube-apiserver's compact JSON, Go's field order):
//   {"kind":..,"items":[{"metadata":{"name":..},"versions":[{"version":..,
//   "resources":[{"resource":..,"subresources":[{"subresource":..},..]},..],
//   "freshness":..},..]},..]}
// A group without "versions" (or a version without "resources") gets the
// field after its "metadata" (its "version"); a local resource the part
// names without "subresources" gets the field before its closing brace. The
// OpenAPI v3 index: {"paths":{"<key>":{..},..}}: a peer key the local lacks
// goes before the first local key above it (both sorted, as Go writes a map).
// Anything else (no "items" array, a group named after its versions, bad
// JSON, nesting over 64): the splice fails, the local body goes through.
import { N_JSON, N_JSON_LEN, N_NAME, N_NAME_LEN, N_SEEN, compareBytes, nodeAt } from "./documents";
import {
  I_AT,
  I_EXTRA,
  bad,
  copyWithInserts,
  elements,
  emitChildrenField,
  emitUnseen,
  end,
  fail,
  findNamed,
  insertAt,
  insertCount,
  insertsStart,
  members,
  pos,
  record,
  scanStart,
  scanString,
  skipValue,
  strAt,
  strIs,
  strLen,
  ws,
} from "./jsonScan";
import { childCount, children, markNamed } from "./nodes";
import { outByte, outBytes, outStart } from "./out";

// What an insertion adds.
const INSERT_GROUPS: u32 = 0; // before the "]" of items: the unseen peer groups
const INSERT_CHILDREN: u32 = 1; // before the "]" of versions/resources/subresources: the node's unseen children
const INSERT_VERSIONS_FIELD: u32 = 2; // after a group's metadata: ,"versions":[..]
const INSERT_RESOURCES_FIELD: u32 = 3; // after a version's name: ,"resources":[..]
const INSERT_SUBRESOURCES_FIELD: u32 = 4; // before a resource's "}": ,"subresources":[..]
const INSERT_PATHS_END: u32 = 5; // before the "}" of paths: the unseen peer paths left
const INSERT_PATHS_BEFORE: u32 = 6; // before a local key (its length in the extra word): the unseen peer paths below it

const ITEMS = String.UTF8.encode("items");
const METADATA = String.UTF8.encode("metadata");
const NAME = String.UTF8.encode("name");
const VERSIONS = String.UTF8.encode("versions");
const VERSION = String.UTF8.encode("version");
const RESOURCES = String.UTF8.encode("resources");
const RESOURCE = String.UTF8.encode("resource");
const SUBRESOURCES = String.UTF8.encode("subresources");
const SUBRESOURCE = String.UTF8.encode("subresource");
const PATHS = String.UTF8.encode("paths");

// Per level, what the member walk found (a stack would be needed for deeper nesting; one entry per level suffices).
let groupName = false;
let groupNode: usize = 0;
let groupMetaEnd: usize = 0;
let groupHasVersions = false;
let versionNode: usize = 0;
let versionNameEnd: usize = 0;
let versionNamed = false;
let versionHasResources = false;
let resourceNode: usize = 0;
let resourceNamed = false;
let resourceHasSubresources = false;
let metaNamed = false;
let foundList = false;
let indexMode = false;

const LEVEL_LIST: i32 = 0;
const LEVEL_GROUP: i32 = 1;
const LEVEL_META: i32 = 2;
const LEVEL_VERSION: i32 = 3;
const LEVEL_RESOURCE: i32 = 4;
const LEVEL_SUBRESOURCE: i32 = 5;
const LEVEL_INDEX: i32 = 6;

let peerGroups: usize = 0;
let peerGroupCount: u32 = 0;

function childNamed(node: usize): usize {
  return node == 0 ? 0 : findNamed(children(node), childCount(node));
}

function member(level: i32, node: usize): void {
  if (level == LEVEL_LIST && !indexMode && strIs(ITEMS)) {
    foundList = true;
    list(LEVEL_GROUP, 0);
  } else if (level == LEVEL_GROUP && strIs(METADATA)) {
    members(LEVEL_META, 0, member);
    groupMetaEnd = pos;
    groupName = true;
    // A group without a name (the core group's): named "".
    if (!metaNamed && !bad) groupNode = markNamed(peerGroups, peerGroupCount, 0, 0);
  } else if (level == LEVEL_META && strIs(NAME)) {
    scanString();
    metaNamed = true;
    if (!bad) groupNode = findNamed(peerGroups, peerGroupCount);
  } else if (level == LEVEL_GROUP && strIs(VERSIONS)) {
    if (!groupName) fail(); // versions before the name: the peer group is not known yet
    groupHasVersions = true;
    list(LEVEL_VERSION, groupNode);
  } else if (level == LEVEL_VERSION && strIs(VERSION)) {
    scanString();
    versionNameEnd = pos;
    versionNamed = true;
    if (!bad) versionNode = childNamed(node);
  } else if (level == LEVEL_VERSION && strIs(RESOURCES)) {
    if (!versionNamed) fail();
    versionHasResources = true;
    list(LEVEL_RESOURCE, versionNode);
  } else if (level == LEVEL_RESOURCE && strIs(RESOURCE)) {
    scanString();
    resourceNamed = true;
    if (!bad) resourceNode = childNamed(node);
  } else if (level == LEVEL_RESOURCE && strIs(SUBRESOURCES)) {
    if (!resourceNamed) fail(); // subresources before the name: the peer resource is not known yet
    resourceHasSubresources = true;
    list(LEVEL_SUBRESOURCE, resourceNode);
  } else if (level == LEVEL_SUBRESOURCE && strIs(SUBRESOURCE)) {
    scanString();
    if (!bad) childNamed(node);
  } else if (level == LEVEL_INDEX) {
    pathKey();
  } else if (level == LEVEL_LIST && indexMode && strIs(PATHS)) {
    foundList = true;
    members(LEVEL_INDEX, 0, member);
    if (!bad) record(pos - 1, INSERT_PATHS_END, 0, pathCount > 0);
  } else {
    skipValue();
  }
}

/** An array of `level` objects at pos, children of peer `node`; records the insertion before its "]". */
function list(level: i32, node: usize): void {
  const n = elements(level, node, entry);
  if (bad) return;
  if (level == LEVEL_GROUP) record(pos - 1, INSERT_GROUPS, 0, n > 0);
  else if (node != 0) record(pos - 1, INSERT_CHILDREN, node, n > 0);
}

/** One object of a `level` list; records where a group's, version's or resource's missing field goes. */
function entry(level: i32, node: usize): void {
  if (level == LEVEL_GROUP) {
    groupNode = 0;
    groupName = false;
    groupHasVersions = false;
    metaNamed = false;
    members(LEVEL_GROUP, 0, member);
    if (!bad && !groupHasVersions && groupNode != 0) record(groupMetaEnd, INSERT_VERSIONS_FIELD, groupNode, false);
  } else if (level == LEVEL_VERSION) {
    versionNode = 0;
    versionNamed = false;
    versionHasResources = false;
    members(LEVEL_VERSION, node, member);
    if (!bad && !versionHasResources && versionNode != 0) record(versionNameEnd, INSERT_RESOURCES_FIELD, versionNode, false);
  } else if (level == LEVEL_RESOURCE) {
    resourceNode = 0;
    resourceNamed = false;
    resourceHasSubresources = false;
    members(LEVEL_RESOURCE, node, member);
    if (!bad && !resourceHasSubresources && resourceNode != 0) record(pos - 1, INSERT_SUBRESOURCES_FIELD, resourceNode, false);
  } else {
    members(level, node, member);
  }
}

// The OpenAPI index: local keys in order; each records where to insert the peer keys below it.
let pathCount: i32 = 0;

function pathKey(): void {
  pathCount++;
  findNamed(peerGroups, peerGroupCount);
  // Before the key's opening quote; the key is read again at emission, so its length is kept.
  record(strAt - 1, INSERT_PATHS_BEFORE, 0, false);
  store<u32>(insertAt(insertCount - 1) + I_EXTRA, <u32>strLen);
  skipValue();
}

// ---------------------------------------------------------------------------
// The copy

const COMMA_VERSIONS = String.UTF8.encode(',"versions":[');
const COMMA_RESOURCES = String.UTF8.encode(',"resources":[');
const COMMA_SUBRESOURCES = String.UTF8.encode(',"subresources":[');

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
  scanStart(body, len);
  insertsStart();
  foundList = false;
  pathCount = 0;
  indexMode = index;
  peerGroups = first;
  peerGroupCount = count;
  members(LEVEL_LIST, 0, member);
  ws();
  if (bad || !foundList || pos != end) return false;
  outStart(len + len / 8 + 1024);
  nextPath = 0;
  return copyWithInserts(body, insert);
}

let nextPath: u32 = 0;

function insert(what: u32, node: usize, nonEmpty: bool, r: usize): void {
  if (what == INSERT_GROUPS) {
    emitUnseen(peerGroups, peerGroupCount, nonEmpty, N_JSON);
  } else if (what == INSERT_CHILDREN) {
    emitUnseen(children(node), childCount(node), nonEmpty, N_JSON);
  } else if (what == INSERT_VERSIONS_FIELD) {
    emitChildrenField(COMMA_VERSIONS, node, N_JSON);
  } else if (what == INSERT_RESOURCES_FIELD) {
    emitChildrenField(COMMA_RESOURCES, node, N_JSON);
  } else if (what == INSERT_SUBRESOURCES_FIELD) {
    emitChildrenField(COMMA_SUBRESOURCES, node, N_JSON);
  } else if (what == INSERT_PATHS_BEFORE) {
    // The key starts after its quote; its length is the extra word.
    nextPath = pathsBefore(nextPath, <usize>load<u32>(r + I_AT) + 1, <usize>load<u32>(r + I_EXTRA), false, true);
  } else {
    nextPath = pathsBefore(nextPath, 0, 0, true, nonEmpty);
  }
}
