import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { RequestListener } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import type { TLSSocket } from 'node:tls';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { KubeConfig } from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';

import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { ApiserverEndpoint, ApiserverObservation, ClusterModel, LocalOnlyGroupVersion } from '../../src/model/cluster.js';
import { peerStanding } from '../../src/model/liveness.js';
import { ensureSandboxPki, type SandboxPki } from '../../src/sandbox/pki.js';
import { HttpTransportError, createApiserverHttpsTransport, type HttpResponse, type HttpTransport } from '../../src/sources/apiserverHttp.js';
import { ClusterObserver, type ClusterObserverSources, type DiscoverySource, type WatchSource } from '../../src/sources/clusterObserver.js';
import { DiscoveryFetcher, type DiscoveryUpdate } from '../../src/sources/discoveryFetcher.js';
import { AGGREGATED_DISCOVERY_ACCEPT } from '../../src/sources/discoveryReads.js';
import { servedSetFromDiscovery } from '../../src/model/servedSet.js';
import { LeaseWatcher, type LeaseEvent } from '../../src/sources/leaseWatcher.js';
import type { ListResult, ListWatchClient, WatchEvent } from '../../src/sources/listWatch.js';
import { APISERVICE_PATH, CRD_PATH, LocalOnlyWatcher } from '../../src/sources/localOnlyWatcher.js';
import type { TimerHandle, Timers } from '../../src/sources/runtime.js';

// ---------------------------------------------------------------- helpers

/** Let pending promise callbacks and I/O callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** A clock and timers that only move when the test says so. */
class FakeTime implements Timers {
  now = Date.parse('2025-01-01T00:00:00Z');
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; callback: () => void }>();
  readonly clock = (): number => this.now;

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { at: this.now + Math.max(0, ms), callback });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }

  pendingTimers(): number {
    return this.timers.size;
  }

  /** Move time forward, firing due timers in order and letting promises settle after each. */
  async advance(ms: number): Promise<void> {
    const target = this.now + ms;
    await settle();
    for (;;) {
      let dueId: number | undefined;
      let dueAt = Number.POSITIVE_INFINITY;
      for (const [id, t] of this.timers) {
        if (t.at <= target && t.at < dueAt) {
          dueAt = t.at;
          dueId = id;
        }
      }
      if (dueId === undefined) break;
      const timer = this.timers.get(dueId);
      this.timers.delete(dueId);
      this.now = dueAt;
      timer?.callback();
      await settle();
    }
    this.now = target;
    await settle();
  }
}

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

function captureLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
  return { logger, lines };
}

const WARN = 40;
const INFO = 30;

async function syncErrors(metrics: Metrics, type: string): Promise<number> {
  const data = await metrics.peerDiscoverySyncErrors.get();
  return data.values.find((v) => v.labels.type === type)?.value ?? 0;
}

const ENDPOINT_A: ApiserverEndpoint = { name: 'a', hostname: 'host-a', address: { host: '127.0.0.1', port: 6443 } };
const ENDPOINT_B: ApiserverEndpoint = { name: 'b', hostname: 'host-b', address: { host: '127.0.0.2', port: 6443 } };

function discoveryBody(groups: Array<{ name: string; resource: string }>): string {
  return JSON.stringify({
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items: groups.map((g) => ({
      metadata: g.name === '' ? { creationTimestamp: null } : { name: g.name },
      versions: [{ version: 'v1', resources: [{ resource: g.resource, scope: 'Namespaced', verbs: ['get', 'list'] }] }],
    })),
  });
}

const CORE_BODY = discoveryBody([{ name: '', resource: 'pods' }]);

/**
 * /apis with batch (good), and widgets.example.com listing a good resource
 * next to one with an unknown scope and one named "" (what kube-aggregator
 * copies from an extension server without checking it).
 */
function malformedApisBody(options: { withApps?: boolean } = {}): string {
  const good = JSON.parse(discoveryBody([{ name: 'batch', resource: 'jobs' }, ...(options.withApps ? [{ name: 'apps', resource: 'deployments' }] : [])])) as {
    items: unknown[];
  };
  good.items.push({
    metadata: { name: 'widgets.example.com' },
    versions: [
      {
        version: 'v1',
        resources: [
          { resource: 'widgets', scope: 'Namespaced', verbs: ['get'] },
          { resource: 'gadgets', scope: 'Global', verbs: ['get'] },
          { resource: '', scope: 'Namespaced', verbs: ['get'] },
        ],
      },
    ],
  });
  return JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, ...good });
}
const APIS_BODY = discoveryBody([{ name: 'batch', resource: 'jobs' }]);

type Responder = (path: string, headers: Record<string, string>) => HttpResponse | Error;

const OPENAPI_INDEX = {
  paths: { 'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=A1' }, 'apis/batch/v1': { serverRelativeURL: '/openapi/v3/apis/batch/v1?hash=B1' } },
};

/**
 * OPENAPI_INDEX plus an entry without a serverRelativeURL (dropped) and one
 * whose group is not a DNS-1123 subdomain (kept as listed, never taken from
 * this apiserver as a peer).
 */
function malformedOpenApiIndex(options: { withApps?: boolean } = {}) {
  return {
    paths: {
      ...OPENAPI_INDEX.paths,
      ...(options.withApps ? { 'apis/apps/v1': { serverRelativeURL: '/openapi/v3/apis/apps/v1?hash=D1' } } : {}),
      'apis/widgets.example.com/v1': { serverRelativeURL: null },
      'apis/Bad_Group/v1': { serverRelativeURL: '/openapi/v3/apis/Bad_Group/v1?hash=C1' },
    },
  };
}

/** Discovery calls go to `respond` (and are recorded); `/openapi/v3` and `/readyz` have their own responders. */
class FakeTransport implements HttpTransport {
  readonly calls: Array<{ path: string; headers: Record<string, string> }> = [];
  readonly responses: Array<{ path: string; etag: string | undefined }> = [];
  openApiCalls = 0;
  respondOpenApi: () => HttpResponse | Error = () => ({ status: 200, body: JSON.stringify(OPENAPI_INDEX) });
  respondReadyz: () => HttpResponse | Error = () => ({ status: 200, body: 'ok' });
  closed = false;
  constructor(public respond: Responder) {}
  async get(path: string, headers: Record<string, string>): Promise<HttpResponse> {
    if (path === '/readyz') {
      const answer = this.respondReadyz();
      if (answer instanceof Error) throw answer;
      return answer;
    }
    if (path === '/openapi/v3') {
      this.openApiCalls++;
      const answer = this.respondOpenApi();
      if (answer instanceof Error) throw answer;
      return answer;
    }
    this.calls.push({ path, headers: { ...headers } });
    const answer = this.respond(path, headers);
    if (answer instanceof Error) throw answer;
    this.responses.push({ path, etag: answer.etag });
    return answer;
  }
  close(): void {
    this.closed = true;
  }
}

/** Serves /api and /apis with ETags and honours If-None-Match, like an apiserver. */
function apiserverResponder(docs: { core: string; apis: string }): Responder {
  return (p, headers) => {
    const body = p === '/api' ? docs.core : docs.apis;
    const etag = `"${p}-${body.length}-${body.includes('apps') ? 'apps' : 'x'}"`;
    if (headers['If-None-Match'] === etag) return { status: 304, body: '' };
    return { status: 200, etag, body };
  };
}

function newFetcher(transport: HttpTransport, time: FakeTime, options: { logger?: Logger; metrics?: Metrics } = {}) {
  const updates: DiscoveryUpdate[] = [];
  const metrics = options.metrics ?? createMetrics();
  const fetcher = new DiscoveryFetcher({
    endpoint: ENDPOINT_A,
    transport,
    onUpdate: (u) => updates.push(u),
    logger: options.logger ?? pino({ level: 'silent' }),
    metrics,
    timers: time,
    intervalMs: 1000,
  });
  return { fetcher, updates, metrics };
}

// ---------------------------------------------------------------- discovery fetcher

describe('DiscoveryFetcher', () => {
  test('first poll sends the aggregated discovery Accept and no If-None-Match', async () => {
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, new FakeTime());
    await fetcher.start();
    fetcher.stop();
    assert.deepEqual(transport.calls.map((c) => c.path).sort(), ['/api', '/apis']);
    for (const call of transport.calls) {
      assert.equal(call.headers['Accept'], AGGREGATED_DISCOVERY_ACCEPT);
      assert.equal('If-None-Match' in call.headers, false);
    }
  });

  test('the next poll sends the last ETag of each document as If-None-Match', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    const firstEtags = new Map(transport.responses.map((r) => [r.path, r.etag]));
    await time.advance(1000);
    fetcher.stop();
    const second = transport.calls.slice(2);
    assert.equal(second.length, 2);
    for (const call of second) assert.equal(call.headers['If-None-Match'], firstEtags.get(call.path));
  });

  test('a 304 keeps the discovery and emits no update', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(3000);
    fetcher.stop();
    assert.equal(transport.calls.length, 8, 'four polls');
    assert.equal(updates.length, 1, 'only the first poll changed anything');
    assert.equal(fetcher.current().reachable, true);
    assert.equal(fetcher.current().discovery?.groups.items[0]?.metadata.name, 'batch');
  });

  test('a changed document is emitted with its new ETag', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: APIS_BODY };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    docs.apis = discoveryBody([{ name: 'apps', resource: 'deployments' }]);
    await time.advance(1000);
    fetcher.stop();
    assert.equal(updates.length, 2);
    assert.equal(updates[1]?.discovery?.groups.items[0]?.metadata.name, 'apps');
    assert.notEqual(updates[1]?.etag, updates[0]?.etag);
  });

  test('a 200 with an unchanged ETag emits no update', async () => {
    const time = new FakeTime();
    // A server that ignores If-None-Match but keeps its ETag.
    const transport = new FakeTransport((p) => ({ status: 200, etag: `"${p}"`, body: p === '/api' ? CORE_BODY : APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(2000);
    fetcher.stop();
    assert.equal(updates.length, 1);
  });

  test('a failed poll keeps the last good discovery and marks the apiserver unreachable', async () => {
    const time = new FakeTime();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const transport = new FakeTransport(good);
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    const lastGood = updates[0];
    transport.respond = () => new HttpTransportError('fetch', 'connect ECONNREFUSED');
    await time.advance(1000);
    fetcher.stop();
    assert.equal(updates.length, 2);
    assert.equal(updates[1]?.reachable, false);
    assert.equal(updates[1]?.discovery, lastGood?.discovery);
    assert.equal(updates[1]?.etag, lastGood?.etag);
  });

  test('each poll reads the OpenAPI v3 index and carries it in the discovery', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(1000);
    fetcher.stop();
    assert.equal(transport.openApiCalls, 2);
    assert.deepEqual(updates[0]?.discovery?.openapi, OPENAPI_INDEX);
    assert.equal(updates.length, 1, 'an unchanged index emits nothing');
  });

  test('a changed OpenAPI v3 index is emitted in a new discovery object', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    const changed = { paths: { ...OPENAPI_INDEX.paths, 'apis/apps/v1': { serverRelativeURL: '/openapi/v3/apis/apps/v1?hash=C1' } } };
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(changed) });
    await time.advance(1000);
    fetcher.stop();
    assert.equal(updates.length, 2);
    assert.notEqual(updates[1]?.discovery, updates[0]?.discovery);
    assert.deepEqual(updates[1]?.discovery?.openapi, changed);
  });

  test('a failing OpenAPI v3 index read keeps the last good index, counts a sync error and leaves the apiserver reachable', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates, metrics } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondOpenApi = () => ({ status: 200, body: '{"swagger": "2.0"}' });
    await time.advance(1000);
    transport.respondOpenApi = () => new HttpTransportError('fetch', 'connection reset');
    await time.advance(1000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    assert.equal(await syncErrors(metrics, 'fetch'), 1);
    assert.equal(fetcher.current().reachable, true);
    assert.deepEqual(fetcher.current().discovery?.openapi, OPENAPI_INDEX);
    assert.equal(updates.length, 1);
  });

  test('an unreadable OpenAPI v3 index body counts one parse error per distinct body, not one per poll', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondOpenApi = () => ({ status: 200, body: '<html>oops</html>' });
    await time.advance(5000);
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    transport.respondOpenApi = () => ({ status: 200, body: '<html>oops again</html>' });
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 2);
  });

  test('a malformed OpenAPI v3 index entry drops only that entry: the rest of the index is used', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(malformedOpenApiIndex()) });
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    fetcher.stop();
    assert.equal(updates[0]?.reachable, true);
    assert.deepEqual(updates[0]?.discovery?.openapi, {
      paths: { ...OPENAPI_INDEX.paths, 'apis/Bad_Group/v1': { serverRelativeURL: '/openapi/v3/apis/Bad_Group/v1?hash=C1' } },
    });
  });

  test('malformed OpenAPI v3 index entries are warned about once per apiserver and entry, not at every poll', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(malformedOpenApiIndex()) });
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    await time.advance(3000);
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(malformedOpenApiIndex({ withApps: true })) });
    await time.advance(3000);
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.deepEqual(warnings.map((w) => [w['apiserver'], w['path'], w['entry']]).sort(), [
      ['a', '/openapi/v3', 'apis/Bad_Group/v1'],
      ['a', '/openapi/v3', 'apis/widgets.example.com/v1'],
    ]);
  });

  test('an OpenAPI v3 index with malformed entries counts one parse sync error per index change, none per poll', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(malformedOpenApiIndex()) });
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(5000);
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(malformedOpenApiIndex({ withApps: true })) });
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 2);
  });

  test('each poll reads /readyz: a failing one is emitted as not ready, its recovery as ready', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondReadyz = () => ({ status: 500, body: '[-]shutdown failed: reason withheld' });
    await time.advance(1000);
    await time.advance(1000);
    transport.respondReadyz = () => ({ status: 200, body: 'ok' });
    await time.advance(1000);
    fetcher.stop();
    assert.deepEqual(
      updates.map((u) => [u.reachable, u.ready]),
      [
        [true, true],
        [true, false],
        [true, true],
      ],
    );
  });

  test('while /readyz fails, polls come four times as often, so readiness is seen within a quarter interval', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondReadyz = () => ({ status: 503, body: '' });
    await time.advance(1000);
    const before = transport.calls.length;
    await time.advance(1000);
    fetcher.stop();
    assert.equal((transport.calls.length - before) / 2, 4, 'polls (each reads /api and /apis) in one interval');
  });

  test('a /readyz that cannot be read keeps the last answer and does not make the apiserver unreachable', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondReadyz = () => new HttpTransportError('timeout', 'no complete response within 2000 ms');
    await time.advance(1000);
    fetcher.stop();
    assert.equal(updates.length, 1);
    assert.deepEqual([fetcher.current().reachable, fetcher.current().ready], [true, true]);
  });

  test('repeated failures log one warning and the recovery logs once', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const transport = new FakeTransport(good);
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    transport.respond = () => new HttpTransportError('timeout', 'no complete response within 2000 ms');
    await time.advance(5000);
    transport.respond = good;
    await time.advance(3000);
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.['errorType'], 'timeout');
    assert.equal(warnings[0]?.['apiserver'], 'a');
    assert.equal(lines.filter((l) => l.level === INFO && /recovered/.test(l.msg)).length, 1);
  });

  test('every failed poll counts apiserver_peer_discovery_sync_errors_total by type', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(() => new HttpTransportError('timeout', 'slow'));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(2000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'timeout'), 3);
  });

  test('an error status counts a status error per document and leaves the apiserver reachable: it answered', async () => {
    const transport = new FakeTransport(() => ({ status: 403, body: '{"kind":"Status","message":"forbidden: User cannot get path /apis"}' }));
    const { fetcher, metrics, updates } = newFetcher(transport, new FakeTime());
    await fetcher.start();
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'status'), 2, 'one for /api, one for /apis');
    assert.equal(updates[0]?.reachable, true);
    assert.equal(updates[0]?.discovery, undefined);
  });

  test('a 5xx after a good read keeps the last good discovery and the apiserver reachable', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    const lastGood = updates[0]?.discovery;
    transport.respond = () => ({ status: 503, body: 'try later' });
    await time.advance(3000);
    fetcher.stop();
    assert.equal(updates.length, 1, 'nothing changed for the model');
    assert.equal(fetcher.current().reachable, true);
    assert.equal(fetcher.current().discovery, lastGood);
  });

  test('a body that is not an APIGroupDiscoveryList keeps the last good document and the apiserver reachable', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: APIS_BODY };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    docs.apis = '{"kind":"APIGroupList","apiVersion":"v1","groups":[]}';
    await time.advance(1000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    assert.equal(fetcher.current().reachable, true);
    assert.equal(fetcher.current().discovery?.groups.items[0]?.metadata.name, 'batch');
  });

  test('an unreadable body counts one parse error per distinct body, not one per poll', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: '<html>oops</html>' };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(5000);
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    docs.apis = '<html>oops again</html>';
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 2);
  });

  test('an unreadable body is warned about once, and its recovery logged once', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const docs = { core: CORE_BODY, apis: 'not json' };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    await time.advance(5000);
    docs.apis = APIS_BODY;
    await time.advance(3000);
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.['errorType'], 'parse');
    assert.equal(warnings[0]?.['path'], '/apis');
    assert.equal(lines.filter((l) => l.level === INFO && /readable again/.test(l.msg)).length, 1);
  });

  test('a body over the size limit keeps the last good document and leaves the apiserver reachable: it answered', async () => {
    const time = new FakeTime();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const transport = new FakeTransport(good);
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    const lastGood = updates[0]?.discovery;
    transport.respond = (p, headers) =>
      p === '/apis' ? new HttpTransportError('too_large', 'GET /apis: HTTP 200 with a response body larger than 33554432 bytes') : good(p, headers);
    await time.advance(3000);
    fetcher.stop();
    assert.equal(updates.length, 1, 'nothing changed for the model');
    assert.equal(fetcher.current().reachable, true);
    assert.equal(fetcher.current().discovery, lastGood);
  });

  test('a body over the size limit counts one too_large sync error until the document reads well again, not one per poll', async () => {
    const time = new FakeTime();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const tooLarge: Responder = (p, headers) =>
      p === '/apis' ? new HttpTransportError('too_large', 'GET /apis: HTTP 200 with a response body larger than 33554432 bytes') : good(p, headers);
    const transport = new FakeTransport(tooLarge);
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(5000);
    assert.equal(await syncErrors(metrics, 'too_large'), 1);
    transport.respond = good;
    await time.advance(1000);
    transport.respond = tooLarge;
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'too_large'), 2, 'once more after it read well in between');
    assert.equal(await syncErrors(metrics, 'fetch'), 0);
  });

  test('a body over the size limit is warned about once, not at every poll', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const transport = new FakeTransport((p, headers) =>
      p === '/api' ? new HttpTransportError('too_large', 'GET /api: HTTP 200 with a response body larger than 33554432 bytes') : good(p, headers),
    );
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    await time.advance(5000);
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.['errorType'], 'too_large');
    assert.equal(warnings[0]?.['path'], '/api');
  });

  test('an OpenAPI v3 index over the size limit keeps the last good index and counts one too_large sync error, not one per poll', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondOpenApi = () => new HttpTransportError('too_large', 'GET /openapi/v3: HTTP 200 with a response body larger than 33554432 bytes');
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'too_large'), 1);
    assert.equal(fetcher.current().reachable, true);
    assert.deepEqual(fetcher.current().discovery?.openapi, OPENAPI_INDEX);
  });

  test('before any good read, an unreadable document leaves the apiserver reachable without discovery', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: '[]' }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    fetcher.stop();
    assert.deepEqual(
      updates.map((u) => [u.reachable, u.discovery]),
      [[true, undefined]],
    );
  });

  test('a new /api is used while /apis is unreadable, with the last good /apis', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: APIS_BODY };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    docs.apis = 'garbage';
    docs.core = discoveryBody([{ name: '', resource: 'configmaps' }]);
    await time.advance(1000);
    fetcher.stop();
    assert.equal(updates.length, 2);
    assert.equal(updates[1]?.discovery?.core.items[0]?.versions[0]?.resources[0]?.resource, 'configmaps');
    assert.equal(updates[1]?.discovery?.groups, updates[0]?.discovery?.groups);
  });

  test('a malformed entry drops only that entry: the discovery keeps the rest and lists the entry as dropped', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: malformedApisBody() }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    fetcher.stop();
    const discovery = updates[0]?.discovery;
    assert.ok(discovery);
    assert.equal(updates[0]?.reachable, true);
    assert.deepEqual(
      servedSetFromDiscovery(discovery).map((r) => `${r.group}/${r.resource}`),
      ['/pods', 'batch/jobs', 'widgets.example.com/widgets'],
    );
    assert.deepEqual(
      discovery.dropped?.map((d) => [d.document, d.group, d.version, d.resource, d.kind]),
      [
        ['/apis', 'widgets.example.com', 'v1', 'gadgets', 'malformed'],
        ['/apis', 'widgets.example.com', 'v1', '', 'malformed'],
      ],
    );
  });

  test('a malformed entry is warned about once per apiserver and entry: not at every poll, nor when the document changes around it', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const docs = { core: CORE_BODY, apis: malformedApisBody() };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    await time.advance(5000);
    docs.apis = malformedApisBody({ withApps: true });
    await time.advance(5000);
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.deepEqual(warnings.map((w) => [w['apiserver'], w['path'], w['entry']]).sort(), [
      ['a', '/apis', 'group "widgets.example.com" version "v1" resource ""'],
      ['a', '/apis', 'group "widgets.example.com" version "v1" resource "gadgets"'],
    ]);
    assert.match(String(warnings[0]?.['reason']), /Global|DNS-1123 label/);
  });

  test('a malformed entry that was fixed and comes back is warned about again', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const docs = { core: CORE_BODY, apis: malformedApisBody() };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    docs.apis = APIS_BODY;
    await time.advance(1000);
    docs.apis = malformedApisBody();
    await time.advance(1000);
    fetcher.stop();
    assert.equal(lines.filter((l) => l.level >= WARN).length, 4);
  });

  test('a document with malformed entries counts one parse sync error per document change, none per poll', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: malformedApisBody() };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(5000);
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    docs.apis = malformedApisBody({ withApps: true });
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 2);
  });

  test('a valid name too long to route is logged at info and not counted as a sync error', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const long = 'a'.repeat(60);
    const transport = new FakeTransport(
      apiserverResponder({
        core: CORE_BODY,
        apis: discoveryBody([
          { name: 'batch', resource: 'jobs' },
          { name: 'x.example.com', resource: long },
        ]),
      }),
    );
    const { fetcher, metrics } = newFetcher(transport, time, { logger });
    await fetcher.start();
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 0);
    assert.equal(lines.filter((l) => l.level >= WARN).length, 0);
    assert.equal(lines.filter((l) => l.level === INFO && /not routable/.test(l.msg)).length, 1);
    assert.equal(fetcher.current().discovery?.dropped?.[0]?.kind, 'unroutable');
  });

  test('many new malformed entries are warned about one by one up to 20, the rest in one line', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const groups = [{ name: 'batch', resource: 'jobs' }, ...Array.from({ length: 30 }, (_, i) => ({ name: `g${i}.example.com`, resource: `Bad${i}` }))];
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: discoveryBody(groups) }));
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.equal(warnings.length, 21);
    assert.equal(warnings.at(-1)?.['more'], 10);
  });

  test('refreshNow polls at once instead of waiting for the interval', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    await fetcher.refreshNow();
    fetcher.stop();
    assert.equal(transport.calls.length, 4);
    assert.equal(time.now, new FakeTime().now, 'no time passed');
  });

  test('stop closes the transport and leaves no timer behind', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    fetcher.stop();
    await time.advance(5000);
    assert.equal(transport.closed, true);
    assert.equal(transport.calls.length, 2);
    assert.equal(time.pendingTimers(), 0);
  });
});

// ---------------------------------------------------------------- https transport (local server)

describe('apiserver HTTPS transport', () => {
  let dir: string;
  let pki: SandboxPki;
  let kubeConfig: KubeConfig;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'mvproxy-sources-'));
    pki = await ensureSandboxPki(dir, { apiserverNames: ['a'] });
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://kubeconfig-server.invalid:1', caFile: pki.peerCa, skipTLSVerify: false }],
      users: [{ name: 'u', certFile: pki.admin.cert, keyFile: pki.admin.key }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function startServer(handler: RequestListener) {
    const servingPair = pki.serving['a'];
    assert.ok(servingPair);
    const server = https.createServer(
      {
        key: await readFile(servingPair.key),
        cert: await readFile(servingPair.cert),
        ca: await readFile(pki.ca.cert),
        requestCert: true,
        rejectUnauthorized: true,
      },
      handler,
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    return { server, port };
  }

  test('dials the configured address with the kubeconfig client certificate and returns status, ETag and body', async () => {
    let seen: { accept?: string; ifNoneMatch?: string; clientCn?: string; path?: string } = {};
    const { server, port } = await startServer((req, res) => {
      const socket = req.socket as TLSSocket;
      seen = {
        accept: req.headers.accept,
        ifNoneMatch: req.headers['if-none-match'] as string | undefined,
        clientCn: String(socket.getPeerCertificate().subject?.CN),
        path: req.url,
      };
      res.writeHead(200, { ETag: '"abc"', 'Content-Type': 'application/json' });
      res.end(APIS_BODY);
    });
    const transport = createApiserverHttpsTransport(kubeConfig, { host: '127.0.0.1', port });
    try {
      const response = await transport.get('/apis', { Accept: AGGREGATED_DISCOVERY_ACCEPT, 'If-None-Match': '"old"' }, new AbortController().signal);
      assert.deepEqual(response, { status: 200, etag: '"abc"', body: APIS_BODY });
      assert.deepEqual(seen, { accept: AGGREGATED_DISCOVERY_ACCEPT, ifNoneMatch: '"old"', clientCn: 'mvproxy-admin', path: '/apis' });
    } finally {
      transport.close();
      server.close();
    }
  });

  test('a body over the size limit gives a too_large error: the apiserver answered', async () => {
    const { server, port } = await startServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('x'.repeat(4096));
    });
    const transport = createApiserverHttpsTransport(kubeConfig, { host: '127.0.0.1', port }, { maxBodyBytes: 1024 });
    try {
      await assert.rejects(
        transport.get('/apis', {}, new AbortController().signal),
        (err: unknown) => err instanceof HttpTransportError && err.kind === 'too_large' && /larger than 1024 bytes/.test(err.message),
      );
    } finally {
      transport.close();
      server.closeAllConnections();
      server.close();
    }
  });

  test('a server that does not answer in time gives a timeout error', async () => {
    const { server, port } = await startServer(() => {
      // never answers
    });
    const transport = createApiserverHttpsTransport(kubeConfig, { host: '127.0.0.1', port }, { timeoutMs: 200 });
    try {
      await assert.rejects(
        transport.get('/api', {}, new AbortController().signal),
        (err: unknown) => err instanceof HttpTransportError && err.kind === 'timeout',
      );
    } finally {
      transport.close();
      server.closeAllConnections();
      server.close();
    }
  });
});

// ---------------------------------------------------------------- list/watch fake

interface OpenWatch {
  path: string;
  query: Record<string, string>;
  send(event: WatchEvent): void;
  end(err?: Error): void;
}

class FakeListWatch implements ListWatchClient {
  readonly lists: Array<{ path: string; query: Record<string, string> }> = [];
  readonly watches: OpenWatch[] = [];
  readonly objects = new Map<string, unknown[]>();
  resourceVersion = 1;

  async list(p: string, query: Record<string, string>): Promise<ListResult> {
    this.lists.push({ path: p, query });
    return { resourceVersion: String(this.resourceVersion), items: structuredClone(this.objects.get(p) ?? []) };
  }

  watch(p: string, query: Record<string, string>, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      let open = true;
      const end = (err?: Error): void => {
        if (!open) return;
        open = false;
        if (err) reject(err);
        else resolve();
      };
      signal.addEventListener('abort', () => end(), { once: true });
      this.watches.push({
        path: p,
        query,
        end,
        send: (event) => {
          if (!open) throw new Error('watch is closed');
          try {
            onEvent(event);
          } catch (err) {
            end(err instanceof Error ? err : new Error(String(err)));
          }
        },
      });
    });
  }

  /** The latest watch on a path. */
  watchOn(p: string): OpenWatch {
    const w = [...this.watches].reverse().find((x) => x.path === p);
    assert.ok(w, `no watch on ${p}`);
    return w;
  }
}

const LEASES_PATH = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';

/** An identity lease as the apiserver writes it (MicroTime with microseconds). */
function identityLease(name: string, hostname: string, holderIdentity: string, renewTimeMs: number, leaseDurationSeconds = 3600) {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name,
      namespace: 'kube-system',
      resourceVersion: '10',
      labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': hostname },
    },
    spec: { holderIdentity, leaseDurationSeconds, renewTime: new Date(renewTimeMs).toISOString().replace('Z', '123Z') },
  };
}

describe('LeaseWatcher', () => {
  function newLeaseWatcher(time: FakeTime, client: FakeListWatch) {
    const events: LeaseEvent[] = [];
    const watcher = new LeaseWatcher({
      client,
      onEvent: (e) => events.push(e),
      logger: pino({ level: 'silent' }),
      clock: time.clock,
      timers: time,
      expiryCheckIntervalMs: 5000,
      expirySlackMs: 30_000,
    });
    return { watcher, events };
  }

  test('lists identity leases in kube-system by label selector', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    const { watcher } = newLeaseWatcher(time, client);
    await watcher.start();
    watcher.stop();
    assert.equal(client.lists[0]?.path, LEASES_PATH);
    assert.equal(client.lists[0]?.query['labelSelector'], 'apiserver.kubernetes.io/identity=kube-apiserver');
  });

  test('a lease is reported present for its kubernetes.io/hostname with name, holder and renew time', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'apiserver-x1_uid1', time.now - 2000)]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    watcher.stop();
    assert.deepEqual(events, [
      { type: 'present', hostname: 'host-a', lease: { name: 'apiserver-x1', holderIdentity: 'apiserver-x1_uid1', renewTime: time.now - 2000 } },
    ]);
  });

  test('a deleted lease is reported gone at the time of deletion', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    const lease = identityLease('apiserver-x1', 'host-a', 'apiserver-x1_uid1', time.now);
    client.objects.set(LEASES_PATH, [lease]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    await time.advance(1234);
    client.watchOn(LEASES_PATH).send({ type: 'DELETED', object: lease });
    watcher.stop();
    assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: time.now, reason: 'deleted' });
  });

  test('a lease past renewTime + leaseDurationSeconds is reported gone (expired) by the periodic check', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    const renewedAt = time.now;
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', renewedAt, 60)]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    await time.advance(60_000 + 25_000); // within the slack: still present
    assert.equal(events.length, 1);
    await time.advance(10_000);
    watcher.stop();
    assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: renewedAt + 60_000, reason: 'expired' });
  });

  test('a renewal with a new holderIdentity is reported present with the new holder', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', time.now)]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    client.watchOn(LEASES_PATH).send({ type: 'MODIFIED', object: identityLease('apiserver-x1', 'host-a', 'h2', time.now + 1000) });
    watcher.stop();
    const last = events.at(-1);
    assert.equal(last?.type === 'present' ? last.lease.holderIdentity : undefined, 'h2');
  });

  test('410 Gone on the watch re-lists and reports leases deleted meanwhile', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', time.now), identityLease('apiserver-x2', 'host-b', 'h2', time.now)]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x2', 'host-b', 'h2', time.now)]);
    client.resourceVersion = 50;
    client.watchOn(LEASES_PATH).send({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } });
    await settle();
    watcher.stop();
    assert.equal(client.lists.length, 2);
    assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: time.now, reason: 'deleted' });
    assert.equal(client.watches.at(-1)?.query['resourceVersion'], '50');
  });

  test('a failed list is retried with backoff', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    let failures = 2;
    const realList = client.list.bind(client);
    client.list = async (p, q) => {
      if (failures-- > 0) {
        client.lists.push({ path: p, query: q });
        throw new Error('connect ECONNREFUSED');
      }
      return realList(p, q);
    };
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', time.now)]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    assert.equal(events.length, 0);
    await time.advance(499);
    assert.equal(client.lists.length, 1, 'waits the initial backoff');
    await time.advance(1 + 1000);
    watcher.stop();
    assert.equal(client.lists.length, 3);
    assert.equal(events[0]?.type, 'present');
  });
});

// ---------------------------------------------------------------- local-only watcher

function crd(name: string, group: string, versions: Array<{ name: string; served: boolean }>) {
  return { metadata: { name, resourceVersion: '5' }, spec: { group, names: { plural: name.split('.')[0] }, scope: 'Namespaced', versions } };
}

function apiService(group: string, version: string, service: { namespace: string; name: string } | null) {
  return { metadata: { name: `${version}.${group}`, resourceVersion: '6' }, spec: { group, version, service, groupPriorityMinimum: 100, versionPriority: 10 } };
}

describe('LocalOnlyWatcher', () => {
  function newLocalOnlyWatcher(time: FakeTime, client: FakeListWatch, graceMs = 300_000) {
    const changes: LocalOnlyGroupVersion[][] = [];
    const watcher = new LocalOnlyWatcher({
      client,
      onChange: (gvs) => changes.push(gvs),
      logger: pino({ level: 'silent' }),
      clock: time.clock,
      timers: time,
      graceMs,
    });
    return { watcher, changes };
  }

  test('served CRD versions and aggregated APIServices are local-only; unserved versions and local APIServices are not', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    client.objects.set(CRD_PATH, [
      crd('widgets.example.com', 'example.com', [
        { name: 'v1', served: true },
        { name: 'v1alpha1', served: false },
      ]),
    ]);
    client.objects.set(APISERVICE_PATH, [
      apiService('metrics.k8s.io', 'v1beta1', { namespace: 'kube-system', name: 'metrics-server' }),
      apiService('apps', 'v1', null),
    ]);
    const { watcher } = newLocalOnlyWatcher(time, client);
    await watcher.start();
    watcher.stop();
    assert.deepEqual(watcher.groupVersions(), [
      { group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' },
      { group: 'metrics.k8s.io', version: 'v1beta1', source: 'APIService' },
    ]);
  });

  test('a deleted CRD stays local-only until the grace period ends, then drops', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    const widgets = crd('widgets.example.com', 'example.com', [{ name: 'v1', served: true }]);
    client.objects.set(CRD_PATH, [widgets]);
    const { watcher, changes } = newLocalOnlyWatcher(time, client, 300_000);
    await watcher.start();
    const deletedAt = time.now;
    client.watchOn(CRD_PATH).send({ type: 'DELETED', object: widgets });
    assert.deepEqual(changes.at(-1), [{ group: 'example.com', version: 'v1', source: 'CustomResourceDefinition', excludedUntil: deletedAt + 300_000 }]);
    await time.advance(299_999);
    assert.equal(changes.at(-1)?.length, 1, 'still excluded just before the end');
    await time.advance(1);
    watcher.stop();
    assert.deepEqual(changes.at(-1), []);
  });

  test('a CRD re-created during the grace period is local-only again without excludedUntil', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    const widgets = crd('widgets.example.com', 'example.com', [{ name: 'v1', served: true }]);
    client.objects.set(CRD_PATH, [widgets]);
    const { watcher } = newLocalOnlyWatcher(time, client);
    await watcher.start();
    client.watchOn(CRD_PATH).send({ type: 'DELETED', object: widgets });
    await time.advance(10_000);
    client.watchOn(CRD_PATH).send({ type: 'ADDED', object: widgets });
    await time.advance(600_000);
    watcher.stop();
    assert.deepEqual(watcher.groupVersions(), [{ group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' }]);
  });
});

// ---------------------------------------------------------------- cluster observer

class FakeDiscoverySource implements DiscoverySource {
  refreshes = 0;
  stopped = false;
  constructor(
    readonly endpoint: ApiserverEndpoint,
    readonly emit: (update: DiscoveryUpdate) => void,
  ) {}
  async start(): Promise<void> {}
  stop(): void {
    this.stopped = true;
  }
  async refreshNow(): Promise<void> {
    this.refreshes++;
  }
}

class FakeWatchSource<E> implements WatchSource {
  stopped = false;
  constructor(readonly emit: (event: E) => void) {}
  async start(): Promise<void> {}
  stop(): void {
    this.stopped = true;
  }
}

function newObserver(time: FakeTime, options: { leaseGraceMs?: number } = {}) {
  const fetchers = new Map<string, FakeDiscoverySource>();
  let leases: FakeWatchSource<LeaseEvent> | undefined;
  let localOnly: FakeWatchSource<LocalOnlyGroupVersion[]> | undefined;
  const sources: ClusterObserverSources = {
    discovery: (endpoint, onUpdate) => {
      const f = new FakeDiscoverySource(endpoint, onUpdate);
      fetchers.set(endpoint.name, f);
      return f;
    },
    leases: (onEvent) => (leases = new FakeWatchSource(onEvent)),
    localOnly: (onChange) => (localOnly = new FakeWatchSource(onChange)),
  };
  const observer = new ClusterObserver({
    kubeConfig: new KubeConfig(),
    endpoints: [ENDPOINT_A, ENDPOINT_B],
    logger: pino({ level: 'silent' }),
    metrics: createMetrics(),
    clock: time.clock,
    timers: time,
    debounceMs: 50,
    leaseGraceMs: options.leaseGraceMs ?? 300_000,
    sources,
  });
  const models: ClusterModel[] = [];
  observer.onChange((m) => models.push(m));
  assert.ok(leases && localOnly);
  return { observer, models, fetchers, leases, localOnly };
}

function parsedDiscovery() {
  const fetcherTime = new FakeTime();
  const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
  const { fetcher } = newFetcher(transport, fetcherTime);
  return fetcher.start().then(() => {
    fetcher.stop();
    const update = fetcher.current();
    assert.ok(update.discovery);
    return update;
  });
}

describe('ClusterObserver', () => {
  test('a burst of source events gives one notification', async () => {
    const time = new FakeTime();
    const { observer, models, fetchers, leases, localOnly } = newObserver(time);
    await observer.start();
    const update = await parsedDiscovery();
    fetchers.get('a')?.emit(update);
    fetchers.get('b')?.emit(update);
    leases.emit({ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-1', holderIdentity: 'h1', renewTime: time.now } });
    localOnly.emit([{ group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' }]);
    await time.advance(49);
    assert.equal(models.length, 0);
    await time.advance(1);
    observer.stop();
    assert.equal(models.length, 1);
    const model = models[0];
    assert.deepEqual(
      model?.apiservers.map((a) => a.servedSet.map((r) => `${r.group}/${r.resource}`)),
      [
        ['/pods', 'batch/jobs'],
        ['/pods', 'batch/jobs'],
      ],
    );
    assert.equal(model?.apiservers[0]?.lease?.holderIdentity, 'h1');
    assert.deepEqual(model?.localOnly, [{ group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' }]);
  });

  test('an apiserver whose discovery lists a malformed entry is reachable in the model and serves everything else', async () => {
    const time = new FakeTime();
    const { observer, models, fetchers } = newObserver(time);
    await observer.start();
    const fetcherTime = new FakeTime();
    const { fetcher } = newFetcher(new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: malformedApisBody() })), fetcherTime);
    await fetcher.start();
    fetcher.stop();
    fetchers.get('a')?.emit(fetcher.current());
    fetchers.get('b')?.emit(fetcher.current());
    await time.advance(50);
    observer.stop();
    assert.deepEqual(
      models.at(-1)?.apiservers.map((a) => [a.endpoint.name, a.reachable, a.servedSet.map((r) => `${r.group}/${r.resource}`)]),
      [
        ['a', true, ['/pods', 'batch/jobs', 'widgets.example.com/widgets']],
        ['b', true, ['/pods', 'batch/jobs', 'widgets.example.com/widgets']],
      ],
    );
  });

  test("each apiserver's readiness reaches the model as its discovery source reports it", async () => {
    const time = new FakeTime();
    const { observer, models, fetchers } = newObserver(time);
    await observer.start();
    const update = await parsedDiscovery();
    fetchers.get('a')?.emit({ ...update, ready: false });
    fetchers.get('b')?.emit({ reachable: false });
    await time.advance(50);
    observer.stop();
    assert.deepEqual(
      models.at(-1)?.apiservers.map((a) => [a.endpoint.name, a.ready]),
      [
        ['a', false],
        ['b', undefined],
      ],
    );
  });

  test('listeners hear nothing until every source made its first attempt', async () => {
    const time = new FakeTime();
    let finishFirstPoll: () => void = () => {};
    let leases: FakeWatchSource<LeaseEvent> | undefined;
    const observer = new ClusterObserver({
      kubeConfig: new KubeConfig(),
      endpoints: [ENDPOINT_A],
      logger: pino({ level: 'silent' }),
      metrics: createMetrics(),
      clock: time.clock,
      timers: time,
      sources: {
        discovery: (endpoint, onUpdate) => {
          const source = new FakeDiscoverySource(endpoint, onUpdate);
          source.start = () => new Promise<void>((resolve) => (finishFirstPoll = resolve));
          return source;
        },
        leases: (onEvent) => (leases = new FakeWatchSource(onEvent)),
        localOnly: (onChange) => new FakeWatchSource(onChange),
      },
    });
    const models: ClusterModel[] = [];
    observer.onChange((m) => models.push(m));
    const started = observer.start();
    leases?.emit({ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-1', holderIdentity: 'h1', renewTime: time.now } });
    await time.advance(1000);
    assert.equal(models.length, 0);
    finishFirstPoll();
    await started;
    await time.advance(50);
    observer.stop();
    assert.equal(models.length, 1);
    assert.equal(models[0]?.apiservers[0]?.lease?.holderIdentity, 'h1');
  });

  test("a changed holderIdentity refreshes that apiserver's discovery only", async () => {
    const time = new FakeTime();
    const { observer, fetchers, leases } = newObserver(time);
    await observer.start();
    for (const f of fetchers.values()) f.emit({ reachable: true });
    leases.emit({ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-1', holderIdentity: 'h1', renewTime: time.now } });
    leases.emit({ type: 'present', hostname: 'host-b', lease: { name: 'apiserver-2', holderIdentity: 'b1', renewTime: time.now } });
    leases.emit({ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-1', holderIdentity: 'h1', renewTime: time.now + 10_000 } });
    assert.equal(fetchers.get('a')?.refreshes, 0, 'a renewal alone does not refresh');
    leases.emit({ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-1', holderIdentity: 'h2', renewTime: time.now + 20_000 } });
    observer.stop();
    assert.equal(fetchers.get('a')?.refreshes, 1);
    assert.equal(fetchers.get('b')?.refreshes, 0);
  });

  test("a lease that disappears refreshes that apiserver's discovery", async () => {
    const time = new FakeTime();
    const { observer, fetchers, leases } = newObserver(time);
    await observer.start();
    leases.emit({ type: 'present', hostname: 'host-b', lease: { name: 'apiserver-2', holderIdentity: 'b1', renewTime: time.now } });
    const before = fetchers.get('b')?.refreshes ?? 0;
    leases.emit({ type: 'gone', hostname: 'host-b', leaseName: 'apiserver-2', goneAt: time.now, reason: 'deleted' });
    observer.stop();
    assert.equal(fetchers.get('b')?.refreshes, before + 1);
  });

  test("listeners are told when a departed apiserver's grace ends; the model keeps what it observed", async () => {
    const time = new FakeTime();
    const { observer, models, fetchers, leases } = newObserver(time, { leaseGraceMs: 300_000 });
    await observer.start();
    fetchers.get('b')?.emit({ ...(await parsedDiscovery()), reachable: false });
    leases.emit({ type: 'gone', hostname: 'host-b', leaseName: 'apiserver-2', goneAt: time.now, reason: 'deleted' });
    await time.advance(299_000);
    const within = observer.snapshot().apiservers[1];
    assert.equal(within?.servedSet.length, 2);
    assert.equal(within?.leaseGoneAt, time.now - 299_000);
    const notified = models.length;
    await time.advance(1000 + 50); // the grace period, then the debounce
    const after = models.at(-1)?.apiservers[1];
    observer.stop();
    assert.equal(models.length, notified + 1, 'listeners are told when the grace period ends');
    // Whether it still counts is peerStanding's decision (gone now), not the observer's.
    assert.equal(after?.servedSet.length, 2);
    assert.equal(peerStanding(after as ApiserverObservation, time.now, 300_000), 'gone');
  });

  test('a lease for a hostname not in the configuration adds no apiserver', async () => {
    const time = new FakeTime();
    const { observer, leases } = newObserver(time);
    await observer.start();
    leases.emit({ type: 'present', hostname: 'evil.example', lease: { name: 'apiserver-x', holderIdentity: 'x', renewTime: time.now } });
    await time.advance(100);
    const snapshot = observer.snapshot();
    observer.stop();
    assert.deepEqual(
      snapshot.apiservers.map((a) => a.endpoint),
      [ENDPOINT_A, ENDPOINT_B],
    );
    assert.equal(
      snapshot.apiservers.some((a) => a.lease !== undefined),
      false,
    );
  });

  test('stop stops every source and no notification follows', async () => {
    const time = new FakeTime();
    const { observer, models, fetchers, leases, localOnly } = newObserver(time);
    await observer.start();
    fetchers.get('a')?.emit({ reachable: true });
    observer.stop();
    await time.advance(1000);
    assert.equal(models.length, 0);
    assert.equal(leases.stopped && localOnly.stopped && [...fetchers.values()].every((f) => f.stopped), true);
    assert.equal(time.pendingTimers(), 0);
  });

  test('duplicate hostnames in the configuration are refused', () => {
    assert.throws(
      () =>
        new ClusterObserver({
          kubeConfig: new KubeConfig(),
          endpoints: [ENDPOINT_A, { ...ENDPOINT_B, hostname: ENDPOINT_A.hostname }],
          logger: pino({ level: 'silent' }),
          metrics: createMetrics(),
        }),
      /share hostname/,
    );
  });
});
