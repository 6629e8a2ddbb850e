// The access log through a real Envoy: the translator's listener and routes
// pushed over ADS, the access log service on the same gRPC server, and Node
// https "apiservers" (local, one live peer) behind the sidecar. Only requests
// a reroute or unavailable route handled reach mvproxy, and they become
// upstream MVP's counters within Envoy's buffer flush interval.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';

import type { HTTPAccessLogEntry__Output } from '../../src/generated/envoy/data/accesslog/v3/HTTPAccessLogEntry.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { SidecarPlan } from '../../src/planner/plan.js';
import { planOf } from '../support/sidecarPlans.js';
import { AccessLogServer, type LoggedRequest } from '../../src/servers/accessLog.js';
import { httpsGet, type HttpResult } from '../../src/util/https.js';
import { eventually } from '../support/envoy.js';
import { closeServers, fakeApiserverTls, freePort, sidecarCerts, startSidecar, type RunningSidecar } from '../support/sidecarHarness.js';

const NODE = 'a';
/** Envoy flushes its access log buffer every second; allow for a slow machine. */
const FLUSH_WAIT_MS = 5000;

/** Records every entry Envoy sends, then counts it as the real server does. */
class RecordingAccessLogServer extends AccessLogServer {
  readonly entries: Array<{ path: string; tags: Record<string, string>; counted: LoggedRequest | undefined }> = [];

  override record(entry: HTTPAccessLogEntry__Output): LoggedRequest | undefined {
    const counted = super.record(entry);
    this.entries.push({ path: entry.request?.path ?? '', tags: entry.common_properties?.custom_tags ?? {}, counted });
    return counted;
  }
}

let dir: string;
let sidecar: RunningSidecar;
let apiserver: HttpsServer;
let peer: HttpsServer;
let metrics: Metrics;
let accessLog: RecordingAccessLogServer;

function send(path: string, headers: Record<string, string> = {}): Promise<HttpResult> {
  return httpsGet(`https://127.0.0.1:${sidecar.listenerPort}${path}`, { ca: sidecar.caFile }, headers, 10_000);
}

async function rerouted(labels: Record<string, string>): Promise<number> {
  return (await metrics.reroutedRequests.get()).values.find((v) => sameLabels(v.labels, labels))?.value ?? 0;
}

async function peerErrors(labels: Record<string, string>): Promise<number> {
  return (await metrics.peerProxyErrors.get()).values.find((v) => sameLabels(v.labels, labels))?.value ?? 0;
}

async function total(): Promise<number> {
  const sum = (values: Array<{ value: number }>): number => values.reduce((s, v) => s + v.value, 0);
  return sum((await metrics.reroutedRequests.get()).values) + sum((await metrics.peerProxyErrors.get()).values);
}

function sameLabels(actual: Partial<Record<string, string | number>>, wanted: Record<string, string>): boolean {
  const keys = new Set([...Object.keys(actual), ...Object.keys(wanted)]);
  return [...keys].every((key) => String(actual[key] ?? '') === (wanted[key] ?? ''));
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mvproxy-accesslog-e2e-'));
  const certs = await sidecarCerts();

  const echo = (server: string): HttpsServer =>
    createHttpsServer(fakeApiserverTls(certs), (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ server, path: req.url ?? '' }));
    });
  apiserver = echo('local');
  peer = echo('peer');
  await new Promise<void>((resolve) => apiserver.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));

  metrics = createMetrics();
  const plan: SidecarPlan = planOf({
    node: NODE,
    local: { name: NODE, address: { host: '127.0.0.1', port: (apiserver.address() as AddressInfo).port } },
    peers: [
      { name: 'b', address: { host: '127.0.0.1', port: (peer.address() as AddressInfo).port } },
      // Nothing listens there: every connection is refused.
      { name: 'down', address: { host: '127.0.0.1', port: await freePort() } },
    ],
    routes: [
      { group: 'apps', version: 'v1', resource: 'deployments', action: { kind: 'peers', peers: ['b'] } },
      { group: 'batch', version: 'v1', resource: 'cronjobs', action: { kind: 'peers', peers: ['down'] } },
      { group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'unavailable', servedBy: ['c'] } },
    ],
  });
  sidecar = await startSidecar({
    dir,
    node: NODE,
    certs,
    plan,
    register: (server) => {
      accessLog = new RecordingAccessLogServer({ logger: pino({ level: 'silent' }), metrics });
      accessLog.addToServer(server);
    },
  });
});

after(async () => {
  await sidecar?.stop();
  await closeServers(apiserver, peer);
  rmSync(dir, { recursive: true, force: true });
});

describe('access log through a real Envoy', () => {
  test('a rerouted request counts in apiserver_rerouted_request_total with its code, group, version and resource', async () => {
    const labels = { code: '200', group: 'apps', version: 'v1', resource: 'deployments' };
    const before = await rerouted(labels);
    const reply = await send('/apis/apps/v1/namespaces/default/deployments/web?timeout=5s');
    assert.equal(reply.status, 200);
    assert.equal((JSON.parse(reply.body) as { server: string }).server, 'peer');
    await eventually('the rerouted request to be counted', FLUSH_WAIT_MS, async () => ((await rerouted(labels)) === before + 1 ? true : undefined));
    // The labels came from the route's metadata, not from parsing the client's path.
    const entry = accessLog.entries.find((e) => e.path.startsWith('/apis/apps/v1/namespaces/default/deployments/web'));
    assert.deepEqual(entry?.tags, { kind: 'reroute', group: 'apps', version: 'v1', resource: 'deployments', subresource: '' });
  });

  test('a request answered 503 by an unavailable route counts as a peer proxy error of type unavailable, not as rerouted', async () => {
    const labels = { type: 'unavailable', group: 'batch', version: 'v1', resource: 'jobs' };
    const before = await peerErrors(labels);
    const reply = await send('/apis/batch/v1/namespaces/default/jobs');
    assert.equal(reply.status, 503);
    await eventually('the unavailable request to be counted', FLUSH_WAIT_MS, async () => ((await peerErrors(labels)) === before + 1 ? true : undefined));
    assert.equal((await metrics.reroutedRequests.get()).values.filter((v) => v.labels.group === 'batch' && v.labels.resource === 'jobs').length, 0);
  });

  test('a request to a peer that refuses connections counts as rerouted with 503 and as a connect error', async () => {
    const errorLabels = { type: 'connect', group: 'batch', version: 'v1', resource: 'cronjobs' };
    const reroutedLabels = { code: '503', group: 'batch', version: 'v1', resource: 'cronjobs' };
    const reply = await send('/apis/batch/v1/cronjobs');
    assert.equal(reply.status, 503);
    await eventually('the failed request to be counted', FLUSH_WAIT_MS, async () => ((await peerErrors(errorLabels)) === 1 ? true : undefined));
    assert.equal(await rerouted(reroutedLabels), 1);
  });

  test('local requests and requests already proxied are never logged and count nothing', async () => {
    const counted = await total();
    const entries = accessLog.entries.length;
    assert.equal((JSON.parse((await send('/api/v1/namespaces/default/pods')).body) as { server: string }).server, 'local');
    const proxied = await send('/apis/apps/v1/namespaces/default/deployments', { 'x-kubernetes-peer-proxied': 'true' });
    assert.equal((JSON.parse(proxied.body) as { server: string }).server, 'local');
    // A rerouted request after them: once it is in, anything logged before it is too (one stream, in order).
    const marker = '/apis/apps/v1/deployments?marker=1';
    assert.equal((await send(marker)).status, 200);
    await eventually('the marker request to be logged', FLUSH_WAIT_MS, () => (accessLog.entries.some((e) => e.path === marker) ? true : undefined));
    assert.deepEqual(
      accessLog.entries.slice(entries).map((e) => e.path),
      [marker],
    );
    assert.equal(await total(), counted + 1);
  });
});
