// The merged OpenAPI v3 index: what a client gets from `/openapi/v3` through a
// sidecar. kubectl explain and client-go read the index, then fetch the
// group-version's document at the URL it names; a group-version only peers
// serve is missing from the local apiserver's index, so explain fails for it
// during skew. The merged index is the local one plus, for every group-version
// only peers list, the first peer's entry (peers sorted by name, as the
// discovery merge); the sidecar routes `/openapi/v3/apis/{g}/{v}` of those
// group-versions to the peers (see the planner's group documents). CRD and
// APIService group-versions (shared-state-local) come only from the local index.
import type { ApiserverObservation } from '../model/cluster.js';
import { groupVersionOfIndexPath, type OpenApiV3Index } from '../model/openapi.js';
import { groupVersionKey } from '../model/liveness.js';
import { etagOf, goJson } from './render.js';
import { compareStrings } from '../util/order.js';

/**
 * `local`'s index with what only `peers` (in merge order) list added; undefined
 * while the local index is not known, so the local apiserver answers itself.
 */
export function mergeOpenApiIndex(
  local: ApiserverObservation | undefined,
  peers: readonly ApiserverObservation[],
  localOnly: ReadonlySet<string>,
): OpenApiV3Index | undefined {
  const own = local?.discovery?.openapi;
  if (!own) return undefined;
  const paths: OpenApiV3Index['paths'] = { ...own.paths };
  for (const peer of peers) {
    for (const [path, entry] of Object.entries(peer.discovery?.openapi?.paths ?? {})) {
      const gv = groupVersionOfIndexPath(path);
      if (!gv || path in paths || localOnly.has(groupVersionKey(gv.group, gv.version))) continue;
      paths[path] = entry;
    }
  }
  // Keys sorted, as Go's encoder writes a map: equal indexes render equal bytes.
  return { paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => compareStrings(a, b))) };
}

export interface RenderedOpenApiIndex {
  body: Buffer;
  etag: string;
}

const rendered = new WeakMap<OpenApiV3Index, RenderedOpenApiIndex>();

/** JSON and ETag of an index, rendered once per index object. */
export function renderOpenApiIndex(index: OpenApiV3Index): { document: RenderedOpenApiIndex; cache: 'hit' | 'miss' } {
  const cached = rendered.get(index);
  if (cached) return { document: cached, cache: 'hit' };
  const body = Buffer.from(goJson(index));
  const document = { body, etag: etagOf(body) };
  rendered.set(index, document);
  return { document, cache: 'miss' };
}
