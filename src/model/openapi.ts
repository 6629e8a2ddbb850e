// The OpenAPI v3 index (`GET /openapi/v3`): one entry per document an
// apiserver serves, keyed by path ("api/v1", "apis/batch/v1", "apis/batch",
// "version", ".well-known/openid-configuration"...), each with the URL that
// names its content hash. kubectl explain and client-go read it first, then
// fetch the group-version's document.
//
// Content from apiservers is data, as discovery is (src/model/discoveryDocument.ts):
// a malformed entry drops that entry, never the index, and never an
// apiserver. Two levels, as there:
// - parseOpenApiV3Index drops what does not have the index's types (an entry
//   that is not an object, a serverRelativeURL that is not a string). The
//   rest is the apiserver's own index as the merged index serves it to that
//   apiserver's own clients, every key kept as listed: without mvproxy they
//   would read those entries too;
// - routableOpenApiIndex keeps, of that, the group-version entries a sidecar
//   can take from a peer: a key `api/{version}` or `apis/{group}/{version}`
//   with names Kubernetes accepts (src/model/names.ts), whose
//   serverRelativeURL is a relative URL naming that very document
//   (`/openapi/v3/{key}`, any query), the path the sidecar routes to the
//   peer. Other keys (`version`, `apis/{group}`...) are not group-version
//   documents: never taken from a peer, not reported.
import { isRecord } from '../util/json.js';
import { isDns1035Label, isDns1123Subdomain } from './names.js';

export interface OpenApiV3Index {
  paths: Record<string, { serverRelativeURL: string }>;
}

/** An entry of an OpenAPI v3 index that mvproxy leaves out. */
export interface DroppedOpenApiIndexEntry {
  /** Its key in `paths` ("apis/batch/v1"). */
  key: string;
  reason: string;
}

const OPENAPI_V3_PREFIX = '/openapi/v3/';

/**
 * Read a decoded `/openapi/v3` body. Throws only when it is not an index at
 * all (not an object, no "paths" object). An entry that is not an object with
 * a string serverRelativeURL is left out and reported in `dropped`; the rest
 * is kept as listed (names are judged by routableOpenApiIndex).
 */
export function parseOpenApiV3Index(body: unknown, dropped: DroppedOpenApiIndexEntry[] = []): OpenApiV3Index {
  const paths = isRecord(body) ? body['paths'] : undefined;
  if (!isRecord(paths)) throw new Error('not an OpenAPI v3 index: no "paths" object');
  // Entries, then Object.fromEntries: a key named "__proto__" stays a key.
  const kept: Array<[string, { serverRelativeURL: string }]> = [];
  for (const [key, entry] of Object.entries(paths)) {
    if (!isRecord(entry)) {
      dropped.push({ key, reason: `expected an object, got ${describe(entry)}` });
      continue;
    }
    const url = entry['serverRelativeURL'];
    if (typeof url !== 'string') {
      dropped.push({ key, reason: `serverRelativeURL: expected a string, got ${describe(url)}` });
      continue;
    }
    kept.push([key, { serverRelativeURL: url }]);
  }
  return { paths: Object.fromEntries(kept) };
}

export interface RoutableOpenApiIndex {
  /** `index` itself when nothing was dropped; else a copy without the dropped entries. */
  index: OpenApiV3Index;
  dropped: DroppedOpenApiIndexEntry[];
}

const routableCache = new WeakMap<OpenApiV3Index, RoutableOpenApiIndex>();

/**
 * The entries of a parsed index a sidecar may take from a peer (see the head
 * of this file), and the group-version entries left out, each with its
 * reason. Keys that do not name a group-version are kept and not reported
 * (the merge never takes them from a peer). Memoized per index object: the
 * merge asks again for every peer.
 */
export function routableOpenApiIndex(index: OpenApiV3Index): RoutableOpenApiIndex {
  const cached = routableCache.get(index);
  if (cached) return cached;
  const dropped: DroppedOpenApiIndexEntry[] = [];
  const entries = Object.entries(index.paths).filter(([key, entry]) => {
    const problem = groupVersionEntryProblem(key, entry.serverRelativeURL);
    if (problem !== undefined) dropped.push({ key, reason: problem });
    return problem === undefined;
  });
  const result: RoutableOpenApiIndex = { index: dropped.length === 0 ? index : { paths: Object.fromEntries(entries) }, dropped };
  routableCache.set(index, result);
  return result;
}

/** Why a group-version entry cannot be taken from a peer; undefined when it can, or when the key names no group-version. */
function groupVersionEntryProblem(key: string, url: string): string | undefined {
  const shape = indexKeyShape(key);
  if (shape === undefined) return undefined; // not a group-version document
  const problem = (shape.group === undefined ? undefined : groupProblem(shape.group)) ?? versionProblem(shape.version);
  if (problem !== undefined) return problem;
  const expected = `${OPENAPI_V3_PREFIX}${key}`;
  if (url !== expected && !url.startsWith(`${expected}?`)) {
    return `serverRelativeURL ${describe(url)} is not the relative URL of this document (${expected}, with any query)`;
  }
  return undefined;
}

function versionProblem(version: string): string | undefined {
  if (isDns1035Label(version)) return undefined;
  return `version ${describe(version)} is not a DNS-1035 label`;
}

function groupProblem(group: string): string | undefined {
  if (isDns1123Subdomain(group)) return undefined;
  return `group ${describe(group)} is not a DNS-1123 subdomain`;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}

/**
 * The names in an index key of a group-version document's shape: `api/{version}`
 * (no group: the core group) or `apis/{group}/{version}`. Names are as
 * written, possibly empty (judged by the callers).
 */
function indexKeyShape(key: string): { group?: string; version: string } | undefined {
  const segments = key.split('/');
  if (segments[0] === 'api' && segments.length === 2) return { version: segments[1] as string };
  if (segments[0] === 'apis' && segments.length === 3) return { group: segments[1] as string, version: segments[2] as string };
  return undefined;
}

/** The group-version an index key names (`api/v1` is the core group), if it names one. */
export function groupVersionOfIndexPath(path: string): { group: string; version: string } | undefined {
  const shape = indexKeyShape(path);
  if (shape === undefined || shape.version === '' || shape.group === '') return undefined;
  return { group: shape.group ?? '', version: shape.version };
}
