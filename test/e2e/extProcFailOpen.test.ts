// The ext_proc tier's fail-open through a real Envoy sidecar
// (test/support/echoSidecar.ts): every merged document (`/apis`, `/api`, the
// OpenAPI v3 index) is pushed over the push budget, so its routes send it
// through ext_proc to the control plane. Whatever the control plane does
// wrong (its stream ends with an error, its merge throws, it stalls past the
// message timeout, it is stopped), the client gets what the local apiserver
// alone would have given it: its own document, 200, with its headers, or its
// own 401; never a 5xx, never a merged document for a refused client.
//
// The control plane runs inside this test process (the harness serves ADS and
// ext_proc on one gRPC server in process; it has no separate control-plane
// process to SIGKILL). "Stopped" is shutdownGrpcServer: open streams are
// closed and the Unix socket is removed, so Envoy cannot reconnect. A killed
// process would leave the socket file behind (connection refused instead of
// no such file): to Envoy both are a control plane it cannot reach. "Stalled"
// is this process's event loop blocked (a long GC pause, an overloaded host).
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { before, describe, test } from 'node:test';

import { shutdownGrpcServer } from '../../src/servers/grpcListen.js';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_PROTOBUF } from '../../src/model/discovery.js';
import type { MergedDocument } from '../../src/model/requestInfo.js';
import { DOCUMENT_PUSH_BUDGET_BYTES } from '../../src/translator/translator.js';
import { UNAUTHORIZED_STATUS } from '../support/apiserverStatus.js';
import { eventually } from '../support/envoy.js';
import { localBodies } from '../support/documentFilterHarness.js';
import {
  AGGREGATED,
  AGGREGATED_PROTOBUF,
  APISERVER_HEADERS,
  EXT_PROC_OPENAPI_BODY,
  EXT_PROC_STALL_MS,
  KNOWN_TOKEN,
  LOCAL_CORE,
  LOCAL_GROUPS,
  LOCAL_INDEX,
  alice,
  discoveryCalls,
  envoyStat,
  extProcFault,
  localEtag,
  peerPartDocuments,
  send,
  sidecar,
  useEchoSidecar,
  type ExtProcFault,
  type Reply,
} from '../support/echoSidecar.js';

useEchoSidecar();

const TOKEN = { Authorization: KNOWN_TOKEN };
const MADE_UP_TOKEN = { Authorization: 'Bearer made-up' };

/** Envoy's count of requests its ext_proc filter let through without the control plane's answer. */
const failureModeAllowed = (): Promise<number> => envoyStat('http.apiserver.ext_proc.mvproxy.failure_mode_allowed');

/** Every merged document's set one byte over the push budget: ext_proc answers them all. */
function allOverBudget(): Map<MergedDocument, Uint8Array> {
  const documents = new Map(peerPartDocuments());
  for (const document of documents.keys()) documents.set(document, new Uint8Array(DOCUMENT_PUSH_BUDGET_BYTES + 1));
  return documents;
}

/** One discovery request, and the local apiserver's own answer to it. */
interface LocalCase {
  name: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  contentType: string;
  etag: string;
  vary?: string;
}

/** `/apis` in the aggregated format `accept` asks for. */
function groupsCase(format: string, accept: string, body: Buffer, contentType: string): LocalCase {
  return {
    name: `aggregated discovery in ${format}`,
    path: '/apis',
    headers: { Accept: accept, ...TOKEN },
    body,
    contentType,
    etag: localEtag('groups'),
    vary: 'Accept',
  };
}

const GROUPS_JSON = groupsCase('JSON', AGGREGATED, localBodies(LOCAL_GROUPS).json, AGGREGATED_DISCOVERY_JSON);
const GROUPS_PROTOBUF = groupsCase('protobuf', AGGREGATED_PROTOBUF, localBodies(LOCAL_GROUPS).protobuf, AGGREGATED_DISCOVERY_PROTOBUF);
const OPENAPI_INDEX: LocalCase = {
  name: 'the OpenAPI v3 index',
  path: '/openapi/v3',
  headers: TOKEN,
  body: Buffer.from(`${JSON.stringify(LOCAL_INDEX)}\n`),
  contentType: 'text/plain; charset=utf-8',
  etag: localEtag('index'),
};
const LOCAL_CASES = [GROUPS_JSON, GROUPS_PROTOBUF, OPENAPI_INDEX];
/** The documents the fake apiserver authenticates (its OpenAPI index is open to anyone). */
const AUTHENTICATED_CASES = [GROUPS_JSON, GROUPS_PROTOBUF];

/** The reply is the local apiserver's own answer, byte for byte, with its headers. */
function assertLocalAnswer(reply: Reply, expected: LocalCase): void {
  assert.equal(reply.status, 200, `${expected.name}: ${reply.body.toString('utf8').slice(0, 200)}`);
  assert.deepEqual(reply.body, expected.body, expected.name);
  assert.equal(reply.headers['content-type'], expected.contentType, expected.name);
  // Envoy's ext_proc drops Content-Length from a response whose body it may process (the body then goes chunked): the same bytes.
  const length = reply.headers['content-length'];
  if (length !== undefined) assert.equal(length, String(expected.body.length), expected.name);
  assert.equal(reply.headers['etag'], expected.etag, expected.name);
  assert.equal(reply.headers['vary'], expected.vary, expected.name);
  for (const name of ['audit-id', 'x-kubernetes-pf-flowschema-uid', 'x-kubernetes-pf-prioritylevel-uid'] as const) {
    assert.equal(reply.headers[name], APISERVER_HEADERS[name], `${expected.name}: ${name}`);
  }
  assert.equal(reply.headers['warning'], APISERVER_HEADERS.warning.join(', '), expected.name);
}

/** The reply is the fake apiserver's 401 Status, untouched. */
function assertRefused(reply: Reply): void {
  assert.equal(reply.status, 401, reply.body.toString('utf8'));
  assert.equal(reply.headers['etag'], undefined);
  assert.deepEqual(JSON.parse(reply.body.toString('utf8')), UNAUTHORIZED_STATUS);
}

/** Runs `body` with the ext_proc server showing `fault`. */
async function withFault<T>(fault: ExtProcFault, body: () => Promise<T>): Promise<T> {
  extProcFault.current = fault;
  try {
    return await body();
  } finally {
    extProcFault.current = undefined;
  }
}

describe('ext_proc fails open through a real Envoy', () => {
  before(async () => {
    sidecar.push(allOverBudget());
    for (const { path, headers } of LOCAL_CASES) {
      await eventually(`${path} goes over ext_proc`, 10_000, async () => {
        const reply = await send(path, { headers });
        return reply.body.toString('utf8') === EXT_PROC_OPENAPI_BODY ? true : undefined;
      });
    }
  });

  describe('with the control plane up', () => {
    test('every merged document is answered over ext_proc (the answer the failures below must not get)', async () => {
      discoveryCalls.length = 0;
      for (const { path, headers } of LOCAL_CASES) {
        const reply = await send(path, { headers });
        assert.equal(reply.status, 200);
        assert.equal(reply.body.toString('utf8'), EXT_PROC_OPENAPI_BODY, path);
      }
      assert.deepEqual(
        discoveryCalls.map((c) => c.request.document),
        ['group-discovery', 'group-discovery', 'openapi-index'],
      );
    });

    for (const fault of ['error-on-request-headers', 'error-on-response-headers', 'error-on-response-body'] as const) {
      test(`a stream that ends with a gRPC error (${fault}) gives the local apiserver's own document, counted by Envoy as failure_mode_allowed`, async () => {
        await withFault(fault, async () => {
          for (const expected of LOCAL_CASES) {
            const allowed = await failureModeAllowed();
            assertLocalAnswer(await send(expected.path, { headers: expected.headers }), expected);
            assert.equal((await failureModeAllowed()) - allowed, 1, expected.name);
          }
        });
      });
    }

    test("a merge that throws gives the local apiserver's own document", async () => {
      await withFault('merge-throws', async () => {
        for (const expected of LOCAL_CASES) {
          discoveryCalls.length = 0;
          assertLocalAnswer(await send(expected.path, { headers: expected.headers }), expected);
          assert.equal(discoveryCalls.length, 1, `${expected.name}: the merge was asked, and threw`);
        }
      });
    });

    test(`a control plane that stalls ${EXT_PROC_STALL_MS} ms (past the message timeout) gives the local apiserver's own document`, async () => {
      await withFault('stall', async () => {
        for (const expected of LOCAL_CASES) {
          const timeouts = await envoyStat('http.apiserver.ext_proc.mvproxy.message_timeouts');
          assertLocalAnswer(await send(expected.path, { headers: expected.headers }), expected);
          assert.equal((await envoyStat('http.apiserver.ext_proc.mvproxy.message_timeouts')) - timeouts, 1, expected.name);
        }
      });
    });

    test("a made-up bearer token gets the apiserver's own 401 over the ext_proc route, never a merged document", async () => {
      for (const { path, headers } of AUTHENTICATED_CASES) {
        discoveryCalls.length = 0;
        assertRefused(await send(path, { headers: { ...headers, ...MADE_UP_TOKEN } }));
        assert.deepEqual(discoveryCalls, [], path);
      }
    });
  });

  describe('with the control plane stopped', () => {
    before(async () => {
      await shutdownGrpcServer(sidecar.grpcServer, 100);
    });

    for (const expected of LOCAL_CASES) {
      test(`${expected.name}: the local apiserver's own document, 200, its headers intact`, async (t) => {
        const allowed = await failureModeAllowed();
        const started = performance.now();
        const reply = await send(expected.path, { headers: expected.headers });
        t.diagnostic(`answered in ${(performance.now() - started).toFixed(1)} ms`);
        assertLocalAnswer(reply, expected);
        assert.equal((await failureModeAllowed()) - allowed, 1);
      });
    }

    test("a made-up bearer token gets the apiserver's own 401, never a merged document", async () => {
      for (const { path, headers } of AUTHENTICATED_CASES) assertRefused(await send(path, { headers: { ...headers, ...MADE_UP_TOKEN } }));
    });

    test('a local document over 1 MiB (the core group, a client certificate) goes through whole', async () => {
      const expected = localBodies(LOCAL_CORE).json;
      const reply = await send('/api', { cert: alice, headers: { Accept: AGGREGATED } });
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body, expected);
      assert.equal(reply.headers['etag'], localEtag('core'));
    });

    test('300 requests, 10 at a time, on every document: never a 5xx, every one the local answer', async (t) => {
      const cases = Array.from({ length: 300 }, (_, i) => LOCAL_CASES[i % LOCAL_CASES.length] as LocalCase);
      const took: number[] = [];
      for (let at = 0; at < cases.length; at += 10) {
        await Promise.all(
          cases.slice(at, at + 10).map(async (expected) => {
            const started = performance.now();
            const reply = await send(expected.path, { headers: expected.headers });
            took.push(performance.now() - started);
            assertLocalAnswer(reply, expected);
          }),
        );
      }
      took.sort((a, b) => a - b);
      const at = (q: number): string => (took[Math.min(took.length - 1, Math.floor(q * took.length))] ?? 0).toFixed(1);
      t.diagnostic(`latency ms: p50 ${at(0.5)}, p99 ${at(0.99)}, max ${at(1)}`);
    });
  });
});
