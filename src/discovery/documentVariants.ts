// Every form a sidecar may answer a merged document in, rendered ahead of the
// request so that the sidecar serves it from memory (translator/documentFilters.ts):
// aggregated discovery as JSON and as protobuf, the OpenAPI v3 index as JSON,
// each also gzipped when kube-apiserver would gzip it. Which one a request
// gets is decided in the sidecar, from the format the local apiserver
// negotiated and the client's Accept-Encoding. Pure.
import { gzipSync } from 'node:zlib';
import { isEtagValue } from '../model/discovery.js';
import type { MergedDocument } from '../model/requestInfo.js';
import type { MergedDiscovery } from './merge.js';
import { renderOpenApiIndex } from './openapi.js';
import { renderAggregatedCached } from './render.js';

export interface DocumentVariant {
  format: 'aggregated-json' | 'aggregated-protobuf' | 'json';
  encoding: 'identity' | 'gzip';
  /** Quoted, as sent; the same for every variant of a document (upstream hashes the JSON). */
  etag: string;
  contentType: string;
  body: Buffer;
}

/** A document's variants, with a key that changes exactly when they or the local ETag do (rendering them again is not needed to compare). */
export interface RenderedDocumentVariants {
  key: string;
  variants: () => DocumentVariant[];
  /** The ETag the local apiserver sent with its own version of the document, when it sent a usable one. */
  localEtag?: string;
}

/**
 * kube-apiserver gzips an answer larger than this when the client accepts gzip
 * (APIResponseCompression; responsewriters' defaultGzipThresholdBytes), at
 * level 1 (defaultGzipContentEncodingLevel).
 */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;
const GZIP_LEVEL = 1;

/** What kube-apiserver sends the OpenAPI v3 index as. */
const OPENAPI_INDEX_CONTENT_TYPE = 'application/json';

/**
 * The merged documents of a sidecar, by document. Empty while its local
 * apiserver's discovery is unknown: a merged document would then miss what
 * the local apiserver serves, so the sidecar keeps what it holds. The
 * OpenAPI index is absent while the local index is unknown.
 */
export function documentVariants(merged: MergedDiscovery): Map<MergedDocument, RenderedDocumentVariants> {
  const documents = new Map<MergedDocument, RenderedDocumentVariants>();
  if (!merged.local) return documents;
  for (const [document, list] of [
    ['core-discovery', merged.core],
    ['group-discovery', merged.groups],
  ] as const) {
    const json = renderAggregatedCached(list, 'json').document;
    const localEtag = merged.local.etags?.[document === 'core-discovery' ? 'core' : 'groups'];
    documents.set(document, {
      key: `${document} ${json.etag} ${localEtag ?? ''}`,
      ...(localEtag !== undefined && isEtagValue(localEtag) ? { localEtag } : {}),
      variants: () => {
        const protobuf = renderAggregatedCached(list, 'protobuf').document;
        return [
          ...withGzip({ format: 'aggregated-json', encoding: 'identity', etag: json.etag, contentType: json.contentType, body: json.body }),
          ...withGzip({ format: 'aggregated-protobuf', encoding: 'identity', etag: protobuf.etag, contentType: protobuf.contentType, body: protobuf.body }),
        ];
      },
    });
  }
  if (merged.openapi) {
    const index = renderOpenApiIndex(merged.openapi).document;
    documents.set('openapi-index', {
      key: `openapi-index ${index.etag}`,
      variants: () => withGzip({ format: 'json', encoding: 'identity', etag: index.etag, contentType: OPENAPI_INDEX_CONTENT_TYPE, body: index.body }),
    });
  }
  return documents;
}

/** The variant, and its gzip form when kube-apiserver would gzip it. */
function withGzip(variant: DocumentVariant): DocumentVariant[] {
  if (variant.body.length <= GZIP_THRESHOLD_BYTES) return [variant];
  return [variant, { ...variant, encoding: 'gzip', body: gzipSync(variant.body, { level: GZIP_LEVEL }) }];
}
