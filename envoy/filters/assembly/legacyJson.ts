// The merge rule on legacy discovery (meta/v1) in JSON: the local document
// as it is, then at each level what the peer part adds that the local lacks
// by name, from the nodes' legacy JSON fragments (empty ones add nothing):
//   APIVersions {"versions":["v1",..],..}: the core group's unseen versions;
//   APIGroupList {"groups":[{"name":..,"versions":[{"groupVersion":..,
//     "version":..},..],"preferredVersion":..},..]}: each local group its
//     node's unseen versions, then the unseen groups (APIGroup fragments);
//   APIGroup: one such group object, its unseen versions;
//   APIResourceList {"groupVersion":..,"resources":[{"name":..},..]}: the
//     version node's resources and subresources ("resource/subresource")
//     the local list lacks, each resource then its subresources.
// The preferred version stays the local one. Anything else (the list field
// absent, a group named after its versions, bad JSON): the splice fails,
// the local body goes through.
import { N_LEGACY_JSON, N_LEGACY_JSON_LEN, N_SEEN, nodeAt } from "./documents";
import {
  bad,
  copyWithInserts,
  elements,
  emitChildrenField,
  emitUnseen,
  end,
  fail,
  findNamed,
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
import { childCount, children, markLegacyName } from "./nodes";
import { outByte, outBytes, outStart } from "./out";

/** What the document is. */
export const LEGACY_VERSIONS: u32 = 0;
export const LEGACY_GROUP_LIST: u32 = 1;
export const LEGACY_GROUP: u32 = 2;
export const LEGACY_RESOURCE_LIST: u32 = 3;

const INSERT_GROUPS: u32 = 0; // before the "]" of groups: the unseen peer groups
const INSERT_CHILDREN: u32 = 1; // before the "]" of versions: the node's unseen children
const INSERT_VERSIONS_FIELD: u32 = 2; // after a group's name: ,"versions":[..]
const INSERT_RESOURCES: u32 = 3; // before the "]" of resources: unseen resources, each then its unseen subresources

const GROUPS = String.UTF8.encode("groups");
const NAME = String.UTF8.encode("name");
const VERSIONS = String.UTF8.encode("versions");
const VERSION = String.UTF8.encode("version");
const RESOURCES = String.UTF8.encode("resources");
const COMMA_VERSIONS = String.UTF8.encode(',"versions":[');

const LEVEL_TOP: i32 = 0;
const LEVEL_GROUP: i32 = 1;
const LEVEL_VERSION: i32 = 2;
const LEVEL_RESOURCE: i32 = 3;

let document: u32 = 0;
let peerGroups: usize = 0;
let peerGroupCount: u32 = 0;
let foundList = false;
let groupNode: usize = 0;
let groupNamed = false;
let groupNameEnd: usize = 0;
let groupHasVersions = false;

function member(level: i32, node: usize): void {
  if (level == LEVEL_TOP && document == LEGACY_GROUP_LIST && strIs(GROUPS)) {
    foundList = true;
    list(LEVEL_GROUP, 0);
  } else if (level == LEVEL_TOP && document == LEGACY_VERSIONS && strIs(VERSIONS)) {
    foundList = true;
    list(LEVEL_VERSION, node);
  } else if (level == LEVEL_TOP && document == LEGACY_RESOURCE_LIST && strIs(RESOURCES)) {
    foundList = true;
    list(LEVEL_RESOURCE, node);
  } else if (level == LEVEL_GROUP && strIs(NAME)) {
    scanString();
    groupNameEnd = pos;
    groupNamed = true;
    if (!bad) groupNode = findNamed(peerGroups, peerGroupCount);
  } else if (level == LEVEL_GROUP && strIs(VERSIONS)) {
    if (!groupNamed) fail(); // versions before the name: the peer group is not known yet
    groupHasVersions = true;
    list(LEVEL_VERSION, groupNode);
  } else if ((level == LEVEL_VERSION && strIs(VERSION)) || (level == LEVEL_RESOURCE && strIs(NAME))) {
    scanString();
    if (bad || node == 0) return;
    if (level == LEVEL_VERSION) findNamed(children(node), childCount(node));
    else markLegacyName(node, strAt, strLen);
  } else {
    skipValue();
  }
}

/** A group object (of APIGroupList, or APIGroup itself); records where its node's unseen versions go when it has no "versions". */
function groupObject(): void {
  groupNode = 0;
  groupNamed = false;
  groupHasVersions = false;
  members(LEVEL_GROUP, 0, member);
  if (!bad && !groupHasVersions && groupNode != 0) record(groupNameEnd, INSERT_VERSIONS_FIELD, groupNode, false);
}

/** An array at pos of `level` entries (objects; strings for APIVersions), children of peer `node`; records the insertion before its "]". */
function list(level: i32, node: usize): void {
  const n = elements(level, node, entry);
  if (bad) return;
  if (level == LEVEL_GROUP) record(pos - 1, INSERT_GROUPS, 0, n > 0);
  else if (level == LEVEL_RESOURCE) record(pos - 1, INSERT_RESOURCES, node, n > 0);
  else if (node != 0) record(pos - 1, INSERT_CHILDREN, node, n > 0);
}

function entry(level: i32, node: usize): void {
  if (level == LEVEL_GROUP) {
    groupObject();
  } else if (level == LEVEL_VERSION && document == LEGACY_VERSIONS) {
    scanString();
    if (!bad && node != 0) findNamed(children(node), childCount(node));
  } else {
    members(level, node, member);
  }
}

/** Writes the version node's unseen resources, each followed by its unseen subresources (empty fragments skipped). */
function emitResources(version: usize, comma: bool): void {
  for (let i: u32 = 0; i < childCount(version); i++) {
    const resource = nodeAt(children(version), i);
    const len = <usize>load<u32>(resource + N_LEGACY_JSON_LEN);
    if (load<u32>(resource + N_SEEN) == 0 && len != 0) {
      if (comma) outByte(0x2c);
      comma = true;
      outBytes(<usize>load<u32>(resource + N_LEGACY_JSON), len);
    }
    if (emitUnseen(children(resource), childCount(resource), comma, N_LEGACY_JSON)) comma = true;
  }
}

/**
 * Splices the peer part into the local legacy JSON body [body, body + len)
 * of `doc` (LEGACY_*): `first`/`count` the set's groups, `node` the peer
 * node the document is about (APIVersions: the core group; APIResourceList:
 * the version; otherwise unused). The result is in out.ts (outLen bytes);
 * false when the body is not one to splice. Every SEEN mark must be clear.
 */
export function spliceLegacyJson(body: usize, len: usize, doc: u32, first: usize, count: u32, node: usize): bool {
  scanStart(body, len);
  insertsStart();
  document = doc;
  peerGroups = first;
  peerGroupCount = count;
  foundList = false;
  if (doc == LEGACY_GROUP) {
    groupObject();
    foundList = groupNamed;
  } else {
    members(LEVEL_TOP, node, member);
  }
  ws();
  if (bad || !foundList || pos != end) return false;
  outStart(len + 1024);
  return copyWithInserts(body, insert);
}

function insert(what: u32, node: usize, nonEmpty: bool, _record: usize): void {
  if (what == INSERT_GROUPS) emitUnseen(peerGroups, peerGroupCount, nonEmpty, N_LEGACY_JSON);
  else if (what == INSERT_CHILDREN) emitUnseen(children(node), childCount(node), nonEmpty, N_LEGACY_JSON);
  else if (what == INSERT_VERSIONS_FIELD) emitChildrenField(COMMA_VERSIONS, node, N_LEGACY_JSON);
  else emitResources(node, nonEmpty);
}
