// The answer the ext_proc server gives a merged-document request (a document
// whose peer part is over the push budget: the document filters answer the
// others inside Envoy): the local apiserver's current answer, as it sent it
// to this very request, merged with the peer part by the merge rule
// (mergeRule.ts), as the filter would; or the local answer untouched when
// anything is not as expected. Which document a request is for was decided
// by the route that sent it to ext_proc (src/translator/routes.ts); the
// format, aggregated or legacy (legacyResponse.ts), JSON or protobuf, is the
// one the local apiserver negotiated (its Content-Type). Pure.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { DroppedDiscoveryEntry } from '../model/discovery.js';
import { parseAggregatedDiscovery } from '../model/discoveryDocument.js';
import { parseOpenApiV3Index, type DroppedOpenApiIndexEntry } from '../model/openapi.js';
import { MERGED_DOCUMENT_PATHS, mergedDocumentOf, type MergedDocument } from '../model/requestInfo.js';
import { goOrderedList } from './goJsonOrder.js';
import { mergedLegacyBody } from './legacyResponse.js';
import { mergeAggregated, mergeOpenApi } from './mergeRule.js';
import { negotiateDiscovery } from './negotiate.js';
import { mergedEtag, type PeerPart } from './peerPart.js';
import { decodeAggregatedProtobuf } from './protobufDecode.js';
import { encodeAggregatedProtobuf } from './protobufEncode.js';
import { goJson } from './render.js';

export type { MergedDocument } from '../model/requestInfo.js';

/** Whether a name (as the route passes it to ext_proc) is one of the merged documents. */
export function isMergedDocument(value: string): value is MergedDocument {
  return Object.hasOwn(MERGED_DOCUMENT_PATHS, value);
}

/** What the client asked, as the request headers said it. */
export interface DiscoveryRequest {
  document: MergedDocument;
  /** The request's :path (legacy documents: which one; the query is ignored). */
  path?: string;
  accept?: string;
  ifNoneMatch?: string;
  acceptEncoding?: string;
}

/** The local apiserver's 200 to the request: its headers (names lower-case, repeated ones in order) and its whole body. */
export interface LocalAnswer {
  headers: ReadonlyMap<string, readonly string[]>;
  body: Buffer;
}

export interface DiscoveryReply {
  status: 200 | 304;
  /** The local apiserver's headers (Audit-Id, priority-and-fairness, Warning...), with the merged document's own. */
  headers: [name: string, value: string][];
  /** Empty for 304. */
  body: Buffer;
  document: MergedDocument;
}

export interface DiscoveryPassThrough {
  passThrough: true;
  /**
   * Why the local answer goes through: the client asked for the apiserver's
   * own document (`profile=nopeer`), the sidecar holds no peer part, or the
   * local answer is not one the merge reads (another format, encoded,
   * malformed, not the document the path names).
   */
  reason: 'nopeer' | 'no-peer-part' | 'unexpected-local-answer';
}

/**
 * kube-apiserver gzips an answer larger than this when the client accepts gzip
 * (APIResponseCompression), at level 1.
 */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;
const GZIP_LEVEL = 1;

/** Local headers the merged answer sets itself, or that describe the local body's bytes. */
const REPLACED_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'etag', 'connection', 'keep-alive']);

/**
 * The merged answer to `request` from the local apiserver's 200 and the
 * sidecar's peer part of that document (`peerDigest`: the part's digest,
 * which the merged ETag takes with the local ETag).
 */
export function discoveryResponse(
  request: DiscoveryRequest,
  local: LocalAnswer,
  part: PeerPart | undefined,
  peerDigest: string,
): DiscoveryReply | DiscoveryPassThrough {
  // Legacy or aggregated: what the apiserver answered says (its Content-Type); profile=nopeer asks for its own.
  if (request.document !== 'openapi-index' && negotiateDiscovery(request.accept).kind === 'nopeer') return passThrough('nopeer');
  if (part === undefined || part.document !== request.document) return passThrough('no-peer-part');
  const contentType = only(local.headers, 'content-type');
  const encoding = only(local.headers, 'content-encoding');
  if (contentType === undefined || (encoding !== undefined && encoding !== 'identity')) return passThrough('unexpected-local-answer');
  const legacy = part.document !== 'openapi-index' && negotiateDiscovery(contentType).kind !== 'aggregated';
  let body: Buffer | undefined;
  try {
    body = legacy ? mergedLegacyBody(pathOf(request.path), contentType, local.body, part) : mergedBody(contentType, local.body, part, request.path);
  } catch {
    body = undefined;
  }
  if (body === undefined) return passThrough('unexpected-local-answer');
  const kept = [...local.headers].filter(([name]) => !REPLACED_HEADERS.has(name)).flatMap(([name, values]) => values.map((v): [string, string] => [name, v]));
  // Legacy answers carry no ETag (kube-apiserver sends none with them) and are never 304.
  if (legacy) return withGzip(request, { status: 200, headers: [...kept, ['content-type', contentType]], body, document: request.document });
  // Without the apiserver's ETag, the local body's digest stands for it (as in the document filter).
  const localEtag = only(local.headers, 'etag') ?? `"${createHash('sha256').update(local.body).digest('hex')}"`;
  const etag = mergedEtag(localEtag, peerDigest);
  if (etagMatches(request.ifNoneMatch, etag)) return { status: 304, headers: [...kept, ['etag', etag]], body: Buffer.alloc(0), document: request.document };
  return withGzip(request, { status: 200, headers: [...kept, ['content-type', contentType], ['etag', etag]], body, document: request.document });
}

/** The answer gzipped as kube-apiserver would: over the threshold, for a client that accepts gzip. */
function withGzip(request: DiscoveryRequest, reply: DiscoveryReply): DiscoveryReply {
  if (reply.body.length <= GZIP_THRESHOLD_BYTES || !acceptsGzip(request.acceptEncoding)) return reply;
  return {
    ...reply,
    body: gzipSync(reply.body, { level: GZIP_LEVEL }),
    headers: [...reply.headers, ['content-encoding', 'gzip'], ['vary', 'Accept-Encoding']],
  };
}

/** The path without its query. */
function pathOf(path: string | undefined): string {
  return (path ?? '').split('?', 1)[0] ?? '';
}

/** The local body merged with the part, in the local body's format; undefined for a body the merge does not read whole. */
function mergedBody(contentType: string, body: Buffer, part: PeerPart, path: string | undefined): Buffer | undefined {
  // Aggregated discovery is only ever the answer to /api or /apis.
  if (path !== undefined && mergedDocumentOf(path) !== part.document) return undefined;
  if (part.document === 'openapi-index') {
    if (!/^application\/json\s*(;|$)/i.test(contentType)) return undefined;
    const dropped: DroppedOpenApiIndexEntry[] = [];
    const index = parseOpenApiV3Index(JSON.parse(body.toString('utf8')), dropped);
    // An entry the model cannot carry would be lost: the local answer goes through instead.
    if (dropped.length > 0) return undefined;
    return Buffer.from(goJson(mergeOpenApi(index, part)), 'utf8');
  }
  const format = negotiateDiscovery(contentType);
  if (format.kind !== 'aggregated') return undefined;
  const dropped: DroppedDiscoveryEntry[] = [];
  const document = part.document === 'core-discovery' ? '/api' : '/apis';
  const list = format.format === 'json' ? parseAggregatedDiscovery(JSON.parse(body.toString('utf8')), dropped, document) : decodeAggregatedProtobuf(body);
  if (dropped.length > 0) return undefined;
  const merged = mergeAggregated(list, part);
  return format.format === 'json' ? Buffer.from(goJson(goOrderedList(merged)), 'utf8') : encodeAggregatedProtobuf(merged);
}

function only(headers: ReadonlyMap<string, readonly string[]>, name: string): string | undefined {
  const values = headers.get(name);
  return values?.length === 1 ? values[0] : undefined;
}

function acceptsGzip(acceptEncoding: string | undefined): boolean {
  return (acceptEncoding ?? '').split(',').some((coding) => {
    const [name = '', ...params] = coding.split(';').map((s) => s.trim().toLowerCase());
    return name === 'gzip' && !params.some((p) => /^q=0(\.0*)?$/.test(p));
  });
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
