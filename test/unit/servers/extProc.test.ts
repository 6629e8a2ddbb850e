// The ext_proc server (merged documents over the push budget only) against a real grpc-js client
// over a Unix socket, driven the way Envoy drives it: one stream per HTTP
// request, headers in raw_value, the route's document in the stream metadata.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';

import type { ProcessingRequest } from '../../../src/generated/envoy/service/ext_proc/v3/ProcessingRequest.js';
import type { ProcessingResponse__Output } from '../../../src/generated/envoy/service/ext_proc/v3/ProcessingResponse.js';
import { createMetrics, type Metrics } from '../../../src/metrics.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../../../src/servers/grpcListen.js';
import { ExtProcServer, type DiscoveryAnswer, type DiscoveryRequest, type LocalAnswer } from '../../../src/servers/extProc.js';
import { envoyGrpc } from '../../../src/xds/protos.js';
import { AGGREGATED_DISCOVERY_JSON } from '../../../src/model/discovery.js';

const NODE = 'apiserver-a';
/** Stream metadata of the route selecting `/apis` (aggregated), and of the others. */
const GROUPS = { 'x-mvproxy-node': NODE, 'x-mvproxy-document': 'group-discovery' };
const CORE = { 'x-mvproxy-node': NODE, 'x-mvproxy-document': 'core-discovery' };
const OPENAPI_INDEX = { 'x-mvproxy-node': NODE, 'x-mvproxy-document': 'openapi-index' };

let dir: string;
let address: string;
let server: grpc.Server;
let metrics: Metrics;
const discoveryCalls: Array<{ node: string; request: DiscoveryRequest; local: LocalAnswer }> = [];
/** What the injected responder does next. */
let respond: (request: DiscoveryRequest) => DiscoveryAnswer | undefined = () => undefined;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mvproxy-extproc-'));
  metrics = createMetrics();
  server = createGrpcServer();
  new ExtProcServer({
    logger: pino({ level: 'silent' }),
    metrics,
    discovery: (node, request, local) => {
      discoveryCalls.push({ node, request, local });
      return respond(request);
    },
  }).addToServer(server);
  address = await listenUnix(server, join(dir, 'ext_proc.sock'));
});

after(async () => {
  await shutdownGrpcServer(server, 100);
  rmSync(dir, { recursive: true, force: true });
});

type Stream = grpc.ClientDuplexStream<ProcessingRequest, ProcessingResponse__Output>;

function openStream(metadata: Record<string, string> = GROUPS): {
  stream: Stream;
  next: () => Promise<ProcessingResponse__Output>;
  ended: Promise<grpc.StatusObject>;
} {
  const Client = envoyGrpc().envoy.service.ext_proc.v3.ExternalProcessor;
  const client = new Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  const stream = client.Process(md);
  const queue: ProcessingResponse__Output[] = [];
  const waiters: Array<(r: ProcessingResponse__Output) => void> = [];
  stream.on('data', (r: ProcessingResponse__Output) => {
    const waiter = waiters.shift();
    if (waiter) waiter(r);
    else queue.push(r);
  });
  const ended = new Promise<grpc.StatusObject>((resolve) => {
    stream.on('status', (s: grpc.StatusObject) => {
      client.close();
      resolve(s);
    });
    stream.on('error', () => undefined);
  });
  const next = (): Promise<ProcessingResponse__Output> => {
    const ready = queue.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      waiters.push(resolve);
      setTimeout(() => reject(new Error('no answer within 2 s')), 2000).unref();
    });
  };
  return { stream, next, ended };
}

/** Request headers as Envoy sends them: lowercase keys, values in raw_value. */
function headers(h: Array<[string, string]>): ProcessingRequest {
  return { request_headers: { headers: { headers: h.map(([key, value]) => ({ key, raw_value: Buffer.from(value) })) }, end_of_stream: true } };
}

function base(path: string, extra: Array<[string, string]> = []): ProcessingRequest {
  return headers([[':method', 'GET'], [':path', path], [':authority', 'apiserver'], ...extra]);
}

async function oneRequest(request: ProcessingRequest, metadata?: Record<string, string>): Promise<ProcessingResponse__Output> {
  const { stream, next } = openStream(metadata);
  stream.write(request);
  const response = await next();
  stream.end();
  return response;
}

const LOCAL_BODY = Buffer.from('{"local":true}');

/**
 * Request headers, then the apiserver's response headers with this status
 * (and these headers), then, for a 200, its body buffered whole (or not), on
 * one stream: the answers to the request headers and to the last message.
 */
async function discoveryExchange(
  request: ProcessingRequest,
  status: string,
  metadata: Record<string, string> = GROUPS,
  local: { headers?: Array<[string, string]>; body?: Buffer; whole?: boolean } = {},
): Promise<[ProcessingResponse__Output, ProcessingResponse__Output]> {
  const { stream, next } = openStream(metadata);
  stream.write(request);
  const first = await next();
  const responseHeaders = [[':status', status], ...(local.headers ?? [])].map(([key, value]) => ({ key, raw_value: Buffer.from(value ?? '') }));
  stream.write({ response_headers: { headers: { headers: responseHeaders } } });
  let last = await next();
  if (status === '200') {
    stream.write({ response_body: { body: local.body ?? LOCAL_BODY, end_of_stream: local.whole ?? true } });
    last = await next();
  }
  stream.end();
  return [first, last];
}

async function counter(result: string): Promise<number> {
  const values = (await metrics.extProcRequests.get()).values;
  return values.find((v) => v.labels['result'] === result)?.value ?? 0;
}

describe('ExtProcServer', () => {
  test('on the request headers the request goes on to the apiserver without If-None-Match and Accept-Encoding, the responder not asked yet', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: [], body: Buffer.from('{}') });
    const response = await oneRequest(
      base('/apis', [
        ['accept', AGGREGATED_DISCOVERY_JSON],
        ['if-none-match', '"abc"'],
        ['accept-encoding', 'gzip'],
        ['authorization', 'Bearer t'],
      ]),
    );
    assert.equal(response.immediate_response, undefined);
    assert.deepEqual(response.request_headers?.response?.header_mutation?.remove_headers, ['if-none-match', 'accept-encoding']);
    assert.equal(response.request_headers?.response?.header_mutation?.set_headers?.length ?? 0, 0, "nothing else changes: identity is not ext_proc's");
    assert.deepEqual(discoveryCalls, []);
  });

  test("an apiserver 200 is replaced by the responder's document for the route's document, bytes and headers intact", async () => {
    discoveryCalls.length = 0;
    const body = Buffer.from([0x6b, 0x38, 0x73, 0x00, 0xff, 0x80, 0x0a]);
    respond = () => ({
      status: 200,
      headers: [
        ['Content-Type', 'application/vnd.kubernetes.protobuf'],
        ['etag', '"abc"'],
        ['content-length', '7'],
      ],
      body,
    });
    const before = await counter('discovery');
    const [, response] = await discoveryExchange(
      base('/apis?timeout=32s', [
        ['accept', AGGREGATED_DISCOVERY_JSON],
        ['if-none-match', '"old"'],
        ['authorization', 'Bearer t'],
      ]),
      '200',
    );
    assert.deepEqual(
      discoveryCalls.map((c) => [c.node, c.request]),
      [[NODE, { document: 'group-discovery', path: '/apis?timeout=32s', accept: AGGREGATED_DISCOVERY_JSON, ifNoneMatch: '"old"' }]],
    );
    const immediate = response.immediate_response;
    assert.equal(immediate?.status?.code, 'OK');
    assert.deepEqual(immediate?.body, body);
    assert.equal(immediate?.details, 'mvproxy_merged_document');
    assert.deepEqual(
      (immediate?.headers?.set_headers ?? []).map((h) => [h.header?.key, h.header?.raw_value?.toString(), h.header?.value ?? '']),
      [
        ['content-type', 'application/vnd.kubernetes.protobuf', ''],
        ['etag', '"abc"', ''],
      ],
    );
    assert.equal(await counter('discovery'), before + 1);
  });

  test('the responder gets the local 200 whole: its headers (no pseudo-header) and body', async () => {
    discoveryCalls.length = 0;
    respond = () => undefined;
    await discoveryExchange(base('/apis', [['accept', AGGREGATED_DISCOVERY_JSON]]), '200', GROUPS, {
      headers: [
        ['content-type', AGGREGATED_DISCOVERY_JSON],
        ['audit-id', 'a1'],
        ['warning', '299 - "one"'],
        ['warning', '299 - "two"'],
      ],
    });
    const local = discoveryCalls[0]?.local;
    assert.deepEqual(local?.body, LOCAL_BODY);
    assert.deepEqual(
      [...(local?.headers ?? [])],
      [
        ['content-type', [AGGREGATED_DISCOVERY_JSON]],
        ['audit-id', ['a1']],
        ['warning', ['299 - "one"', '299 - "two"']],
      ],
    );
  });

  test('a body Envoy could not buffer whole passes; the responder is not asked', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: [], body: Buffer.from('{}') });
    const [, response] = await discoveryExchange(base('/apis', [['accept', AGGREGATED_DISCOVERY_JSON]]), '200', GROUPS, { whole: false });
    assert.ok(response.response_body);
    assert.equal(response.immediate_response, undefined);
    assert.deepEqual(discoveryCalls, []);
  });

  test('the document comes from the route, whatever the path says', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: [], body: Buffer.from('{}') });
    await discoveryExchange(base('/apis', [['accept', AGGREGATED_DISCOVERY_JSON]]), '200', CORE);
    await discoveryExchange(base('/apis', [['accept', 'application/json']]), '200', OPENAPI_INDEX);
    assert.deepEqual(
      discoveryCalls.map((c) => c.request.document),
      ['core-discovery', 'openapi-index'],
    );
  });

  test('an apiserver 304 passes (the request reached it without If-None-Match: not ours to merge)', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: [['etag', '"abc"']], body: Buffer.from('{}') });
    const [, response] = await discoveryExchange(base('/api', [['accept', AGGREGATED_DISCOVERY_JSON]]), '304', CORE);
    assert.ok(response.response_headers);
    assert.equal(response.immediate_response, undefined);
    assert.deepEqual(discoveryCalls, []);
  });

  test('a 304 from the responder is sent as is', async () => {
    respond = () => ({ status: 304, headers: [['etag', '"abc"']], body: Buffer.alloc(0) });
    const [, response] = await discoveryExchange(
      base('/apis', [
        ['accept', AGGREGATED_DISCOVERY_JSON],
        ['if-none-match', '"abc"'],
        ['authorization', 'Bearer t'],
      ]),
      '200',
    );
    assert.equal(response.immediate_response?.status?.code, 'NotModified');
  });

  test('an apiserver 401, 403 or 5xx reaches the client untouched; the responder is not asked', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: [], body: Buffer.from('{}') });
    for (const status of ['401', '403', '404', '500', '503']) {
      const [, response] = await discoveryExchange(
        base('/apis', [
          ['accept', AGGREGATED_DISCOVERY_JSON],
          ['authorization', 'Bearer made-up'],
        ]),
        status,
      );
      assert.ok(response.response_headers, status);
      assert.equal(response.immediate_response, undefined, status);
    }
    assert.deepEqual(discoveryCalls, []);
  });

  test("when the responder has no answer the apiserver's 200 passes", async () => {
    respond = () => undefined;
    const [, response] = await discoveryExchange(
      base('/apis', [
        ['accept', AGGREGATED_DISCOVERY_JSON],
        ['authorization', 'Bearer t'],
      ]),
      '200',
    );
    assert.ok(response.response_body);
    assert.equal(response.immediate_response, undefined);
  });

  test('a stream whose route names no merged document passes everything, If-None-Match included', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: [], body: Buffer.from('{}') });
    const routes: Array<Record<string, string>> = [{ 'x-mvproxy-node': NODE }, { 'x-mvproxy-node': NODE, 'x-mvproxy-document': 'pods' }];
    for (const metadata of routes) {
      const [request, response] = await discoveryExchange(
        base('/apis', [
          ['accept', AGGREGATED_DISCOVERY_JSON],
          ['if-none-match', '"x"'],
        ]),
        '200',
        metadata,
      );
      assert.equal(request.request_headers?.response, undefined);
      assert.ok(response.response_body);
      assert.equal(response.immediate_response, undefined);
    }
    assert.deepEqual(discoveryCalls, []);
  });

  test("a failing responder lets the local apiserver's 200 through (never a 503), counted as an error", async () => {
    respond = () => {
      throw new Error('boom');
    };
    const before = await counter('error');
    const [, response] = await discoveryExchange(
      base('/apis', [
        ['accept', AGGREGATED_DISCOVERY_JSON],
        ['authorization', 'Bearer t'],
      ]),
      '200',
    );
    assert.ok(response.response_body);
    assert.equal(response.immediate_response, undefined);
    assert.equal(await counter('error'), before + 1);
  });

  test('every message gets its answer, in order, on one stream', async () => {
    respond = () => undefined;
    const { stream, next } = openStream();
    stream.write(base('/apis', [['accept', AGGREGATED_DISCOVERY_JSON]]));
    stream.write({ request_body: { body: Buffer.from('x'), end_of_stream: true } });
    stream.write({ response_headers: { headers: { headers: [{ key: ':status', raw_value: Buffer.from('200') }] } } });
    stream.write({ response_trailers: {} });
    const kinds: Array<string | undefined> = [];
    for (let i = 0; i < 4; i++) kinds.push((await next()).response);
    stream.end();
    assert.deepEqual(kinds, ['request_headers', 'request_body', 'response_headers', 'response_trailers']);
  });

  test('a message of no known kind ends its stream with an error; the server keeps serving', async () => {
    const { stream, ended } = openStream();
    stream.write({});
    const status = await ended;
    assert.equal(status.code, grpc.status.UNIMPLEMENTED);
    const response = await oneRequest(base('/apis', [['accept', AGGREGATED_DISCOVERY_JSON]]));
    assert.ok(response.request_headers);
  });

  test('a client that vanishes mid-stream does not disturb the server', async () => {
    const { stream } = openStream();
    stream.write(base('/apis'));
    stream.cancel();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const response = await oneRequest(base('/apis', [['accept', AGGREGATED_DISCOVERY_JSON]]));
    assert.ok(response.request_headers);
  });

  test('each answered response is counted by result and timed', async () => {
    respond = () => undefined;
    const pass = await counter('pass');
    const timed = (await metrics.extProcDuration.get()).values.find((v) => v.metricName === 'mvproxy_ext_proc_duration_seconds_count')?.value ?? 0;
    await discoveryExchange(base('/apis', [['accept', AGGREGATED_DISCOVERY_JSON]]), '200');
    assert.equal(await counter('pass'), pass + 1);
    const timedAfter = (await metrics.extProcDuration.get()).values.find((v) => v.metricName === 'mvproxy_ext_proc_duration_seconds_count')?.value ?? 0;
    assert.equal(timedAfter, timed + 1);
  });
});
