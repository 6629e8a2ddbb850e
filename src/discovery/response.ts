// The one entry point the ext_proc server calls for a merged-document
// request (a document over the push budget: the document filters answer the
// others inside Envoy): answer it from the merged discovery, or let the local
// apiserver's own answer through. Which document a request is for was decided
// by the route that sent it to ext_proc (src/translator/routes.ts); what the
// client accepts is negotiated here, exactly as kube-apiserver negotiates it.
// Pure apart from the rendering memo.
import { MERGED_DOCUMENT_PATHS, type MergedDocument } from '../model/requestInfo.js';
import type { MergedDiscovery } from './merge.js';
import { negotiateDiscovery } from './negotiate.js';
import { renderAggregatedCached, type RenderedDocument } from './render.js';
import { renderOpenApiIndex } from './openapi.js';

export type { MergedDocument } from '../model/requestInfo.js';

/** Whether a name (as the route passes it to ext_proc) is one of the merged documents. */
export function isMergedDocument(value: string): value is MergedDocument {
  return Object.hasOwn(MERGED_DOCUMENT_PATHS, value);
}

export interface DiscoveryRequest {
  document: MergedDocument;
  accept?: string;
  ifNoneMatch?: string;
}

export interface DiscoveryReply {
  status: 200 | 304;
  headers: Record<string, string>;
  /** Empty for 304. */
  body: Buffer;
  /** Whether the rendered document was reused (upstream's peer-aggregated cache hit/miss counters). */
  cache: 'hit' | 'miss';
  document: MergedDocument;
}

export interface DiscoveryPassThrough {
  passThrough: true;
  /**
   * Why the local apiserver's own answer goes through: the client asked for
   * the apiserver's own document (`profile=nopeer`) or for unaggregated
   * discovery, or the local apiserver's discovery is not known yet.
   */
  reason: 'nopeer' | 'legacy' | 'no-local-discovery';
}

export function discoveryResponse(request: DiscoveryRequest, merged: MergedDiscovery): DiscoveryReply | DiscoveryPassThrough {
  if (request.document === 'openapi-index') {
    if (!merged.openapi) return passThrough('no-local-discovery');
    const { document, cache } = renderOpenApiIndex(merged.openapi);
    const headers = { etag: document.etag, 'cache-control': 'no-cache, private' };
    if (etagMatches(request.ifNoneMatch, document.etag)) return { status: 304, headers, body: Buffer.alloc(0), cache, document: request.document };
    return { status: 200, headers: { 'content-type': 'application/json', ...headers }, body: document.body, cache, document: request.document };
  }
  const negotiated = negotiateDiscovery(request.accept);
  if (negotiated.kind !== 'aggregated') return passThrough(negotiated.kind);
  // Before the local apiserver's discovery is known, a merged document would
  // be missing everything it serves: let it answer for itself.
  if (!merged.local) return passThrough('no-local-discovery');
  const list = request.document === 'core-discovery' ? merged.core : merged.groups;
  const { document, cache } = renderAggregatedCached(list, negotiated.format);
  // As upstream's ServeHTTPWithETag: ETag, Vary and Cache-Control on 200 and 304 alike.
  const cacheHeaders = { etag: document.etag, vary: 'Accept', 'cache-control': 'public' };
  if (etagMatches(request.ifNoneMatch, document.etag)) return { status: 304, headers: cacheHeaders, body: Buffer.alloc(0), cache, document: request.document };
  return reply(document, { 'content-type': document.contentType, ...cacheHeaders }, cache, request.document);
}

function reply(document: RenderedDocument, headers: Record<string, string>, cache: 'hit' | 'miss', kind: MergedDocument): DiscoveryReply {
  return { status: 200, headers, body: document.body, cache, document: kind };
}

function passThrough(reason: DiscoveryPassThrough['reason']): DiscoveryPassThrough {
  return { passThrough: true, reason };
}

/** If-None-Match: a list of (possibly weak) entity tags, or `*`. */
function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag === etag || (tag.startsWith('W/') && tag.slice(2) === etag);
  });
}
