// The merged OpenAPI v3 index, rendered: what a client gets from
// `/openapi/v3` through a sidecar. kubectl explain and client-go read the
// index, then fetch the group-version's document at the URL it names; a
// group-version only peers serve is missing from the local apiserver's
// index, so explain would fail for it during skew. The merged index is the
// local one plus the peer part (peerPart.ts openApiPeerPart, merged by
// mergeRule.ts mergeOpenApi); the sidecar routes `/openapi/v3/apis/{g}/{v}`
// of those group-versions to the peers (see the planner's group documents).
import type { OpenApiV3Index } from '../model/openapi.js';
import { etagOf, goJson } from './render.js';

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
