// Which document a request of a document filter asks for, by its `:path`
// (query string stripped, one trailing "/" allowed), and the peer node the
// legacy (meta/v1) merge of that document reads:
//   /api, /apis (and any path of the OpenAPI set): the set's own document,
//     aggregated or legacy (APIVersions, APIGroupList): the response's
//     Content-Type decides;
//   /apis/{g}: APIGroup, the set's group g;
//   /api/{v}, /apis/{g}/{v}: APIResourceList, version v of group "" or g.
// A group or group-version the part holds nothing for: DOC_NONE, the local
// answer goes through untouched, its body never collected.
import { KIND_CORE, KIND_GROUPS, N_LEGACY_JSON_LEN, nodeAt, setGroupCount, setGroups, setKind } from "./documents";
import { childCount, children, nodeNamed } from "./nodes";

export const DOC_NONE: u32 = 0;
/** /api, /apis, the OpenAPI index. */
export const DOC_TOP: u32 = 1;
export const DOC_GROUP: u32 = 2;
export const DOC_RESOURCE_LIST: u32 = 3;

/** The peer node the last documentOfPath found (DOC_GROUP: the group; DOC_RESOURCE_LIST: the version). */
export let docNode: usize = 0;

const API = String.UTF8.encode("/api");
const APIS = String.UTF8.encode("/apis");

function hasPrefix(p: usize, n: usize, prefix: ArrayBuffer): bool {
  const len = <usize>prefix.byteLength;
  return n >= len && memory.compare(p, changetype<usize>(prefix), len) == 0 && (n == len || load<u8>(p + len) == 0x2f);
}

function indexOfSlash(p: usize, n: usize): usize {
  for (let i: usize = 0; i < n; i++) if (load<u8>(p + i) == 0x2f) return i;
  return n;
}

/** Whether some resource of the version node, or a subresource of one, has a legacy fragment. */
function versionAddsAny(version: usize): bool {
  for (let i: u32 = 0; i < childCount(version); i++) {
    const resource = nodeAt(children(version), i);
    if (load<u32>(resource + N_LEGACY_JSON_LEN) != 0) return true;
    for (let j: u32 = 0; j < childCount(resource); j++) if (load<u32>(nodeAt(children(resource), j) + N_LEGACY_JSON_LEN) != 0) return true;
  }
  return false;
}

/** The resource list of version [v, v + vn) of `group` (0: none), or DOC_NONE when the part adds nothing to it. */
function resourceList(group: usize, v: usize, vn: usize): u32 {
  if (group == 0 || vn == 0 || indexOfSlash(v, vn) != vn) return DOC_NONE;
  docNode = nodeNamed(children(group), childCount(group), v, vn);
  return docNode != 0 && versionAddsAny(docNode) ? DOC_RESOURCE_LIST : DOC_NONE;
}

/** The document the path [p, p + n) names for `set` (no path: its own document). */
export function documentOfPath(set: usize, p: usize, n: usize): u32 {
  docNode = 0;
  const kind = setKind(set);
  if (kind != KIND_CORE && kind != KIND_GROUPS) return DOC_TOP;
  for (let i: usize = 0; i < n; i++) {
    const c = load<u8>(p + i);
    if (c == 0x3f || c == 0x23) {
      n = i;
      break;
    }
  }
  if (n > 1 && load<u8>(p + n - 1) == 0x2f) n--;
  const top = kind == KIND_CORE ? API : APIS;
  if (!hasPrefix(p, n, top)) return DOC_TOP; // the route chose this filter: its own document
  const at = <usize>top.byteLength;
  if (n == at) return DOC_TOP;
  const rest = p + at + 1;
  const restLen = n - at - 1;
  const groups = setGroups(set);
  const count = setGroupCount(set);
  if (kind == KIND_CORE) return resourceList(nodeNamed(groups, count, 0, 0), rest, restLen);
  const slash = indexOfSlash(rest, restLen);
  if (slash == 0) return DOC_NONE;
  const group = nodeNamed(groups, count, rest, slash);
  if (slash == restLen) {
    docNode = group;
    return group != 0 ? DOC_GROUP : DOC_NONE;
  }
  return resourceList(group, rest + slash + 1, restLen - slash - 1);
}
