// One read of each document a discovery poll asks an apiserver for: `/api`
// and `/apis` with If-None-Match (a 304, or an unchanged ETag or body hash,
// keeps the previous document itself), the OpenAPI v3 index by body hash.
// Every failure is a DiscoverySyncError of its type.
import { createHash } from 'node:crypto';
import { AGGREGATED_DISCOVERY_ACCEPT, isEtagValue, type APIGroupDiscoveryList, type DroppedDiscoveryEntry } from '../model/discovery.js';
import { parseAggregatedDiscovery, type DiscoveryDocument } from '../model/discoveryDocument.js';
import { routableDiscovery } from '../model/routableDiscovery.js';
import { parseOpenApiV3Index, routableOpenApiIndex, type DroppedOpenApiIndexEntry, type OpenApiV3Index } from '../model/openapi.js';
import { HttpTransportError, type HttpResponse, type HttpTransport } from './apiserverHttp.js';
import { errorMessage } from './runtime.js';
import { statusMessageSuffix } from '../model/status.js';

/**
 * The `type` label of apiserver_peer_discovery_sync_errors_total. Upstream
 * writes its values in snake_case (lease_list, hostport_resolution,
 * fetch_discovery); mvproxy's are finer: fetch and timeout (no answer: the
 * apiserver is unreachable), status (an error status), parse (an unreadable
 * body, or a document with malformed entries), too_large (a body over the
 * size limit).
 */
export type DiscoverySyncErrorType = 'fetch' | 'timeout' | 'status' | 'parse' | 'too_large';

export class DiscoverySyncError extends Error {
  constructor(
    readonly type: DiscoverySyncErrorType,
    message: string,
    /** For an unreadable body: its hash, so the same body is reported once. */
    readonly bodyHash?: string,
  ) {
    super(message);
    this.name = 'DiscoverySyncError';
  }
}

/** Whether a failed discovery request got an answer (a status, a body, a body too large) rather than failing on the network. */
export function answered(err: unknown): boolean {
  return err instanceof DiscoverySyncError && (err.type === 'status' || err.type === 'parse' || err.type === 'too_large');
}

/** One discovery document as last read. */
export interface DiscoveryDocumentState {
  etag: string;
  /** The ETag the apiserver sent, when usable (isEtagValue); `etag` may be a hash of the body instead. */
  sentEtag?: string;
  list: APIGroupDiscoveryList;
  /** Entries of this document mvproxy does not route on. */
  dropped: DroppedDiscoveryEntry[];
}

export const OPENAPI_V3_INDEX_PATH = '/openapi/v3';

/** The OpenAPI v3 index as last read. */
export interface OpenApiIndexState {
  /** Hash of the body: the index carries no ETag. */
  hash: string;
  index: OpenApiV3Index;
  /** Entries left out of `index` (parseOpenApiV3Index: not of the index's types). */
  dropped: DroppedOpenApiIndexEntry[];
  /** Entries of `index` never taken from this apiserver as a peer (routableOpenApiIndex); its own clients still get them. */
  notFromPeer: DroppedOpenApiIndexEntry[];
}

/** Returns `previous` itself when the document did not change. */
export async function readDiscoveryDocument(
  transport: HttpTransport,
  path: DiscoveryDocument,
  previous: DiscoveryDocumentState | undefined,
  signal: AbortSignal,
): Promise<DiscoveryDocumentState> {
  const headers: Record<string, string> = { Accept: AGGREGATED_DISCOVERY_ACCEPT };
  if (previous) headers['If-None-Match'] = previous.etag;
  const response = await get(transport, path, headers, signal);
  if (response.status === 304) {
    if (previous) return previous;
    throw new DiscoverySyncError('status', `GET ${path}: 304 Not Modified without a previous document`);
  }
  if (response.status < 200 || response.status > 299) {
    throw new DiscoverySyncError('status', `GET ${path}: HTTP ${response.status}${statusMessageSuffix(response.body)}`);
  }
  // Without an ETag (or if the server ignores If-None-Match) the body's hash tells change apart.
  const etag = response.etag ?? `"sha256:${createHash('sha256').update(response.body).digest('hex')}"`;
  if (previous && previous.etag === etag) return previous;
  const dropped: DroppedDiscoveryEntry[] = [];
  let list: APIGroupDiscoveryList;
  try {
    list = parseAggregatedDiscovery(JSON.parse(response.body), dropped, path);
  } catch (err) {
    throw new DiscoverySyncError('parse', `GET ${path}: ${errorMessage(err)}`, `sha256:${createHash('sha256').update(response.body).digest('hex')}`);
  }
  dropped.push(...routableDiscovery(list, path).dropped);
  return { etag, list, dropped, ...(response.etag !== undefined && isEtagValue(response.etag) ? { sentEtag: response.etag } : {}) };
}

/** Returns `previous` itself when the index did not change. */
export async function readOpenApiIndex(transport: HttpTransport, previous: OpenApiIndexState | undefined, signal: AbortSignal): Promise<OpenApiIndexState> {
  const response = await get(transport, OPENAPI_V3_INDEX_PATH, { Accept: 'application/json' }, signal);
  if (response.status !== 200)
    throw new DiscoverySyncError('status', `GET ${OPENAPI_V3_INDEX_PATH}: HTTP ${response.status}${statusMessageSuffix(response.body)}`);
  const hash = createHash('sha256').update(response.body).digest('hex');
  if (previous?.hash === hash) return previous;
  const dropped: DroppedOpenApiIndexEntry[] = [];
  let index: OpenApiV3Index;
  try {
    index = parseOpenApiV3Index(JSON.parse(response.body), dropped);
  } catch (err) {
    throw new DiscoverySyncError('parse', `GET ${OPENAPI_V3_INDEX_PATH}: ${errorMessage(err)}`, `sha256:${hash}`);
  }
  return { hash, index, dropped, notFromPeer: routableOpenApiIndex(index).dropped };
}

/** A GET whose transport failures are sync errors of their kind. */
async function get(transport: HttpTransport, path: string, headers: Record<string, string>, signal: AbortSignal): Promise<HttpResponse> {
  try {
    return await transport.get(path, headers, signal);
  } catch (err) {
    throw new DiscoverySyncError(err instanceof HttpTransportError ? err.kind : 'fetch', errorMessage(err));
  }
}
