// The ext_proc server against a real grpc-js client over a Unix socket, driven
// the way Envoy drives it: one stream per HTTP request, headers in raw_value.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';

import type { HeaderValueOption__Output } from '../../src/generated/envoy/config/core/v3/HeaderValueOption.js';
import type { ProcessingRequest } from '../../src/generated/envoy/service/ext_proc/v3/ProcessingRequest.js';
import type { ProcessingResponse__Output } from '../../src/generated/envoy/service/ext_proc/v3/ProcessingResponse.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../../src/servers/ads.js';
import { ExtProcServer, type DiscoveryAnswer, type DiscoveryRequest } from '../../src/servers/extProc.js';
import { envoyGrpc } from '../../src/xds/protos.js';
import { testCa, testLeaf, xfccFor, type TestCert } from '../support/clientCerts.js';

const NODE = 'apiserver-a';
const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

let dir: string;
let address: string;
let server: grpc.Server;
let metrics: Metrics;
let ca: TestCert;
let alice: TestCert;
const discoveryCalls: Array<{ node: string; request: DiscoveryRequest }> = [];
/** What the injected responder does next. */
let respond: (request: DiscoveryRequest) => DiscoveryAnswer | undefined = () => undefined;

before(async () => {
  ca = await testCa('client-ca');
  alice = await testLeaf(ca, { name: [{ O: ['system:masters'] }, { O: ['team, a+b'] }, { CN: ['alice'] }], usages: ['client'] });
  dir = mkdtempSync(join(tmpdir(), 'mvproxy-extproc-'));
  metrics = createMetrics();
  server = createGrpcServer();
  new ExtProcServer({
    logger: pino({ level: 'silent' }),
    metrics,
    discovery: (node, request) => {
      discoveryCalls.push({ node, request });
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

function openStream(metadata: Record<string, string> = { 'x-mvproxy-node': NODE }): { stream: Stream; next: () => Promise<ProcessingResponse__Output>; ended: Promise<grpc.StatusObject> } {
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

const DISCOVERY = { 'x-mvproxy-node': NODE, 'x-mvproxy-discovery': 'true' };

/** Request headers, then the apiserver's response headers with this status, on one stream: both answers. */
async function discoveryExchange(
  request: ProcessingRequest,
  status: string,
  metadata: Record<string, string> = DISCOVERY,
): Promise<[ProcessingResponse__Output, ProcessingResponse__Output]> {
  const { stream, next } = openStream(metadata);
  stream.write(request);
  const first = await next();
  stream.write({ response_headers: { headers: { headers: [{ key: ':status', raw_value: Buffer.from(status) }] } } });
  const second = await next();
  stream.end();
  return [first, second];
}

/** [key, raw value, append_action, append]: Envoy 1.40's ext_proc reads `append`, so both must agree. */
function setHeaders(response: ProcessingResponse__Output): Array<[string, string, string]> {
  const mutation = response.request_headers?.response?.header_mutation;
  return (mutation?.set_headers ?? []).map((h: HeaderValueOption__Output) => {
    assert.equal(h.header?.value ?? '', '', 'values go in raw_value');
    assert.equal(h.append?.value ?? false, h.append_action === 'APPEND_IF_EXISTS_OR_ADD', 'append agrees with append_action');
    return [h.header?.key ?? '', h.header?.raw_value?.toString('utf8') ?? '', String(h.append_action)];
  });
}

async function counter(result: string): Promise<number> {
  const values = (await metrics.extProcRequests.get()).values;
  return values.find((v) => v.labels['result'] === result)?.value ?? 0;
}

describe('ExtProcServer', () => {
  test('a certificate request gets X-Remote-User and one X-Remote-Group per O, as raw values', async () => {
    const response = await oneRequest(base('/api/v1/pods', [['x-forwarded-client-cert', xfccFor(alice.certPem)]]));
    assert.deepEqual(setHeaders(response), [
      ['x-remote-user', 'alice', 'OVERWRITE_IF_EXISTS_OR_ADD'],
      ['x-remote-group', 'system:masters', 'OVERWRITE_IF_EXISTS_OR_ADD'],
      ['x-remote-group', 'team, a+b', 'APPEND_IF_EXISTS_OR_ADD'],
    ]);
    assert.equal(response.request_headers?.response?.clear_route_cache, false);
  });

  test('the certificate header and every client-sent x-remote-* header are removed', async () => {
    const response = await oneRequest(
      base('/api/v1/pods', [
        ['x-forwarded-client-cert', xfccFor(alice.certPem)],
        ['x-remote-user', 'mallory'],
        ['x-remote-extra-scopes', 'all'],
        ['x-remote-uid', '0'],
      ]),
    );
    assert.deepEqual(response.request_headers?.response?.header_mutation?.remove_headers, [
      'x-forwarded-client-cert',
      'x-remote-extra-scopes',
      'x-remote-uid',
    ]);
    // x-remote-user is overwritten by the first set, never both set and removed.
    assert.equal(setHeaders(response)[0]?.[1], 'alice');
  });

  test('a request without certificate passes with forged identity headers removed and nothing set', async () => {
    const response = await oneRequest(base('/api/v1/pods', [['x-remote-group', 'system:masters'], ['authorization', 'Bearer t']]));
    assert.deepEqual(setHeaders(response), []);
    assert.deepEqual(response.request_headers?.response?.header_mutation?.remove_headers, [
      'x-forwarded-client-cert',
      'x-remote-group',
      'x-remote-user',
    ]);
  });

  test('an unreadable certificate is refused with a 401 Status, never passed through', async () => {
    const before = await counter('error');
    const response = await oneRequest(base('/api/v1/pods', [['x-forwarded-client-cert', 'Hash=00;Cert="garbage"']]));
    assert.equal(response.request_headers, undefined);
    assert.equal(response.immediate_response?.status?.code, 'Unauthorized');
    const body = JSON.parse(response.immediate_response?.body?.toString('utf8') ?? '') as { kind: string; code: number; reason: string };
    assert.deepEqual([body.kind, body.code, body.reason], ['Status', 401, 'Unauthorized']);
    assert.equal(response.immediate_response?.details, 'mvproxy_client_certificate_rejected');
    assert.equal(await counter('error'), before + 1);
  });

  test('every message gets its answer, in order, on one stream', async () => {
    const { stream, next } = openStream();
    stream.write(base('/api/v1/pods', [['x-forwarded-client-cert', xfccFor(alice.certPem)]]));
    stream.write({ request_body: { body: Buffer.from('x'), end_of_stream: true } });
    stream.write({ response_headers: { headers: { headers: [{ key: ':status', raw_value: Buffer.from('200') }] } } });
    stream.write({ response_trailers: {} });
    const kinds: Array<string | undefined> = [];
    for (let i = 0; i < 4; i++) kinds.push((await next()).response);
    stream.end();
    assert.deepEqual(kinds, ['request_headers', 'request_body', 'response_headers', 'response_trailers']);
  });

  test('on a discovery route the request goes on to the apiserver without If-None-Match, the responder not asked yet', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: {}, body: Buffer.from('{}') });
    const response = await oneRequest(base('/apis', [['accept', AGGREGATED], ['if-none-match', '"abc"'], ['authorization', 'Bearer t']]), DISCOVERY);
    assert.equal(response.immediate_response, undefined);
    assert.ok(response.request_headers?.response?.header_mutation?.remove_headers?.includes('if-none-match'));
    assert.deepEqual(discoveryCalls, []);
  });

  test('an apiserver 200 on a discovery route is replaced by the responder\'s document, bytes and headers intact', async () => {
    discoveryCalls.length = 0;
    const body = Buffer.from([0x6b, 0x38, 0x73, 0x00, 0xff, 0x80, 0x0a]);
    respond = () => ({ status: 200, headers: { 'Content-Type': 'application/vnd.kubernetes.protobuf', etag: '"abc"', 'content-length': '7' }, body });
    const before = await counter('discovery');
    const [, response] = await discoveryExchange(
      base('/apis?timeout=32s', [['accept', AGGREGATED], ['if-none-match', '"old"'], ['authorization', 'Bearer t']]),
      '200',
    );
    assert.deepEqual(discoveryCalls, [{ node: NODE, request: { path: '/apis?timeout=32s', accept: AGGREGATED, ifNoneMatch: '"old"' } }]);
    const immediate = response.immediate_response;
    assert.equal(immediate?.status?.code, 'OK');
    assert.deepEqual(immediate?.body, body);
    assert.equal(immediate?.details, 'mvproxy_merged_discovery');
    assert.deepEqual(
      (immediate?.headers?.set_headers ?? []).map((h) => [h.header?.key, h.header?.raw_value?.toString()]),
      [
        ['content-type', 'application/vnd.kubernetes.protobuf'],
        ['etag', '"abc"'],
      ],
    );
    assert.equal(await counter('discovery'), before + 1);
  });

  test('an apiserver 304 on a discovery route is replaced like a 200', async () => {
    respond = () => ({ status: 200, headers: { etag: '"abc"' }, body: Buffer.from('{}') });
    const [, response] = await discoveryExchange(base('/api', [['accept', AGGREGATED], ['authorization', 'Bearer t']]), '304');
    assert.equal(response.immediate_response?.status?.code, 'OK');
  });

  test('a 304 from the responder is sent as is', async () => {
    respond = () => ({ status: 304, headers: { etag: '"abc"' }, body: Buffer.alloc(0) });
    const [, response] = await discoveryExchange(base('/apis', [['accept', AGGREGATED], ['if-none-match', '"abc"'], ['authorization', 'Bearer t']]), '200');
    assert.equal(response.immediate_response?.status?.code, 'NotModified');
  });

  test('an apiserver 401, 403 or 5xx on a discovery route reaches the client untouched; the responder is not asked', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: {}, body: Buffer.from('{}') });
    for (const status of ['401', '403', '404', '500', '503']) {
      const [, response] = await discoveryExchange(base('/apis', [['accept', AGGREGATED], ['authorization', 'Bearer made-up']]), status);
      assert.ok(response.response_headers, status);
      assert.equal(response.immediate_response, undefined, status);
    }
    assert.deepEqual(discoveryCalls, []);
  });

  test('when the responder has no answer the apiserver\'s 200 passes', async () => {
    respond = () => undefined;
    const [, response] = await discoveryExchange(base('/apis', [['accept', AGGREGATED], ['authorization', 'Bearer t']]), '200');
    assert.ok(response.response_headers);
    assert.equal(response.immediate_response, undefined);
  });

  test('a certificate request on a discovery route continues with its identity, and its 200 is replaced', async () => {
    respond = () => ({ status: 200, headers: {}, body: Buffer.from('{}') });
    const [request, response] = await discoveryExchange(base('/apis', [['accept', AGGREGATED], ['x-forwarded-client-cert', xfccFor(alice.certPem)]]), '200');
    assert.equal(setHeaders(request)[0]?.[1], 'alice');
    assert.equal(response.immediate_response?.status?.code, 'OK');
  });

  test('without the discovery route marker the responder is never asked and If-None-Match stays', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: {}, body: Buffer.from('{}') });
    const [request, response] = await discoveryExchange(
      base('/apis', [['accept', AGGREGATED], ['if-none-match', '"x"'], ['x-forwarded-client-cert', xfccFor(alice.certPem)]]),
      '200',
      { 'x-mvproxy-node': NODE },
    );
    assert.deepEqual(discoveryCalls, []);
    assert.equal(setHeaders(request)[0]?.[1], 'alice');
    assert.ok(!request.request_headers?.response?.header_mutation?.remove_headers?.includes('if-none-match'));
    assert.ok(response.response_headers);
  });

  test('an apiserver 200 for the OpenAPI v3 index on a discovery route is replaced by the responder\'s document', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"paths":{}}') });
    const [, response] = await discoveryExchange(base('/openapi/v3', [['accept', 'application/json'], ['authorization', 'Bearer t']]), '200');
    assert.deepEqual(discoveryCalls, [{ node: NODE, request: { path: '/openapi/v3', accept: 'application/json' } }]);
    assert.equal(response.immediate_response?.body?.toString(), '{"paths":{}}');
  });

  test('the responder is not asked for paths other than /api, /apis and /openapi/v3, even on a discovery route', async () => {
    discoveryCalls.length = 0;
    respond = () => ({ status: 200, headers: {}, body: Buffer.from('{}') });
    for (const path of ['/apis/batch/v1', '/apis/batch', '/api/v1', '/apis/batch/v1/jobs', '/openapi/v3/apis/batch/v1', '/openapi/v2']) {
      const [, response] = await discoveryExchange(base(path, [['accept', AGGREGATED], ['authorization', 'Bearer t']]), '200');
      assert.ok(response.response_headers, path);
    }
    assert.deepEqual(discoveryCalls, []);
  });

  test('a failing responder turns the apiserver\'s 200 into a 503 Status with Retry-After', async () => {
    respond = () => {
      throw new Error('boom');
    };
    const [, response] = await discoveryExchange(base('/apis', [['accept', AGGREGATED], ['authorization', 'Bearer t']]), '200');
    assert.equal(response.immediate_response?.status?.code, 'ServiceUnavailable');
    const keys = (response.immediate_response?.headers?.set_headers ?? []).map((h) => h.header?.key);
    assert.ok(keys.includes('retry-after'));
  });

  test('a message of no known kind ends its stream with an error; the server keeps serving', async () => {
    const { stream, ended } = openStream();
    stream.write({});
    const status = await ended;
    assert.equal(status.code, grpc.status.UNIMPLEMENTED);
    const response = await oneRequest(base('/api/v1/pods'));
    assert.ok(response.request_headers);
  });

  test('a client that vanishes mid-stream does not disturb the server', async () => {
    const { stream } = openStream();
    stream.write(base('/api/v1/pods'));
    stream.cancel();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const response = await oneRequest(base('/api/v1/pods', [['x-forwarded-client-cert', xfccFor(alice.certPem)]]));
    assert.equal(setHeaders(response)[0]?.[1], 'alice');
  });

  test('each request is counted by result and timed', async () => {
    const identity = await counter('identity');
    const pass = await counter('pass');
    const timed = (await metrics.extProcDuration.get()).values.find((v) => v.metricName === 'mvproxy_ext_proc_duration_seconds_count')?.value ?? 0;
    await oneRequest(base('/api/v1/pods', [['x-forwarded-client-cert', xfccFor(alice.certPem)]]));
    await oneRequest(base('/api/v1/pods'));
    assert.equal(await counter('identity'), identity + 1);
    assert.equal(await counter('pass'), pass + 1);
    const timedAfter = (await metrics.extProcDuration.get()).values.find((v) => v.metricName === 'mvproxy_ext_proc_duration_seconds_count')?.value ?? 0;
    assert.equal(timedAfter, timed + 2);
  });
});
