// The ext_proc service (envoy.service.ext_proc.v3.ExternalProcessor) the
// sidecars call for client-certificate requests and for aggregated discovery
// (see src/translator/extProc.ts for when).
//
// One gRPC stream per HTTP request. Request headers get one of:
// - identity: X-Remote-User = CN, one X-Remote-Group per O, from the client
//   certificate Envoy verified and put in x-forwarded-client-cert;
// - pass: no identity to assert (no certificate, or one without a CN);
// - error: a certificate that cannot be trusted as an identity (401, fail
//   closed).
// Every headers answer removes x-forwarded-client-cert and every client-sent
// x-remote-* header (the header_mutation filter already strips those before
// ext_proc runs; this is the second line, as filter order could change).
//
// Aggregated discovery (`/api`, `/apis` on the route marked as discovery) is
// never answered on the request: the local apiserver authenticates and
// authorizes the client first. The request goes on without If-None-Match (so
// the apiserver never answers a 304 about its own document), and on the
// response headers an apiserver 200 (or 304) is replaced by the merged
// document from the injected DiscoveryResponder (or a 304 when the client's
// If-None-Match names the merged ETag): result `discovery`. Any other status
// (401, 403, 5xx) reaches the client untouched; a broken responder gives 503.
//
// Never logged: certificates (PEM), tokens, header values other than the path.
import * as grpc from '@grpc/grpc-js';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { HeaderValueOption } from '../generated/envoy/config/core/v3/HeaderValueOption.js';
import type { ExternalProcessorHandlers } from '../generated/envoy/service/ext_proc/v3/ExternalProcessor.js';
import type { HeaderMutation } from '../generated/envoy/service/ext_proc/v3/HeaderMutation.js';
import type { HttpHeaders__Output } from '../generated/envoy/service/ext_proc/v3/HttpHeaders.js';
import type { ProcessingRequest__Output } from '../generated/envoy/service/ext_proc/v3/ProcessingRequest.js';
import type { ProcessingResponse } from '../generated/envoy/service/ext_proc/v3/ProcessingResponse.js';
import type { StatusCode } from '../generated/envoy/type/v3/StatusCode.js';
import { identityFromXfcc, type Identity, type IdentityResult } from '../identity/identity.js';

/** Distinct client certificates whose identity is remembered. */
const IDENTITY_CACHE_SIZE = 4096;
import type { Metrics } from '../metrics.js';
import { EXT_PROC_DISCOVERY_METADATA, EXT_PROC_NODE_METADATA } from '../translator/names.js';
import { envoyGrpc } from '../xds/protos.js';
import { failureStatus } from '../model/status.js';

export interface DiscoveryRequest {
  /** The request path, query included, as Envoy routed it. */
  path: string;
  accept?: string;
  ifNoneMatch?: string;
}

export interface DiscoveryAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Answers an authorized discovery request for a sidecar's node, or undefined to leave the local apiserver's answer. */
export type DiscoveryResponder = (node: string, request: DiscoveryRequest) => DiscoveryAnswer | undefined;

export type ExtProcResult = 'identity' | 'discovery' | 'pass' | 'error';

export interface ExtProcServerOptions {
  logger: Logger;
  metrics: Metrics;
  discovery?: DiscoveryResponder;
  /** Milliseconds, monotonic; performance.now by default. */
  clock?: () => number;
}

export const XFCC_HEADER = 'x-forwarded-client-cert';
export const REMOTE_USER_HEADER = 'x-remote-user';
export const REMOTE_GROUP_HEADER = 'x-remote-group';
const REMOTE_PREFIX = 'x-remote-';

/** Response code details of mvproxy's own immediate responses (never Envoy's `ext_proc_error...`). */
export const DETAILS = {
  rejected: 'mvproxy_client_certificate_rejected',
  discovery: 'mvproxy_merged_discovery',
  discoveryError: 'mvproxy_discovery_error',
} as const;

/** Paths of the documents answered merged: /api, /apis and the OpenAPI v3 index /openapi/v3 (trailing slash, query allowed). */
const DISCOVERY_PATH = /^\/(?:apis?|openapi\/v3)\/?(?:\?.*)?$/;

/** Statuses of the local apiserver that mean the client may read discovery (304: it had the apiserver's ETag). */
const AUTHORIZED_STATUSES: ReadonlySet<string> = new Set(['200', '304']);

const IF_NONE_MATCH = 'if-none-match';

/** Headers an immediate response must not set itself (Envoy frames the body). */
const FRAMING_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade']);

/** Request headers by lowercase name; repeated headers keep every value in order. */
type Headers = Map<string, string[]>;

export interface Decision {
  result: ExtProcResult;
  response: ProcessingResponse;
}

/** What one stream remembers between its request and response headers. */
export interface StreamState {
  /** Set on the request headers of an aggregated discovery request. */
  discovery?: DiscoveryRequest;
}

export class ExtProcServer {
  private readonly log: Logger;
  private readonly identityCache: Map<string, IdentityResult>;
  private readonly metrics: Metrics;
  private readonly discovery: DiscoveryResponder | undefined;
  private readonly clock: () => number;

  constructor(opts: ExtProcServerOptions) {
    this.log = opts.logger.child({ component: 'ext_proc' });
    this.identityCache = new Map();
    this.metrics = opts.metrics;
    this.discovery = opts.discovery;
    this.clock = opts.clock ?? (() => performance.now());
  }

  /** Registers the ExternalProcessor service on a gRPC server (which may host ADS too). */
  addToServer(server: grpc.Server): void {
    const handlers: ExternalProcessorHandlers = {
      Process: (call) => this.openStream(call),
    };
    server.addService(envoyGrpc().envoy.service.ext_proc.v3.ExternalProcessor.service, handlers);
  }

  private openStream(call: grpc.ServerDuplexStream<ProcessingRequest__Output, ProcessingResponse>): void {
    const node = firstMetadata(call.metadata, EXT_PROC_NODE_METADATA) ?? '';
    const discoveryRoute = firstMetadata(call.metadata, EXT_PROC_DISCOVERY_METADATA) === 'true';
    const state: StreamState = {};
    let closed = false;
    const fail = (code: grpc.status, details: string): void => {
      if (closed) return;
      closed = true;
      call.emit('error', Object.assign(new Error(details), { code, details }));
    };
    call.on('data', (message: ProcessingRequest__Output) => {
      if (closed) return;
      let response: ProcessingResponse | undefined;
      try {
        response = this.process(node, discoveryRoute, message, state);
      } catch (err) {
        // A bug here must not pass a certificate request through unauthenticated: end the stream, Envoy fails closed.
        this.log.error({ err, node }, 'ext_proc request failed');
        this.metrics.extProcRequests.inc({ result: 'error' });
        fail(grpc.status.INTERNAL, 'mvproxy could not process the request');
        return;
      }
      if (response === undefined) {
        this.log.warn({ node }, 'ext_proc message of an unknown kind');
        this.metrics.extProcRequests.inc({ result: 'error' });
        fail(grpc.status.UNIMPLEMENTED, 'mvproxy does not handle this ext_proc message');
        return;
      }
      try {
        call.write(response);
      } catch (err) {
        this.log.debug({ err, node }, 'ext_proc stream closed before the answer');
      }
    });
    call.on('end', () => {
      if (closed) return;
      closed = true;
      try {
        call.end();
      } catch {
        // already gone
      }
    });
    call.on('error', (err: Error) => {
      closed = true;
      this.log.debug({ err: err.message, node }, 'ext_proc stream error');
    });
    call.on('cancelled', () => {
      closed = true;
    });
  }

  /**
   * The answer to one message of a stream, or undefined for a message of no
   * known kind. `state` carries what a discovery stream's request headers
   * leave for its response headers. Messages Envoy should not send with our
   * processing modes (bodies, trailers) get a pass-through answer of their kind.
   */
  process(node: string, discoveryRoute: boolean, message: ProcessingRequest__Output, state: StreamState = {}): ProcessingResponse | undefined {
    if (message.request_headers) {
      const started = this.clock();
      const decision = this.decide(node, discoveryRoute, message.request_headers, state);
      this.metrics.extProcRequests.inc({ result: decision.result });
      this.metrics.extProcDuration.observe(Math.max(0, this.clock() - started) / 1000);
      return decision.response;
    }
    if (message.response_headers) {
      const started = this.clock();
      const decision = this.decideResponse(node, message.response_headers, state);
      if (decision === undefined) return { response_headers: {} };
      this.metrics.extProcRequests.inc({ result: decision.result });
      this.metrics.extProcDuration.observe(Math.max(0, this.clock() - started) / 1000);
      return decision.response;
    }
    if (message.request_body) return { request_body: {} };
    if (message.response_body) return { response_body: {} };
    if (message.request_trailers) return { request_trailers: {} };
    if (message.response_trailers) return { response_trailers: {} };
    return undefined;
  }

  /**
   * The identity an XFCC value asserts. Parsing a certificate costs far more
   * than the rest of a call, and the same clients (kubelets, controllers) send
   * the same certificate on every request, so results are kept per value.
   */
  private identityOf(xfcc: string | undefined): IdentityResult {
    if (xfcc === undefined) return identityFromXfcc(undefined);
    const cached = this.identityCache.get(xfcc);
    if (cached) return cached;
    const identity = identityFromXfcc(xfcc);
    if (this.identityCache.size >= IDENTITY_CACHE_SIZE) {
      // Evict the oldest entry (Map keeps insertion order).
      const oldest = this.identityCache.keys().next().value;
      if (oldest !== undefined) this.identityCache.delete(oldest);
    }
    this.identityCache.set(xfcc, identity);
    return identity;
  }

  /** What to do with one request's headers. */
  decide(node: string, discoveryRoute: boolean, request: HttpHeaders__Output, state: StreamState = {}): Decision {
    const headers = requestHeaders(request);
    const path = headers.get(':path')?.[0] ?? '';
    const xfcc = headers.get(XFCC_HEADER);

    // More than one XFCC cannot come from Envoy's SANITIZE_SET.
    const identity = this.identityOf(xfcc === undefined ? undefined : xfcc.length === 1 ? xfcc[0] : ',');
    if (identity.kind === 'rejected') {
      this.log.warn({ node, path, reason: identity.reason }, 'client certificate rejected');
      return { result: 'error', response: { immediate_response: unauthorized() } };
    }
    const asserted = identity.kind === 'identity' ? identity.identity : undefined;
    if (asserted) this.log.debug({ node, path, user: asserted.user, groups: asserted.groups }, 'client certificate identity');

    const mutation = identityMutation(headers, asserted);
    if (discoveryRoute && this.discovery && DISCOVERY_PATH.test(path)) {
      // Answered (maybe) on the response headers, once the apiserver has said 200.
      const discovery: DiscoveryRequest = { path };
      const accept = headers.get('accept');
      if (accept !== undefined) discovery.accept = accept.join(', ');
      const ifNoneMatch = headers.get(IF_NONE_MATCH);
      if (ifNoneMatch !== undefined) discovery.ifNoneMatch = ifNoneMatch.join(', ');
      state.discovery = discovery;
      // Our 304 is decided against the merged ETag; the apiserver must answer in full.
      mutation.remove_headers = [...(mutation.remove_headers ?? []), IF_NONE_MATCH].sort();
    }

    return {
      result: asserted ? 'identity' : 'pass',
      response: { request_headers: { response: { header_mutation: mutation, clear_route_cache: false } } },
    };
  }

  /**
   * What to do with the local apiserver's response headers: undefined to let
   * them through (not a discovery stream, the apiserver refused, the
   * responder has no answer), else the merged document or an error.
   */
  decideResponse(node: string, response: HttpHeaders__Output, state: StreamState): Decision | undefined {
    const request = state.discovery;
    if (request === undefined || this.discovery === undefined) return undefined;
    const status = requestHeaders(response).get(':status')?.[0] ?? '';
    // 401, 403, 5xx...: the client may not read discovery, or the apiserver failed; it says so itself.
    if (!AUTHORIZED_STATUSES.has(status)) return undefined;
    let answer: DiscoveryAnswer | undefined;
    try {
      answer = this.discovery(node, request);
    } catch (err) {
      this.log.error({ err, node, path: request.path }, 'discovery responder failed');
      return { result: 'error', response: { immediate_response: discoveryUnavailable() } };
    }
    if (answer === undefined) return undefined;
    if (!Number.isInteger(answer.status) || answer.status < 200 || answer.status > 599) {
      this.log.error({ node, path: request.path, status: answer.status }, 'discovery responder gave an invalid status');
      return { result: 'error', response: { immediate_response: discoveryUnavailable() } };
    }
    return { result: 'discovery', response: { immediate_response: discoveryAnswer(answer) } };
  }
}

function firstMetadata(metadata: grpc.Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : value.toString('utf8');
}

function requestHeaders(message: HttpHeaders__Output): Headers {
  const headers: Headers = new Map();
  for (const header of message.headers?.headers ?? []) {
    const key = (header.key ?? '').toLowerCase();
    // Envoy sends raw_value (bytes); older versions sent value.
    const value = header.raw_value !== undefined && header.raw_value.length > 0 ? header.raw_value.toString('utf8') : header.value ?? '';
    const values = headers.get(key) ?? [];
    values.push(value);
    headers.set(key, values);
  }
  return headers;
}

function set(key: string, value: string, appendAction: 'OVERWRITE_IF_EXISTS_OR_ADD' | 'APPEND_IF_EXISTS_OR_ADD'): HeaderValueOption {
  return {
    header: { key, raw_value: Buffer.from(value, 'utf8') },
    // Envoy's ext_proc reads the (deprecated) append flag, not append_action
    // (checked with Envoy 1.40: without it every value overwrites the last).
    append: { value: appendAction === 'APPEND_IF_EXISTS_OR_ADD' },
    append_action: appendAction,
  };
}

/**
 * Sets the identity (first value overwrites whatever is there, the others
 * append) and removes XFCC and every other x-remote-* header. A header that
 * is set is never also in remove_headers, so the result does not depend on
 * the order Envoy applies the two lists in.
 */
export function identityMutation(headers: ReadonlyMap<string, readonly string[]>, identity: Identity | undefined): HeaderMutation {
  const setHeaders: HeaderValueOption[] = [];
  if (identity) {
    setHeaders.push(set(REMOTE_USER_HEADER, identity.user, 'OVERWRITE_IF_EXISTS_OR_ADD'));
    identity.groups.forEach((group, i) =>
      setHeaders.push(set(REMOTE_GROUP_HEADER, group, i === 0 ? 'OVERWRITE_IF_EXISTS_OR_ADD' : 'APPEND_IF_EXISTS_OR_ADD')),
    );
  }
  const setNames = new Set(setHeaders.map((h) => h.header?.key ?? ''));
  const remove = new Set<string>([XFCC_HEADER]);
  for (const name of headers.keys()) if (name.startsWith(REMOTE_PREFIX) && !setNames.has(name)) remove.add(name);
  // Without identity nothing is set, so these go even when the client did not send them.
  for (const name of [REMOTE_USER_HEADER, REMOTE_GROUP_HEADER]) if (!setNames.has(name)) remove.add(name);
  const mutation: HeaderMutation = { remove_headers: [...remove].sort() };
  if (setHeaders.length > 0) mutation.set_headers = setHeaders;
  return mutation;
}

function status(code: number, reason: string, message: string): Buffer {
  return Buffer.from(JSON.stringify(failureStatus(code, reason, message)));
}

/** What kube-apiserver answers when authentication fails. */
function unauthorized(): ProcessingResponse['immediate_response'] {
  return {
    status: { code: 401 },
    headers: { set_headers: [set('content-type', 'application/json', 'OVERWRITE_IF_EXISTS_OR_ADD')] },
    body: status(401, 'Unauthorized', 'Unauthorized'),
    details: DETAILS.rejected,
  };
}

function discoveryUnavailable(): ProcessingResponse['immediate_response'] {
  return {
    status: { code: 503 },
    headers: {
      set_headers: [
        set('content-type', 'application/json', 'OVERWRITE_IF_EXISTS_OR_ADD'),
        set('retry-after', '1', 'OVERWRITE_IF_EXISTS_OR_ADD'),
      ],
    },
    body: status(503, 'ServiceUnavailable', 'the server is currently unable to handle the request: merged discovery is unavailable'),
    details: DETAILS.discoveryError,
  };
}

function discoveryAnswer(answer: DiscoveryAnswer): ProcessingResponse['immediate_response'] {
  const setHeaders = Object.entries(answer.headers)
    .map(([key, value]) => [key.toLowerCase(), value] as const)
    .filter(([key]) => !key.startsWith(':') && !FRAMING_HEADERS.has(key))
    .map(([key, value]) => set(key, value, 'OVERWRITE_IF_EXISTS_OR_ADD'));
  return {
    // HttpStatus.code is Envoy's StatusCode enum, whose numbers are the HTTP codes.
    status: { code: answer.status as StatusCode },
    headers: { set_headers: setHeaders },
    body: answer.body,
    details: DETAILS.discovery,
  };
}
