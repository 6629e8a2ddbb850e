// The access log: what the translator asks Envoy to log (only reroute and
// unavailable routes, with the route's labels), and how the access log
// server turns log entries into upstream MVP's counters, directly and over a
// real gRPC stream.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';

import type { Route } from '../../../src/generated/envoy/config/route/v3/Route.js';
import type { HTTPAccessLogEntry } from '../../../src/generated/envoy/data/accesslog/v3/HTTPAccessLogEntry.js';
import type { ResponseFlags } from '../../../src/generated/envoy/data/accesslog/v3/ResponseFlags.js';
import type { ExpressionFilter } from '../../../src/generated/envoy/extensions/access_loggers/filters/cel/v3/ExpressionFilter.js';
import type { HttpGrpcAccessLogConfig } from '../../../src/generated/envoy/extensions/access_loggers/grpc/v3/HttpGrpcAccessLogConfig.js';
import type { HttpConnectionManager } from '../../../src/generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpConnectionManager.js';
import type { StreamAccessLogsMessage } from '../../../src/generated/envoy/service/accesslog/v3/StreamAccessLogsMessage.js';
import type { StreamAccessLogsResponse__Output } from '../../../src/generated/envoy/service/accesslog/v3/StreamAccessLogsResponse.js';
import { createMetrics, type Metrics } from '../../../src/metrics.js';
import type { SidecarPlan } from '../../../src/planner/plan.js';
import { planOf } from '../../support/sidecarPlans.js';
import { AccessLogServer } from '../../../src/servers/accessLog.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../../../src/servers/grpcListen.js';
import { ACCESS_LOG_FILTER_EXPRESSION, ACCESS_LOG_NAME } from '../../../src/translator/accessLog.js';
import { translateSidecar, type TranslatorSettings } from '../../../src/translator/translator.js';
import { CONTROL_PLANE_CLUSTER } from '../../../src/xds/bootstrap.js';
import { envoyGrpc } from '../../../src/xds/protos.js';
import { validateWithEnvoy } from '../../support/validate.js';
import { throwawaySettings, unpack } from '../../support/translatorFixtures.js';

// ---------------------------------------------------------------- fixtures

const PLAN: SidecarPlan = planOf({
  node: 'a',
  local: { name: 'a', address: { host: '10.0.0.1', port: 6443 } },
  peers: [{ name: 'b', address: { host: '10.0.0.2', port: 6443 } }],
  routes: [
    { group: '', version: 'v1', resource: 'pods', subresource: 'resize', action: { kind: 'peers', peers: ['b'] } },
    { group: 'apps', version: 'v1', resource: 'deployments', action: { kind: 'unavailable', servedBy: ['c'] } },
    { group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['b'] } },
  ],
  groupDocuments: [
    { group: 'batch', version: 'v1', action: { kind: 'peers', peers: ['b'] } },
    { group: 'apps', action: { kind: 'unavailable', servedBy: ['c'] } },
  ],
});

let certDir: string;
let settings: TranslatorSettings;

before(() => {
  certDir = mkdtempSync(join(tmpdir(), 'mvproxy-accesslog-'));
  settings = throwawaySettings(certDir);
});

after(() => rmSync(certDir, { recursive: true, force: true }));

// ---------------------------------------------------------------- helpers

function hcm(): HttpConnectionManager {
  const listener = translateSidecar(PLAN, settings).listeners[0];
  return unpack<HttpConnectionManager>(
    listener?.filter_chains?.[0]?.filters?.[0]?.typed_config,
    'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
  );
}

function routes(): Route[] {
  return translateSidecar(PLAN, settings).routes[0]?.virtual_hosts?.[0]?.routes ?? [];
}

/** The mvproxy route metadata of a route as plain strings, or undefined. */
function routeLabels(route: Route): Record<string, string> | undefined {
  const fields = route.metadata?.filter_metadata?.['mvproxy']?.fields;
  if (fields === undefined) return undefined;
  return Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, value.stringValue ?? '']));
}

interface EntryOptions {
  kind?: string;
  group?: string;
  version?: string;
  resource?: string;
  code?: number;
  flags?: ResponseFlags;
  path?: string;
  routeName?: string;
  intermediate?: boolean;
  /** Leave out the custom tags (a configuration without them). */
  noTags?: boolean;
}

function entry(opts: EntryOptions = {}): HTTPAccessLogEntry {
  const tags = {
    kind: opts.kind ?? 'reroute',
    group: opts.group ?? 'batch',
    version: opts.version ?? 'v1',
    resource: opts.resource ?? 'jobs',
    subresource: '',
  };
  return {
    common_properties: {
      route_name: opts.routeName ?? `${tags.kind} ${tags.group}/${tags.version}, Resource=${tags.resource}`,
      ...(opts.noTags ? {} : { custom_tags: tags }),
      ...(opts.flags ? { response_flags: opts.flags } : {}),
      ...(opts.intermediate ? { intermediate_log_entry: true } : {}),
    },
    request: { path: opts.path ?? '/apis/batch/v1/namespaces/default/jobs/x' },
    response: { response_code: { value: opts.code ?? 200 } },
  };
}

/** An entry as grpc-js hands it to the server (the wire form). */
function decoded(e: HTTPAccessLogEntry): Parameters<AccessLogServer['record']>[0] {
  return e as Parameters<AccessLogServer['record']>[0];
}

function server(): { server: AccessLogServer; metrics: Metrics } {
  const metrics = createMetrics();
  return { server: new AccessLogServer({ logger: pino({ level: 'silent' }), metrics }), metrics };
}

async function counts(metrics: Metrics): Promise<{ rerouted: Array<Record<string, unknown>>; errors: Array<Record<string, unknown>> }> {
  const rows = (values: Array<{ labels: Record<string, unknown>; value: number }>): Array<Record<string, unknown>> =>
    values.map((v) => ({ ...v.labels, value: v.value }));
  return { rerouted: rows((await metrics.reroutedRequests.get()).values), errors: rows((await metrics.peerProxyErrors.get()).values) };
}

// ---------------------------------------------------------------- translator

describe('the access log the translator configures', () => {
  test('the connection manager streams its access log to the control-plane cluster as log mvproxy, flushed every second', () => {
    const logs = hcm().access_log ?? [];
    assert.equal(logs.length, 1);
    assert.equal(logs[0]?.name, 'envoy.access_loggers.http_grpc');
    const config = unpack<HttpGrpcAccessLogConfig>(logs[0]?.typed_config, 'envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig');
    assert.equal(config.common_config?.log_name, ACCESS_LOG_NAME);
    assert.deepEqual(config.common_config?.grpc_service, { envoy_grpc: { cluster_name: CONTROL_PLANE_CLUSTER } });
    assert.equal(config.common_config?.transport_api_version, 'V3');
    assert.deepEqual(config.common_config?.buffer_flush_interval, { seconds: 1 });
  });

  test('only routes with mvproxy route metadata are logged (a CEL filter on the route metadata)', () => {
    const filter = hcm().access_log?.[0]?.filter?.extension_filter;
    assert.equal(filter?.name, 'envoy.access_loggers.extension_filters.cel');
    const cel = unpack<ExpressionFilter>(filter?.typed_config, 'envoy.extensions.access_loggers.filters.cel.v3.ExpressionFilter');
    assert.equal(cel.expression, ACCESS_LOG_FILTER_EXPRESSION);
    assert.match(cel.expression ?? '', /xds\.route_metadata\.filter_metadata/);
  });

  test('log entries carry the route metadata as custom tags', () => {
    const config = unpack<HttpGrpcAccessLogConfig>(hcm().access_log?.[0]?.typed_config, 'envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig');
    const tags = config.common_config?.custom_tags ?? [];
    assert.deepEqual(
      tags.map((t) => t.tag),
      ['kind', 'group', 'version', 'resource', 'subresource'],
    );
    for (const tag of tags) {
      assert.deepEqual(tag.metadata?.kind, { route: {} });
      assert.deepEqual(tag.metadata?.metadata_key, { key: 'mvproxy', path: [{ key: tag.tag ?? '' }] });
    }
  });

  test('every flavour of a reroute route carries reroute metadata with its group, version and resource', () => {
    const jobs = routes().filter((r) => r.name?.startsWith('reroute-to-peers batch/v1, Resource=jobs'));
    assert.equal(jobs.length, 10, 'upgrade, watch, the two long-running and the rest, each with a client-certificate twin');
    for (const route of jobs) {
      assert.deepEqual(routeLabels(route), { kind: 'reroute', group: 'batch', version: 'v1', resource: 'jobs', subresource: '' }, route.name);
    }
    const resize = routes().find((r) => r.name === 'reroute-to-peers /v1, Resource=pods/resize');
    assert.deepEqual(resize && routeLabels(resize), { kind: 'reroute', group: '', version: 'v1', resource: 'pods', subresource: 'resize' });
  });

  test('an unavailable route carries unavailable metadata', () => {
    const route = routes().find((r) => r.name === 'unavailable-503 apps/v1, Resource=deployments');
    assert.deepEqual(route && routeLabels(route), { kind: 'unavailable', group: 'apps', version: 'v1', resource: 'deployments', subresource: '' });
  });

  test('discovery document routes carry metadata without a resource', () => {
    const reroute = routes().find((r) => r.name === 'peer-only-document discovery batch/v1');
    assert.deepEqual(reroute && routeLabels(reroute), { kind: 'reroute', group: 'batch', version: 'v1', resource: '', subresource: '' });
    const unavailable = routes().find((r) => r.name === 'peer-only-document discovery apps');
    assert.deepEqual(unavailable && routeLabels(unavailable), { kind: 'unavailable', group: 'apps', version: '', resource: '', subresource: '' });
  });

  test('local, already-proxied and aggregated discovery routes carry no metadata, so they are never logged', () => {
    const others = routes().filter((r) => !/^(reroute-to-peers|unavailable-503|peer-only-document) /.test(r.name ?? ''));
    assert.ok(others.some((r) => r.name?.startsWith('proxied-once')));
    assert.ok(others.some((r) => r.name?.startsWith('not-a-resource')));
    for (const route of others) assert.equal(route.metadata, undefined, route.name);
  });

  test('Envoy accepts the access log configuration (envoy --mode validate compiles the CEL filter)', async () => {
    const result = await validateWithEnvoy(translateSidecar(PLAN, settings));
    assert.ok(result.ok, result.output);
  });
});

// ---------------------------------------------------------------- server: entries to counters

describe('access log entries to counters', () => {
  test("a rerouted request counts in apiserver_rerouted_request_total with its code and the route's labels", async () => {
    const { server: s, metrics } = server();
    s.record(decoded(entry({ code: 201 })));
    assert.deepEqual(await counts(metrics), {
      rerouted: [{ code: '201', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }],
      errors: [],
    });
  });

  test('the labels come from the route metadata, not from the path', async () => {
    const { server: s, metrics } = server();
    s.record(decoded(entry({ path: '/apis/made.up/v9/things' })));
    assert.deepEqual((await counts(metrics)).rerouted, [{ code: '200', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }]);
  });

  test('without custom tags the route name gives the kind and the path gives the labels', async () => {
    const { server: s, metrics } = server();
    s.record(
      decoded(entry({ noTags: true, routeName: 'reroute /v1, Resource=pods (client certificate)', path: '/api/v1/namespaces/default/pods/x/log?follow=1' })),
    );
    assert.deepEqual((await counts(metrics)).rerouted, [{ code: '200', group: '', version: 'v1', resource: 'pods', value: 1 }]);
  });

  test('a request answered 503 by an unavailable route is an error of type unavailable and not a rerouted request', async () => {
    const { server: s, metrics } = server();
    s.record(decoded(entry({ kind: 'unavailable', code: 503 })));
    assert.deepEqual(await counts(metrics), {
      rerouted: [],
      errors: [{ type: 'unavailable', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }],
    });
  });

  test('no healthy peer is a rerouted 503 and an error of type no_healthy_peer', async () => {
    const { server: s, metrics } = server();
    s.record(decoded(entry({ code: 503, flags: { no_healthy_upstream: true } })));
    assert.deepEqual(await counts(metrics), {
      rerouted: [{ code: '503', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }],
      errors: [{ type: 'no_healthy_peer', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }],
    });
  });

  test('a connection failure (retries exhausted) is an error of type connect', async () => {
    const { server: s, metrics } = server();
    s.record(decoded(entry({ code: 503, flags: { upstream_connection_failure: true, upstream_retry_limit_exceeded: true } })));
    assert.deepEqual((await counts(metrics)).errors, [{ type: 'connect', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }]);
  });

  test('an upstream reset before the response is an error of type reset', async () => {
    const { server: s, metrics } = server();
    s.record(decoded(entry({ code: 503, flags: { upstream_remote_reset: true } })));
    assert.deepEqual((await counts(metrics)).errors, [{ type: 'reset', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }]);
  });

  test('a local reset is an error of type reset', async () => {
    const { server: s, metrics } = server();
    s.record(decoded(entry({ code: 503, flags: { local_reset: true } })));
    assert.deepEqual((await counts(metrics)).errors, [{ type: 'reset', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }]);
  });

  test('an upstream overflow (circuit breaker) is an error of type overflow', async () => {
    const { server: s, metrics } = server();
    s.record(decoded(entry({ code: 503, flags: { upstream_overflow: true } })));
    assert.deepEqual((await counts(metrics)).errors, [{ type: 'overflow', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }]);
  });

  test("a peer's own 5xx is a rerouted request and not a proxy error", async () => {
    const { server: s, metrics } = server();
    s.record(decoded(entry({ code: 500 })));
    assert.deepEqual(await counts(metrics), { rerouted: [{ code: '500', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }], errors: [] });
  });

  test('an entry of another route counts nothing', async () => {
    const { server: s, metrics } = server();
    assert.equal(s.record(decoded(entry({ noTags: true, routeName: 'peer-proxied', path: '/apis/batch/v1/jobs' }))), undefined);
    assert.equal(s.record(decoded(entry({ kind: 'something-else' }))), undefined);
    assert.deepEqual(await counts(metrics), { rerouted: [], errors: [] });
  });

  test('an intermediate entry of a long stream counts nothing (its final entry does)', async () => {
    const { server: s, metrics } = server();
    s.record(decoded(entry({ intermediate: true })));
    assert.deepEqual(await counts(metrics), { rerouted: [], errors: [] });
  });

  test('a request without a response counts with code 0', async () => {
    const { server: s, metrics } = server();
    const e = entry();
    delete e.response;
    s.record(decoded(e));
    assert.deepEqual((await counts(metrics)).rerouted, [{ code: '0', group: 'batch', version: 'v1', resource: 'jobs', value: 1 }]);
  });
});

// ---------------------------------------------------------------- server: the gRPC stream

describe('the AccessLogService stream', () => {
  let dir: string;
  let address: string;
  let grpcServer: grpc.Server;
  let metrics: Metrics;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mvproxy-als-'));
    metrics = createMetrics();
    grpcServer = createGrpcServer();
    new AccessLogServer({ logger: pino({ level: 'silent' }), metrics }).addToServer(grpcServer);
    address = await listenUnix(grpcServer, join(dir, 'als.sock'));
  });

  after(async () => {
    await shutdownGrpcServer(grpcServer, 100);
    rmSync(dir, { recursive: true, force: true });
  });

  function open(): { stream: grpc.ClientWritableStream<StreamAccessLogsMessage>; done: Promise<grpc.ServiceError | null>; client: grpc.Client } {
    const Client = envoyGrpc().envoy.service.accesslog.v3.AccessLogService;
    const client = new Client(address, grpc.credentials.createInsecure());
    let stream!: grpc.ClientWritableStream<StreamAccessLogsMessage>;
    const done = new Promise<grpc.ServiceError | null>((resolve) => {
      stream = client.StreamAccessLogs((err: grpc.ServiceError | null, _response?: StreamAccessLogsResponse__Output) => resolve(err));
    });
    return { stream, done, client };
  }

  test('entries of every message of a stream are counted, and the stream ends cleanly', async () => {
    const before = (await metrics.reroutedRequests.get()).values.reduce((sum, v) => sum + v.value, 0);
    const { stream, done, client } = open();
    stream.write({ identifier: { node: { id: 'a' }, log_name: ACCESS_LOG_NAME }, http_logs: { log_entry: [entry(), entry({ code: 404 })] } });
    stream.write({ http_logs: { log_entry: [entry({ group: 'apps', resource: 'deployments' })] } });
    stream.end();
    assert.equal(await done, null);
    client.close();
    const after = (await metrics.reroutedRequests.get()).values.reduce((sum, v) => sum + v.value, 0);
    assert.equal(after - before, 3);
  });

  test('a stream the sidecar breaks off does not affect the server, which serves the next stream', async () => {
    const broken = open();
    broken.stream.write({ identifier: { node: { id: 'a' }, log_name: ACCESS_LOG_NAME }, http_logs: { log_entry: [entry()] } });
    broken.stream.cancel();
    const err = await broken.done;
    assert.equal(err?.code, grpc.status.CANCELLED);
    broken.client.close();

    const next = open();
    next.stream.write({ identifier: { node: { id: 'a' }, log_name: ACCESS_LOG_NAME }, tcp_logs: { log_entry: [{}] } });
    next.stream.end();
    assert.equal(await next.done, null);
    next.client.close();
  });
});
