// The document filter (envoy/filters, root_id DOCUMENT_FILTER_ROOT_ID)
// through the proxy-wasm host shim: a plugin
// configured with a document set (src/xds/documentSet.ts), and exchanges as
// Envoy drives them (request headers to the local apiserver, its response
// headers back).
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_PROTOBUF } from '../../src/model/discovery.js';
import { DOCUMENT_FILTER_ROOT_ID } from '../../src/translator/names.js';
import { encodeDocumentSet, type DocumentKind, type DocumentVariant } from '../../src/xds/documentSet.js';
import { filterModule } from './identityFilterHarness.js';
import { ProxyWasmHost, type HeaderList, type RequestResult, type ResponseResult } from './proxyWasmHost.js';

export { AGGREGATED_DISCOVERY_JSON as AGG_JSON, AGGREGATED_DISCOVERY_PROTOBUF as AGG_PROTOBUF } from '../../src/model/discovery.js';

export const ETAG = '"0123456789ABCDEF"';
export const OTHER_ETAG = '"FEDCBA9876543210"';
/** The local apiserver's own ETag for its document (a set may hold it to revalidate with). */
export const LOCAL_ETAG = '"10CA1E7A6"';
export const JSON_BODY = Buffer.from('{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[{"merged":true}]}\n');
export const PROTOBUF_BODY = Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x0a, 0x01, 0xff, 0x00, 0x10]);
/** Stands for a gzip body: the filter never looks inside. */
export const GZIP_BODY = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x01, 0x02]);
export const OPENAPI_BODY = Buffer.from('{"paths":{"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=AB"}}}');

export const REQUEST: HeaderList = [
  [':method', 'GET'],
  [':path', '/apis'],
  [':authority', 'kas-a'],
  ['accept', `${AGGREGATED_DISCOVERY_JSON},application/json`],
];

export function ok(contentType: string = AGGREGATED_DISCOVERY_JSON): HeaderList {
  return [
    [':status', '200'],
    ['content-type', contentType],
    ['content-length', '1234'],
  ];
}

export function jsonVariant(overrides: Partial<DocumentVariant> = {}): DocumentVariant {
  return { format: 'aggregated-json', encoding: 'identity', etag: ETAG, contentType: AGGREGATED_DISCOVERY_JSON, body: JSON_BODY, ...overrides };
}

export function protobufVariant(overrides: Partial<DocumentVariant> = {}): DocumentVariant {
  return { format: 'aggregated-protobuf', encoding: 'identity', etag: ETAG, contentType: AGGREGATED_DISCOVERY_PROTOBUF, body: PROTOBUF_BODY, ...overrides };
}

export function openapiVariant(overrides: Partial<DocumentVariant> = {}): DocumentVariant {
  return { format: 'json', encoding: 'identity', etag: ETAG, contentType: 'application/json', body: OPENAPI_BODY, ...overrides };
}

/** The usual group discovery set: JSON and protobuf, identity. */
export function groupSet(variants: DocumentVariant[] = [jsonVariant(), protobufVariant()], localEtag?: string): Buffer {
  return encodeDocumentSet('group-discovery', variants, localEtag);
}

/** A VM with one discovery plugin configured with `configuration` (default: groupSet()). */
export function discoveryHost(configuration: Uint8Array = groupSet()): ProxyWasmHost {
  return ProxyWasmHost.load(filterModule(), { rootId: DOCUMENT_FILTER_ROOT_ID, configuration });
}

/** Adds a discovery plugin context for `kind` to a VM; returns its id. */
export function addDiscoveryPlugin(host: ProxyWasmHost, kind: DocumentKind, variants: DocumentVariant[]): number {
  return host.addPluginContext(encodeDocumentSet(kind, variants), DOCUMENT_FILTER_ROOT_ID);
}

export interface Exchange {
  request: RequestResult;
  response: ResponseResult;
}

/** One request through a fresh stream: request headers, the local apiserver's response headers, end. */
export function exchange(host: ProxyWasmHost, request: HeaderList = REQUEST, response: HeaderList = ok(), root?: number): Exchange {
  const stream = root === undefined ? host.openStream() : host.openStream(root);
  try {
    const requestResult = host.sendRequestHeaders(stream, request);
    return { request: requestResult, response: host.sendResponseHeaders(stream, response) };
  } finally {
    host.closeStream(stream);
  }
}

export function withHeaders(extra: HeaderList, base: HeaderList = REQUEST): HeaderList {
  return [...base, ...extra];
}

export function valuesOf(headers: HeaderList, name: string): string[] {
  return headers.filter(([k]) => k.toLowerCase() === name).map(([, v]) => v);
}

/** Asserts-free summary of a replaced answer: status, headers, body bytes; undefined if the local answer went through. */
export function answer(result: ResponseResult): { status: number; headers: HeaderList; body: Buffer } | undefined {
  if (result.localResponse === undefined) return undefined;
  return { status: result.localResponse.status, headers: result.localResponse.headers, body: result.localResponseBody ?? Buffer.alloc(0) };
}
