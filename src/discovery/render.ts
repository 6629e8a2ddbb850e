// Serialize aggregated discovery as kube-apiserver writes it: JSON in Go's
// field order and escaping, or protobuf (magic + runtime.Unknown envelope),
// with an ETag that is a hash of the JSON document: the same content gives
// the same ETag, and any change gives a new one.
import { createHash } from 'node:crypto';
import {
  AGGREGATED_DISCOVERY_JSON as AGGREGATED_JSON_CONTENT_TYPE,
  AGGREGATED_DISCOVERY_PROTOBUF as AGGREGATED_PROTOBUF_CONTENT_TYPE,
  type APIGroupDiscoveryList,
} from '../model/discovery.js';
import { goOrderedList } from './goJsonOrder.js';
import { encodeAggregatedProtobuf } from './protobufEncode.js';

export type AggregatedFormat = 'json' | 'protobuf';

export interface RenderedDocument {
  body: Buffer;
  contentType: string;
  /** Quoted, as sent in the ETag header. */
  etag: string;
}

export function renderAggregated(list: APIGroupDiscoveryList, format: AggregatedFormat): RenderedDocument {
  return renderAggregatedCached(list, format).document;
}

// Rendering is memoized per document object and format, and protobuf bodies
// per content (ETag), so a re-merge that produced equal content costs one
// JSON serialization and no protobuf encoding.
const renderedByList = new WeakMap<APIGroupDiscoveryList, Partial<Record<AggregatedFormat, RenderedDocument>>>();
const protobufByEtag = new Map<string, Buffer>();
const PROTOBUF_CACHE_SIZE = 8;

/** renderAggregated, saying whether the rendered document came from the cache. */
export function renderAggregatedCached(list: APIGroupDiscoveryList, format: AggregatedFormat): { document: RenderedDocument; cache: 'hit' | 'miss' } {
  let rendered = renderedByList.get(list);
  if (!rendered) {
    rendered = {};
    renderedByList.set(list, rendered);
  }
  const cached = rendered[format];
  if (cached) return { document: cached, cache: 'hit' };

  const json = rendered.json ?? renderJson(list);
  rendered.json = json;
  if (format === 'json') return { document: json, cache: 'miss' };

  let body = protobufByEtag.get(json.etag);
  if (body) {
    // Most recently used last, so the oldest is evicted first.
    protobufByEtag.delete(json.etag);
  } else {
    body = encodeAggregatedProtobuf(list);
  }
  protobufByEtag.set(json.etag, body);
  while (protobufByEtag.size > PROTOBUF_CACHE_SIZE) protobufByEtag.delete(protobufByEtag.keys().next().value as string);
  const document: RenderedDocument = { body, contentType: AGGREGATED_PROTOBUF_CONTENT_TYPE, etag: json.etag };
  rendered.protobuf = document;
  return { document, cache: 'miss' };
}

function renderJson(list: APIGroupDiscoveryList): RenderedDocument {
  const body = Buffer.from(goJson(goOrderedList(list)), 'utf8');
  return { body, contentType: AGGREGATED_JSON_CONTENT_TYPE, etag: etagOf(body) };
}

/** Upstream: the SHA-512 of the JSON document in upper-case hex, quoted. */
export function etagOf(jsonBody: Buffer): string {
  return `"${createHash('sha512').update(jsonBody).digest('hex').toUpperCase()}"`;
}

/**
 * JSON text as Go's encoding/json Encoder writes it: HTML-sensitive
 * characters and the JavaScript line separators escaped, newline at the end.
 */
export function goJson(value: unknown): string {
  return `${JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}
