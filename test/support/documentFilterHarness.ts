// The document filter (envoy/filters, the document module) through the
// proxy-wasm host shim: a plugin configured with a peer part
// (src/xds/documentSet.ts) and exchanges as Envoy drives them: request
// headers to the local apiserver, its response headers, then its body in
// chunks, with Envoy's rules for what goes downstream (a paused header map
// goes with the first chunk the filter continues; a chunk the filter stops
// without buffering goes nowhere). And the merge rule in objects
// (src/discovery/peerPart.ts), to compare the filter's bytes with.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

import type { APIGroupDiscovery, APIGroupDiscoveryList } from '../../src/model/discovery.js';
import type { AggregatedPeerPart, OpenApiPeerPart, PeerPart } from '../../src/discovery/peerPart.js';
import { mergedEtag } from '../../src/discovery/peerPart.js';
import { renderAggregated } from '../../src/discovery/render.js';
import { DOCUMENT_FILTER_ROOT_ID } from '../../src/translator/names.js';
import { decodeDocumentSet, documentSetDigest, encodeDocumentSet } from '../../src/xds/documentSet.js';
import type { LegacyNode } from './legacyBodies.js';
import { documentModule } from './identityFilterHarness.js';
import { ProxyWasmHost, type HeaderList, type HostOptions, type RequestResult } from './proxyWasmHost.js';

export { AGGREGATED_DISCOVERY_JSON as AGG_JSON, AGGREGATED_DISCOVERY_PROTOBUF as AGG_PROTOBUF } from '../../src/model/discovery.js';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_PROTOBUF } from '../../src/model/discovery.js';

export const LOCAL_ETAG = '"10CA1E7A6"';

export const REQUEST: HeaderList = [
  [':method', 'GET'],
  [':path', '/apis'],
  [':authority', 'kas-a'],
  ['accept', `${AGGREGATED_DISCOVERY_JSON},application/json`],
];

/** The local apiserver's 200 headers for a body (Content-Length its size); `etag` null: none. */
export function ok(body: Buffer, contentType: string = AGGREGATED_DISCOVERY_JSON, etag: string | null = LOCAL_ETAG): HeaderList {
  return [
    [':status', '200'],
    ['content-type', contentType],
    ['content-length', String(body.length)],
    ...(etag === null ? [] : ([['etag', etag]] as HeaderList)),
    ['audit-id', 'audit-1'],
    ['x-kubernetes-pf-flowschema-uid', 'fs-1'],
    ['x-kubernetes-pf-prioritylevel-uid', 'pl-1'],
    ['warning', '299 - "first"'],
    ['warning', '299 - "second"'],
    ['cache-control', 'public'],
    ['vary', 'Accept'],
  ];
}

/** The set the filter reads for a part: the control plane's encoder (src/xds/documentSet.ts). */
export const encodeSet = encodeDocumentSet;
export const setDigest = documentSetDigest;

/** The nodes of the set `encodeSet` writes for an aggregated part (their legacy fragments are what the filter adds). */
export function setNodes(part: AggregatedPeerPart): LegacyNode[] {
  return decodeDocumentSet(encodeDocumentSet(part))?.groups ?? [];
}

/** A VM of the document module with one document plugin holding `part` (or raw configuration bytes). */
export function documentHost(part: PeerPart | Uint8Array, opts: HostOptions = {}): ProxyWasmHost {
  const configuration = part instanceof Uint8Array ? part : encodeSet(part);
  return ProxyWasmHost.load(documentModule(), { rootId: DOCUMENT_FILTER_ROOT_ID, configuration, ...opts });
}

/** What the client got. */
export interface Delivered {
  request: RequestResult;
  status: number;
  headers: HeaderList;
  body: Buffer;
  /** A local reply (proxy_send_local_response) answered. */
  localReply: boolean;
  /** The body callbacks' returns, in order. */
  bodyActions: number[];
}

/** One request through a fresh stream: request headers, the local answer's headers, then its body in chunks of `chunkSize`. */
export function exchange(host: ProxyWasmHost, request: HeaderList, response: HeaderList, body: Buffer = Buffer.alloc(0), chunkSize = 16 * 1024): Delivered {
  const stream = host.openStream();
  try {
    const requestResult = host.sendRequestHeaders(stream, request);
    const headersResult = host.sendResponseHeaders(stream, response, body.length === 0);
    if (headersResult.localResponse !== undefined) {
      return {
        request: requestResult,
        status: headersResult.localResponse.status,
        headers: headersResult.localResponse.headers,
        body: headersResult.localResponseBody ?? Buffer.alloc(0),
        localReply: true,
        bodyActions: [],
      };
    }
    const sent: Buffer[] = [];
    const actions: number[] = [];
    let headers = headersResult.headers;
    for (let at = 0; at < body.length; at += chunkSize) {
      const chunk = body.subarray(at, Math.min(at + chunkSize, body.length));
      const result = host.sendResponseBody(stream, chunk, at + chunkSize >= body.length);
      actions.push(result.action);
      assert.notEqual(result.action, 1, 'the filter never asks Envoy to buffer a body');
      if (result.action === 0) sent.push(result.chunk);
      else assert.equal(result.chunk.length, 0, 'a chunk the filter stops without buffering is emptied');
      headers = result.headers;
    }
    const status = Number(headers.find(([k]) => k === ':status')?.[1]);
    return { request: requestResult, status, headers, body: Buffer.concat(sent), localReply: false, bodyActions: actions };
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

export function header(headers: HeaderList, name: string): string | undefined {
  return valuesOf(headers, name)[0];
}

// ---------------------------------------------------------------------------
// The merge rule in objects (src/discovery/peerPart.ts), for the expectations

/** The local list with the peer part's entries it lacks, at each level (subresources of a local resource included), after the local entries of that level. */
export function mergedByRule(local: APIGroupDiscoveryList, part: AggregatedPeerPart): APIGroupDiscoveryList {
  const items: APIGroupDiscovery[] = local.items.map((group) => {
    const peer = part.groups.find((g) => (g.metadata.name ?? '') === (group.metadata.name ?? ''));
    if (!peer) return group;
    const versions = group.versions.map((version) => {
      const peerVersion = peer.versions.find((v) => v.version === version.version);
      if (!peerVersion) return version;
      const names = new Set(version.resources.map((r) => r.resource));
      const resources = version.resources.map((local) => {
        const peerResource = peerVersion.resources.find((r) => r.resource === local.resource);
        const subNames = new Set((local.subresources ?? []).map((sub) => sub.subresource));
        const added = (peerResource?.subresources ?? []).filter((sub) => !subNames.has(sub.subresource));
        return added.length === 0 ? local : { ...local, subresources: [...(local.subresources ?? []), ...added] };
      });
      return { ...version, resources: [...resources, ...peerVersion.resources.filter((r) => !names.has(r.resource))] };
    });
    const names = new Set(group.versions.map((v) => v.version));
    return { ...group, versions: [...versions, ...peer.versions.filter((v) => !names.has(v.version))] };
  });
  const names = new Set(local.items.map((g) => g.metadata.name ?? ''));
  return { ...local, items: [...items, ...part.groups.filter((g) => !names.has(g.metadata.name ?? ''))] };
}

/** The OpenAPI index merged by the rule: local paths plus the peer part's it lacks, keys sorted. */
export function mergedIndexByRule(local: { paths: Record<string, unknown> }, part: OpenApiPeerPart): { paths: Record<string, unknown> } {
  const paths = { ...part.paths, ...local.paths };
  return { paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) };
}

/** kube-apiserver's bodies of a list: JSON and protobuf. */
export function localBodies(list: APIGroupDiscoveryList): { json: Buffer; protobuf: Buffer } {
  return { json: renderAggregated(list, 'json').body, protobuf: renderAggregated(list, 'protobuf').body };
}

/** The ETag the filter gives an answer merged from a local ETag and this part. */
export function expectedEtag(localEtag: string, part: PeerPart): string {
  return mergedEtag(localEtag, setDigest(part));
}

/** The local ETag the filter uses for a 200 without one: the SHA-256 of the body, quoted. */
export function bodyEtag(body: Buffer): string {
  return `"${createHash('sha256').update(body).digest('hex')}"`;
}

export { AGGREGATED_DISCOVERY_PROTOBUF };
