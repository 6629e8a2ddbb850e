// The ext_proc service (envoy.service.ext_proc.v3.ExternalProcessor) the
// sidecars call for a merged document (aggregated discovery, the OpenAPI v3
// index) only when it is over the push budget (DOCUMENT_PUSH_BUDGET_BYTES,
// src/translator/documentFilters.ts): the document filters inside Envoy
// answer every other merged-document request, and the routes of an
// oversized document send it here instead (src/translator/extProc.ts).
// Nothing else a request needs comes from here: identity is computed inside
// Envoy (the identity filter, envoy/filters), and when this service is slow
// or away Envoy lets the local apiserver's own document through
// (failure_mode_allow).
//
// One gRPC stream per HTTP request. The route tells which document the
// request is for (gRPC metadata). On the request headers the client's Accept,
// If-None-Match and Accept-Encoding are remembered, and If-None-Match and
// Accept-Encoding are held back, so the local apiserver answers in full and
// uncompressed. On the response headers the local apiserver has
// authenticated and authorized the client: only its 200 is kept for merging
// (any other status, 401, 403, 5xx, reaches the client untouched). Its body
// comes buffered (BUFFERED_PARTIAL, translator/extProc.ts): the whole of it is
// merged with the sidecar's peer part by the merge rule, in the format the
// apiserver answered in, and replaces the answer (or a 304 when the client's
// If-None-Match names the merged ETag), keeping the apiserver's headers:
// result `discovery`. A body Envoy could not buffer whole, or anything the
// merge does not expect, lets the local answer through (`pass`).
//
// Never logged: header values other than the document kind.
import * as grpc from '@grpc/grpc-js';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../util/log.js';
import type { HeaderValueOption } from '../generated/envoy/config/core/v3/HeaderValueOption.js';
import type { ExternalProcessorHandlers } from '../generated/envoy/service/ext_proc/v3/ExternalProcessor.js';
import type { HttpHeaders__Output } from '../generated/envoy/service/ext_proc/v3/HttpHeaders.js';
import type { ProcessingRequest__Output } from '../generated/envoy/service/ext_proc/v3/ProcessingRequest.js';
import type { ProcessingResponse } from '../generated/envoy/service/ext_proc/v3/ProcessingResponse.js';
import type { StatusCode } from '../generated/envoy/type/v3/StatusCode.js';
import { isMergedDocument, type DiscoveryReply, type DiscoveryRequest, type LocalAnswer } from '../discovery/index.js';
import type { Metrics } from '../metrics.js';
import { nodeClaimRefusal } from './peerIdentity.js';
import { EXT_PROC_DOCUMENT_METADATA, EXT_PROC_NODE_METADATA } from '../translator/names.js';
import { envoyService } from '../xds/protos.js';

export type { DiscoveryRequest, LocalAnswer } from '../discovery/index.js';

/** What replaces the local apiserver's answer: a merged document, or its 304. */
export type DiscoveryAnswer = Pick<DiscoveryReply, 'status' | 'headers' | 'body'>;

/** Answers an authorized merged-document request for a sidecar's node from the local apiserver's 200, or undefined to leave that answer. */
export type DiscoveryResponder = (node: string, request: DiscoveryRequest, local: LocalAnswer) => DiscoveryAnswer | undefined;

/**
 * `discovery`: the merged document (or its 304) replaced the local answer;
 * `pass`: the local answer goes through (nothing to merge, not authorized,
 * or a message this service leaves alone); `error`: mvproxy failed and the
 * local answer goes through.
 */
export type ExtProcResult = 'discovery' | 'pass' | 'error';

export interface ExtProcServerOptions {
  logger: Logger;
  metrics: Metrics;
  discovery: DiscoveryResponder;
  /** Milliseconds, monotonic; performance.now by default. */
  clock?: () => number;
}

/** Response code details of the merged document answers (Envoy's access log shows them). */
const MERGED_DOCUMENT_DETAILS = 'mvproxy_merged_document';

const IF_NONE_MATCH = 'if-none-match';
const ACCEPT_ENCODING = 'accept-encoding';

/** Headers an immediate response must not set itself (Envoy frames the body). */
const FRAMING_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade']);

/** Headers by lowercase name; repeated headers keep every value in order. */
type Headers = Map<string, string[]>;

export interface Decision {
  result: ExtProcResult;
  response: ProcessingResponse;
}

/** What one stream remembers between its request headers, response headers and response body. */
export interface StreamState {
  /** Set on the request headers of a merged-document request. */
  discovery?: DiscoveryRequest;
  /** The local apiserver's response headers, set when they are a 200 to merge into. */
  localHeaders?: Map<string, string[]>;
}

/** An answer that changes nothing, for each kind of message. */
const PASS: Record<'request_headers' | 'response_headers' | 'request_body' | 'response_body' | 'request_trailers' | 'response_trailers', ProcessingResponse> = {
  request_headers: { request_headers: {} },
  response_headers: { response_headers: {} },
  request_body: { request_body: {} },
  response_body: { response_body: {} },
  request_trailers: { request_trailers: {} },
  response_trailers: { response_trailers: {} },
};

export class ExtProcServer {
  private readonly log: Logger;
  private readonly metrics: Metrics;
  private readonly discovery: DiscoveryResponder;
  private readonly clock: () => number;

  constructor(opts: ExtProcServerOptions) {
    this.log = opts.logger.child({ component: 'ext_proc' });
    this.metrics = opts.metrics;
    this.discovery = opts.discovery;
    this.clock = opts.clock ?? (() => performance.now());
  }

  /** Registers the ExternalProcessor service on a gRPC server (which may host ADS too). */
  addToServer(server: grpc.Server): void {
    const handlers: ExternalProcessorHandlers = {
      Process: (call) => this.openStream(call),
    };
    server.addService(envoyService('envoy.service.ext_proc.v3.ExternalProcessor'), handlers);
  }

  private openStream(call: grpc.ServerDuplexStream<ProcessingRequest__Output, ProcessingResponse>): void {
    const node = firstMetadata(call.metadata, EXT_PROC_NODE_METADATA) ?? '';
    // A merged document is planned per sidecar: another node's is not this peer's to read.
    const refusal = nodeClaimRefusal(call.getAuthContext(), node);
    if (refusal !== undefined) {
      this.log.warn({ claimed: node, peer: call.getPeer() }, 'refused an ext_proc stream claiming a node its client certificate does not name');
      call.emit('error', Object.assign(new Error(refusal), { code: grpc.status.PERMISSION_DENIED }));
      return;
    }
    const documentName = firstMetadata(call.metadata, EXT_PROC_DOCUMENT_METADATA) ?? '';
    const document = isMergedDocument(documentName) ? documentName : undefined;
    if (document === undefined) this.log.warn({ node, document: documentName }, 'ext_proc stream for no merged document: passed through');
    const state: StreamState = {};
    let closed = false;
    const close = (): void => {
      if (closed) return;
      closed = true;
      try {
        call.end();
      } catch {
        // already gone
      }
    };
    call.on('data', (message: ProcessingRequest__Output) => {
      if (closed) return;
      let response: ProcessingResponse | undefined;
      try {
        response = this.process(node, document, message, state);
      } catch (err) {
        // Envoy fails open on a broken stream: the client gets the local document.
        this.log.error({ err, node }, 'ext_proc request failed');
        this.metrics.extProcRequests.inc({ result: 'error' });
        closed = true;
        call.emit('error', Object.assign(new Error('mvproxy could not process the request'), { code: grpc.status.INTERNAL }));
        return;
      }
      if (response === undefined) {
        this.log.warn({ node }, 'ext_proc message of an unknown kind');
        this.metrics.extProcRequests.inc({ result: 'error' });
        closed = true;
        call.emit('error', Object.assign(new Error('mvproxy does not handle this ext_proc message'), { code: grpc.status.UNIMPLEMENTED }));
        return;
      }
      try {
        call.write(response);
      } catch (err) {
        this.log.debug({ err, node }, 'ext_proc stream closed before the answer');
      }
    });
    call.on('end', close);
    call.on('error', (err: Error) => {
      closed = true;
      this.log.debug({ err: err.message, node }, 'ext_proc stream error');
    });
    call.on('cancelled', () => {
      closed = true;
    });
  }

  /**
   * The answer to one message of a stream for `document` (undefined: the
   * route named none, so everything passes), or undefined for a message of no
   * known kind. `state` carries what the request headers leave for the
   * response headers. Messages Envoy should not send with our processing
   * modes (bodies, trailers) get a pass-through answer of their kind.
   */
  process(
    node: string,
    document: DiscoveryRequest['document'] | undefined,
    message: ProcessingRequest__Output,
    state: StreamState = {},
  ): ProcessingResponse | undefined {
    if (message.request_headers) {
      if (document === undefined) return PASS.request_headers;
      return this.rememberRequest(document, message.request_headers, state);
    }
    if (message.response_headers) {
      const decision = this.rememberResponse(message.response_headers, state);
      // A pass here is the request's result; a 200 is counted when its body is merged.
      if (decision.result !== 'discovery') this.metrics.extProcRequests.inc({ result: decision.result });
      return decision.response;
    }
    if (message.response_body && state.localHeaders !== undefined) {
      const started = this.clock();
      const decision = this.decideBody(node, message.response_body.body ?? Buffer.alloc(0), message.response_body.end_of_stream === true, state);
      this.metrics.extProcRequests.inc({ result: decision.result });
      this.metrics.extProcDuration.observe(Math.max(0, this.clock() - started) / 1000);
      return decision.response;
    }
    for (const kind of ['request_body', 'response_body', 'request_trailers', 'response_trailers'] as const) {
      if (message[kind]) return PASS[kind];
    }
    return undefined;
  }

  /** Request headers: remember what the client accepts and holds, and hold back If-None-Match and Accept-Encoding. */
  private rememberRequest(document: DiscoveryRequest['document'], request: HttpHeaders__Output, state: StreamState): ProcessingResponse {
    const headers = headerMap(request);
    const discovery: DiscoveryRequest = { document };
    const path = headers.get(':path')?.[0];
    if (path !== undefined) discovery.path = path;
    const accept = headers.get('accept');
    if (accept !== undefined) discovery.accept = accept.join(', ');
    const ifNoneMatch = headers.get(IF_NONE_MATCH);
    if (ifNoneMatch !== undefined) discovery.ifNoneMatch = ifNoneMatch.join(', ');
    const acceptEncoding = headers.get(ACCEPT_ENCODING);
    if (acceptEncoding !== undefined) discovery.acceptEncoding = acceptEncoding.join(', ');
    state.discovery = discovery;
    // Our 304 is decided against the merged ETag, and our gzip on the merged body: the apiserver answers in full, uncompressed.
    return { request_headers: { response: { header_mutation: { remove_headers: [IF_NONE_MATCH, ACCEPT_ENCODING] }, clear_route_cache: false } } };
  }

  /**
   * The local apiserver's response headers: a 200 to a merged-document
   * request is kept for its body (result `discovery`, counted with the body);
   * anything else goes through (the apiserver refused or failed, it says so
   * itself; or no document).
   */
  rememberResponse(response: HttpHeaders__Output, state: StreamState): Decision {
    if (state.discovery === undefined) return { result: 'pass', response: PASS.response_headers };
    const headers = headerMap(response);
    if (headers.get(':status')?.[0] !== '200') return { result: 'pass', response: PASS.response_headers };
    state.localHeaders = headers;
    return { result: 'discovery', response: PASS.response_headers };
  }

  /**
   * The local apiserver's body, buffered: the merged answer replaces the
   * local one, or the local one goes through (a body Envoy did not buffer
   * whole, nothing to merge, mvproxy failed).
   */
  decideBody(node: string, body: Buffer, whole: boolean, state: StreamState): Decision {
    const request = state.discovery;
    const headers = state.localHeaders;
    state.localHeaders = undefined;
    if (request === undefined || headers === undefined || !whole) return { result: 'pass', response: PASS.response_body };
    const local: LocalAnswer = { headers: new Map([...headers].filter(([name]) => !name.startsWith(':'))), body };
    let answer: DiscoveryAnswer | undefined;
    try {
      answer = this.discovery(node, request, local);
    } catch (err) {
      this.log.error({ err, node, document: request.document }, 'merged document failed: the local one goes through');
      return { result: 'error', response: PASS.response_body };
    }
    if (answer === undefined) return { result: 'pass', response: PASS.response_body };
    return { result: 'discovery', response: { immediate_response: mergedDocumentAnswer(answer) } };
  }
}

function firstMetadata(metadata: grpc.Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : value.toString('utf8');
}

function headerMap(message: HttpHeaders__Output): Headers {
  const headers: Headers = new Map();
  for (const header of message.headers?.headers ?? []) {
    const key = (header.key ?? '').toLowerCase();
    // Envoy sends raw_value (bytes); older versions sent value.
    const value = header.raw_value !== undefined && header.raw_value.length > 0 ? header.raw_value.toString('utf8') : (header.value ?? '');
    const values = headers.get(key) ?? [];
    values.push(value);
    headers.set(key, values);
  }
  return headers;
}

function appended(key: string, value: string): HeaderValueOption {
  return { header: { key, raw_value: Buffer.from(value, 'utf8') }, append_action: 'APPEND_IF_EXISTS_OR_ADD' };
}

function mergedDocumentAnswer(answer: DiscoveryAnswer): ProcessingResponse['immediate_response'] {
  // Each value its own header, repeated names kept (Warning, Vary).
  const setHeaders = answer.headers
    .map(([key, value]) => [key.toLowerCase(), value] as const)
    .filter(([key]) => !key.startsWith(':') && !FRAMING_HEADERS.has(key))
    .map(([key, value]) => appended(key, value));
  return {
    // HttpStatus.code is Envoy's StatusCode enum, whose numbers are the HTTP codes.
    status: { code: answer.status as StatusCode },
    headers: { set_headers: setHeaders },
    body: answer.body,
    details: MERGED_DOCUMENT_DETAILS,
  };
}
