// The OpenAPI v3 index (`GET /openapi/v3`): one entry per document an
// apiserver serves, keyed by path ("api/v1", "apis/batch/v1", "version"...),
// each with the URL that names its content hash. kubectl explain and
// client-go read it first, then fetch the group-version's document.
import { isRecord } from '../util/json.js';

export interface OpenApiV3Index {
  paths: Record<string, { serverRelativeURL: string }>;
}

/** Validates the shape of a decoded `/openapi/v3` body; throws on anything else. */
export function parseOpenApiV3Index(body: unknown): OpenApiV3Index {
  const paths = isRecord(body) ? body['paths'] : undefined;
  if (!isRecord(paths)) throw new Error('not an OpenAPI v3 index: no "paths" object');
  const out: OpenApiV3Index = { paths: {} };
  for (const [path, entry] of Object.entries(paths)) {
    const url = isRecord(entry) ? entry['serverRelativeURL'] : undefined;
    if (typeof url !== 'string' || !url.startsWith('/openapi/v3/')) throw new Error(`not an OpenAPI v3 index: entry ${JSON.stringify(path)} has no serverRelativeURL under /openapi/v3/`);
    out.paths[path] = { serverRelativeURL: url };
  }
  return out;
}

/** The group-version an index key names (`api/v1` is the core group), if it names one. */
export function groupVersionOfIndexPath(path: string): { group: string; version: string } | undefined {
  const core = /^api\/([^/]+)$/.exec(path);
  if (core) return { group: '', version: core[1] as string };
  const named = /^apis\/([^/]+)\/([^/]+)$/.exec(path);
  return named ? { group: named[1] as string, version: named[2] as string } : undefined;
}
