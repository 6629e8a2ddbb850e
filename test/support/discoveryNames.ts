// Aggregated discovery read as lists of names, for tests that compare what a
// sidecar lists with what its apiserver lists (test/e2e/discoveryFreshness):
// one `group/version/resource` per resource (core group ""), in document
// order, and the merge rule of src/discovery/peerPart.ts applied to such lists.
import { decodeAggregatedProtobuf } from '../../src/discovery/protobufDecode.js';
import {
  AGGREGATED_DISCOVERY_JSON_ACCEPT,
  AGGREGATED_DISCOVERY_NOPEER_JSON,
  AGGREGATED_DISCOVERY_PROTOBUF,
  type APIGroupDiscoveryList,
} from '../../src/model/discovery.js';
import { httpsRequest } from '../../src/util/https.js';

/** How a document is asked for: merged JSON, merged protobuf, or the apiserver's own (profile=nopeer, JSON). */
export const DISCOVERY_ACCEPT = {
  json: AGGREGATED_DISCOVERY_JSON_ACCEPT,
  protobuf: `${AGGREGATED_DISCOVERY_PROTOBUF},${AGGREGATED_DISCOVERY_JSON_ACCEPT}`,
  nopeer: AGGREGATED_DISCOVERY_NOPEER_JSON,
} as const;
export type DiscoveryFormat = keyof typeof DISCOVERY_ACCEPT;

/** One resource as a document lists it. */
export interface ListedResource {
  /** `group/version/resource`, core group "". */
  name: string;
  verbs: string[];
}

export interface DiscoveryRead {
  status: number;
  etag?: string;
  contentType?: string;
  resources: ListedResource[];
  /** The `name`s of `resources`, in document order. */
  names: string[];
}

/** Every resource of a document, in its order (the core group's empty name is left out of its metadata, in JSON as in protobuf). */
export function listedResources(list: APIGroupDiscoveryList): ListedResource[] {
  return list.items.flatMap((g) => {
    const group = typeof g.metadata.name === 'string' ? g.metadata.name : '';
    return g.versions.flatMap((v) => v.resources.map((r) => ({ name: `${group}/${v.version}/${r.resource}`, verbs: r.verbs ?? [] })));
  });
}

/** GET `path` (`/api` or `/apis`) from `base` as a bearer-token client, in `format`; a 200 body is parsed (JSON or protobuf, by its content type). */
export async function readDiscovery(
  ca: string,
  base: string,
  token: string,
  path: string,
  format: DiscoveryFormat,
  headers: Record<string, string> = {},
): Promise<DiscoveryRead> {
  const res = await httpsRequest(
    base + path,
    { ca },
    { headers: { authorization: `Bearer ${token}`, accept: DISCOVERY_ACCEPT[format], ...headers }, timeoutMs: 15_000 },
  );
  const contentType = typeof res.headers['content-type'] === 'string' ? res.headers['content-type'] : undefined;
  const etag = typeof res.headers['etag'] === 'string' ? res.headers['etag'] : undefined;
  if (res.status !== 200) return { status: res.status, ...(etag ? { etag } : {}), resources: [], names: [] };
  const list = contentType?.startsWith('application/vnd.kubernetes.protobuf')
    ? decodeAggregatedProtobuf(res.bodyBytes)
    : (JSON.parse(res.body) as APIGroupDiscoveryList);
  const resources = listedResources(list);
  return { status: 200, ...(etag ? { etag } : {}), ...(contentType ? { contentType } : {}), resources, names: resources.map((r) => r.name) };
}

/** A LIST of `group/version/resource` at cluster scope (every namespace), one item at most. */
export function listPath(name: string): string {
  const [group, version, resource] = name.split('/');
  return group === '' ? `/api/${version}/${resource}?limit=1` : `/apis/${group}/${version}/${resource}?limit=1`;
}

type Tree = Map<string, Map<string, string[]>>;

function tree(names: readonly string[]): Tree {
  const groups: Tree = new Map();
  for (const name of names) {
    const [group = '', version = '', resource = ''] = name.split('/');
    const versions = groups.get(group) ?? new Map<string, string[]>();
    groups.set(group, versions);
    versions.set(version, [...(versions.get(version) ?? []), resource]);
  }
  return groups;
}

/**
 * The merge rule (src/discovery/peerPart.ts) on names: every local entry in
 * its order, then at each level (group, version of a group, resource of a
 * version) the peer part's entries the local lacks, in the peer part's order.
 */
export function mergedNames(local: readonly string[], peer: readonly string[]): string[] {
  const [l, p] = [tree(local), tree(peer)];
  const out: string[] = [];
  const versionsOf = (group: string, lv: Map<string, string[]> | undefined, pv: Map<string, string[]> | undefined): void => {
    const versions = [...(lv?.keys() ?? []), ...[...(pv?.keys() ?? [])].filter((v) => !lv?.has(v))];
    for (const version of versions) {
      const own = lv?.get(version) ?? [];
      const resources = [...own, ...(pv?.get(version) ?? []).filter((r) => !own.includes(r))];
      for (const resource of resources) out.push(`${group}/${version}/${resource}`);
    }
  };
  for (const [group, lv] of l) versionsOf(group, lv, p.get(group));
  for (const [group, pv] of p) if (!l.has(group)) versionsOf(group, undefined, pv);
  return out;
}

/** What a merged answer adds to the local document: its names the local lacks, in the merged order (the peer part, as served). */
export function addedNames(merged: readonly string[], local: readonly string[]): string[] {
  const own = new Set(local);
  return merged.filter((name) => !own.has(name));
}

/** Names of `expected` missing from `actual`. */
export function missingNames(actual: readonly string[], expected: readonly string[]): string[] {
  const have = new Set(actual);
  return expected.filter((name) => !have.has(name));
}
