// The one entry point the ext_proc server calls for a discovery request:
// answer it from the merged discovery, or let it through to the local
// apiserver. Pure apart from the rendering memo.
import type { MergedDiscovery } from './merge.js';
import { negotiateDiscovery } from './negotiate.js';
import { parseGroupPath, peerGroupDocument } from './peerGroup.js';
import { renderAggregatedCached, type RenderedDocument } from './render.js';
import { renderOpenApiIndex } from './openapi.js';

export interface DiscoveryRequest {
  /** Request path; a query string is ignored. */
  path: string;
  /** Only GET and HEAD are answered; anything else passes through. Absent means GET. */
  method?: string;
  accept?: string;
  ifNoneMatch?: string;
}

export interface DiscoveryReply {
  status: 200 | 304;
  headers: Record<string, string>;
  /** Empty for 304 (and for HEAD the caller should drop it). */
  body: Buffer;
  /** Whether the rendered document was reused (upstream's peer-aggregated cache hit/miss counters). */
  cache: 'hit' | 'miss';
  /** Which document was served. */
  document: 'aggregated' | 'group' | 'group-version' | 'openapi-index';
}

export interface DiscoveryPassThrough {
  passThrough: true;
  /**
   * Why the local apiserver answers: not a discovery path; the client asked
   * for the apiserver's own document (`profile=nopeer`, counted upstream as
   * aggregator_discovery_nopeer_requests_total); it asked for unaggregated
   * discovery; the local apiserver serves everything there is at that path;
   * or the local apiserver's discovery is not known yet.
   */
  reason: 'not-discovery' | 'nopeer' | 'legacy' | 'served-locally' | 'no-local-discovery';
}

export function discoveryResponse(request: DiscoveryRequest, merged: MergedDiscovery): DiscoveryReply | DiscoveryPassThrough {
  const method = (request.method ?? 'GET').toUpperCase();
  if (method !== 'GET' && method !== 'HEAD') return passThrough('not-discovery');
  const path = normalizedPath(request.path);

  if (path === '/api' || path === '/apis') {
    const negotiated = negotiateDiscovery(request.accept);
    if (negotiated.kind !== 'aggregated') return passThrough(negotiated.kind);
    // Before the local apiserver's discovery is known, a merged document would
    // be missing everything it serves: let it answer for itself.
    if (!merged.local) return passThrough('no-local-discovery');
    const list = path === '/api' ? merged.core : merged.groups;
    const { document, cache } = renderAggregatedCached(list, negotiated.format);
    // As upstream's ServeHTTPWithETag: ETag, Vary and Cache-Control on 200 and 304 alike.
    const cacheHeaders = { etag: document.etag, vary: 'Accept', 'cache-control': 'public' };
    if (etagMatches(request.ifNoneMatch, document.etag)) return { status: 304, headers: cacheHeaders, body: Buffer.alloc(0), cache, document: 'aggregated' };
    return reply(document, { 'content-type': document.contentType, ...cacheHeaders }, cache, 'aggregated');
  }

  if (path === '/openapi/v3') {
    if (!merged.openapi) return passThrough('no-local-discovery');
    const { document, cache } = renderOpenApiIndex(merged.openapi);
    const headers = { etag: document.etag, 'cache-control': 'no-cache, private' };
    if (etagMatches(request.ifNoneMatch, document.etag)) return { status: 304, headers, body: Buffer.alloc(0), cache, document: 'openapi-index' };
    return { status: 200, headers: { 'content-type': 'application/json', ...headers }, body: document.body, cache, document: 'openapi-index' };
  }

  const groupPath = parseGroupPath(path);
  if (!groupPath) return passThrough('not-discovery');
  if (!merged.local) return passThrough('no-local-discovery');
  const seen = groupDocumentSeen(merged, path);
  const document = peerGroupDocument(merged, merged.local, path);
  if (!document) return passThrough('served-locally');
  const cache = seen ? 'hit' : 'miss';
  const headers = { 'content-type': document.contentType, etag: document.etag };
  if (etagMatches(request.ifNoneMatch, document.etag)) return { status: 304, headers: { etag: document.etag }, body: Buffer.alloc(0), cache, document: groupPath.kind };
  return reply(document, headers, cache, groupPath.kind);
}

function reply(document: RenderedDocument, headers: Record<string, string>, cache: 'hit' | 'miss', kind: DiscoveryReply['document']): DiscoveryReply {
  return { status: 200, headers, body: document.body, cache, document: kind };
}

function passThrough(reason: DiscoveryPassThrough['reason']): DiscoveryPassThrough {
  return { passThrough: true, reason };
}

/** Query removed, one trailing slash tolerated (`/apis/` is `/apis`). */
function normalizedPath(path: string): string {
  const bare = path.split('?', 1)[0] as string;
  return bare.length > 1 && bare.endsWith('/') ? bare.slice(0, -1) : bare;
}

/** If-None-Match: a list of (possibly weak) entity tags, or `*`. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag === etag || (tag.startsWith('W/') && tag.slice(2) === etag);
  });
}

// Per-group documents are memoized inside peerGroupDocument; this only tells
// whether this (merged, path) was built before, for the hit/miss report.
// Bounded: paths come from clients.
const MEMO_LIMIT = 1024;
const groupPathsSeen = new WeakMap<MergedDiscovery, Set<string>>();

function groupDocumentSeen(merged: MergedDiscovery, path: string): boolean {
  let seen = groupPathsSeen.get(merged);
  if (!seen) {
    seen = new Set();
    groupPathsSeen.set(merged, seen);
  }
  const before = seen.has(path);
  if (seen.size < MEMO_LIMIT) seen.add(path);
  return before;
}
