// The sidecar's limits, against a real Envoy configured by the translator in front of a fake
// apiserver (test/support/sidecarHarness.ts): the claim is about what Envoy allows a client, so
// the apiserver only has to accept what kube-apiserver accepts (1 MiB of headers) and to hang or
// stream when told. The limits are kube-apiserver's (src/translator/settings.ts, listener.ts,
// routes.ts, src/xds/bootstrap.ts), shortened here where a test would otherwise wait for long:
// header timeout 2 s (32 s), request timeout 1 s (60 s: the sidecar waits 5 s more), 20 client
// connections (100,000).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { Agent, createServer, request, type Server } from 'node:https';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

import type { SidecarPlan } from '../../src/planner/plan.js';
import { planOf } from '../support/sidecarPlans.js';
import { closeServers, fakeApiserverTls, sidecarCerts, startSidecar, type RunningSidecar, type SidecarCerts } from '../support/sidecarHarness.js';

const HEADER_TIMEOUT_SECONDS = 2;
const REQUEST_TIMEOUT_SECONDS = 1;
/** The apiserver's timeout plus the sidecar's margin (REQUEST_TIMEOUT_MARGIN_SECONDS). */
const ROUTE_TIMEOUT_MS = (REQUEST_TIMEOUT_SECONDS + 5) * 1000;
const MAX_CONNECTIONS = 20;

let dir: string;
let certs: SidecarCerts;
let apiserver: Server;
let sidecar: RunningSidecar;
/** Requests the fake apiserver holds: hung ones and open streams, by the path's last segment. */
const held = new Map<string, ServerResponse[]>();
/** What the fake apiserver received, in order. */
const received: string[] = [];

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  ms: number;
  reusedSocket: boolean;
}

function send(path: string, opts: { method?: string; headers?: Record<string, string | string[]>; agent?: Agent; timeoutMs?: number } = {}): Promise<Reply> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: sidecar.listenerPort,
        path,
        method: opts.method ?? 'GET',
        ca: certs.servingCa.certPem,
        servername: 'localhost',
        headers: opts.headers ?? {},
        agent: opts.agent ?? false,
        timeout: opts.timeoutMs ?? 20_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            ms: Date.now() - started,
            reusedSocket: req.reusedSocket,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${path} timed out on the client`)));
    req.on('error', reject);
    req.end();
  });
}

/** A streaming GET: resolves with the response once its headers arrived; `text()` is what came so far. */
function openStream(path: string): Promise<{ res: IncomingMessage; text: () => string; ended: () => boolean; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: sidecar.listenerPort, path, ca: certs.servingCa.certPem, servername: 'localhost', agent: false }, (res) => {
      let text = '';
      let ended = false;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => {
        ended = true;
      });
      res.on('error', () => {
        ended = true;
      });
      res.on('close', () => {
        ended = true;
      });
      resolve({ res, text: () => text, ended: () => ended, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A TLS connection to the sidecar: resolves once it is established, or with the error or close that ended it first. */
function tlsConnection(): Promise<{ socket: TLSSocket; established: boolean }> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: sidecar.listenerPort, ca: certs.servingCa.certPem, servername: 'localhost' });
    socket.once('secureConnect', () => resolve({ socket, established: true }));
    socket.once('error', () => resolve({ socket, established: false }));
    socket.once('close', () => resolve({ socket, established: false }));
  });
}

/** Milliseconds until `socket` is closed by the other side (or `limitMs`, then -1). */
function closedAfter(socket: { once: (event: 'close', listener: () => void) => unknown; destroy: () => void }, limitMs: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(-1);
    }, limitMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - started);
    });
  });
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mvproxy-limits-e2e-'));
  certs = await sidecarCerts();
  // kube-apiserver reads up to 1 MiB of headers (plus 4 KiB) and any number of them: so does this fake.
  apiserver = createServer({ ...fakeApiserverTls(certs), maxHeaderSize: 2 << 20 }, (req, res) => {
    received.push(`${req.method} ${req.url}`);
    const path = (req.url ?? '').split('?', 1)[0] ?? '';
    const last = path.split('/').pop() ?? '';
    if (last === 'hang') {
      // A hung apiserver: never answers.
      held.set(last, [...(held.get(last) ?? []), res]);
      return;
    }
    if (/[?&]watch=true/.test(req.url ?? '') || /[?&]follow=true/.test(req.url ?? '')) {
      // A watch or a followed log: headers at once, then only what the test sends.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"type":"ADDED"}\n');
      const key = req.url?.includes('watch=true') ? 'watch' : 'log';
      held.set(key, [...(held.get(key) ?? []), res]);
      return;
    }
    const headerBytes = req.rawHeaders.reduce((sum, field) => sum + field.length, 0);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ path: req.url, headerCount: req.rawHeaders.length / 2, headerBytes }));
  });
  apiserver.maxHeadersCount = 0;
  // Longer than the sidecar's upstream idle timeout (60 s), as kube-apiserver's 90 s.
  apiserver.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => apiserver.listen(0, '127.0.0.1', resolve));
  const port = (apiserver.address() as AddressInfo).port;
  const plan: SidecarPlan = planOf({ node: 'a', local: { name: 'a', address: { host: '127.0.0.1', port } }, peers: [] });
  sidecar = await startSidecar({
    dir,
    node: 'a',
    certs,
    plan,
    register: () => {},
    limits: { readHeaderTimeoutSeconds: HEADER_TIMEOUT_SECONDS, requestTimeoutSeconds: REQUEST_TIMEOUT_SECONDS },
    maxDownstreamConnections: MAX_CONNECTIONS,
  });
});

after(async () => {
  for (const responses of held.values()) for (const res of responses) res.destroy();
  await sidecar?.stop();
  apiserver?.closeAllConnections();
  await closeServers(apiserver);
  rmSync(dir, { recursive: true, force: true });
});

describe('sidecar limits (real Envoy)', () => {
  test('a client that never finishes its headers is cut off after the header timeout; so is one that never finishes its TLS handshake', async () => {
    const { socket, established } = await tlsConnection();
    assert.ok(established);
    socket.write('GET /api/v1/namespaces HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    const tcp = netConnect({ host: '127.0.0.1', port: sidecar.listenerPort });
    tcp.on('error', () => {});
    const [headersCut, handshakeCut] = await Promise.all([closedAfter(socket, 15_000), closedAfter(tcp, 15_000)]);
    for (const [what, ms] of [
      ['unfinished headers', headersCut],
      ['unfinished handshake', handshakeCut],
    ] as const) {
      assert.ok(ms >= HEADER_TIMEOUT_SECONDS * 1000 - 300, `${what}: closed after ${ms} ms, not before the timeout`);
      assert.ok(ms < HEADER_TIMEOUT_SECONDS * 1000 + 3000, `${what}: closed after ${ms} ms`);
    }
    assert.ok(answer === '' || answer.startsWith('HTTP/1.1 408'), answer);
    assert.ok(!received.some((r) => r.endsWith('/api/v1/namespaces')), 'nothing reached the apiserver');
  });

  test("headers up to kube-apiserver's limit pass (1 MiB, 1000 headers); beyond it the sidecar answers 431", async () => {
    const big = await send('/api/v1/namespaces/limits/configmaps/big', { headers: { 'x-big': 'a'.repeat((1 << 20) - 2048) } });
    assert.equal(big.status, 200, big.body);
    assert.ok((JSON.parse(big.body) as { headerBytes: number }).headerBytes >= (1 << 20) - 2048);
    const many = await send('/api/v1/namespaces/limits/configmaps/many', {
      headers: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`x-h${i}`, 'v'])),
    });
    assert.equal(many.status, 200, many.body);
    assert.ok((JSON.parse(many.body) as { headerCount: number }).headerCount >= 1000);
    const tooBig = await send('/api/v1/namespaces/limits/configmaps/toobig', { headers: { 'x-big': 'a'.repeat((1 << 20) + 16 * 1024) } });
    assert.equal(tooBig.status, 431);
    assert.ok(!received.some((r) => r.endsWith('/toobig')), 'the oversized request never reached the apiserver');
  });

  test("HTTP/2 clients get kube-apiserver's stream limit and flow-control windows", async () => {
    const session = http2Connect(`https://127.0.0.1:${sidecar.listenerPort}`, { ca: certs.servingCa.certPem, servername: 'localhost' });
    try {
      await new Promise<void>((resolve, reject) => {
        session.once('remoteSettings', () => resolve());
        session.once('error', reject);
      });
      assert.equal(session.remoteSettings.maxConcurrentStreams, 100);
      assert.equal(session.remoteSettings.initialWindowSize, 256 * 1024);
      const stream = session.request({ ':path': '/api/v1/namespaces/limits/configmaps/h2' });
      const status = await new Promise<number>((resolve, reject) => {
        stream.once('response', (headers) => resolve(Number(headers[':status'])));
        stream.once('error', reject);
      });
      stream.resume();
      assert.equal(status, 200);
    } finally {
      session.close();
    }
  });

  test('connections beyond the limit are refused while a client already connected keeps being served', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: certs.servingCa.certPem, servername: 'localhost' });
    try {
      assert.equal((await send('/api/v1/namespaces/limits/configmaps/before', { agent })).status, 200);
      const flood = await Promise.all(Array.from({ length: MAX_CONNECTIONS + 10 }, () => tlsConnection()));
      await sleep(500);
      const open = flood.filter((c) => c.established && !c.socket.destroyed && c.socket.readyState === 'open');
      assert.ok(open.length <= MAX_CONNECTIONS - 1, `${open.length} of ${flood.length} new connections stayed open (limit ${MAX_CONNECTIONS}, one in use)`);
      assert.ok(open.length >= MAX_CONNECTIONS - 3, `${open.length} new connections stayed open: the limit is not lower than configured`);
      const stats = await sidecar.envoy.admin('/stats?filter=downstream_global_cx_overflow');
      assert.equal(stats.status, 200, 'the admin interface answers with the limit reached');
      assert.match(stats.body, /downstream_global_cx_overflow: [1-9]/);

      const during = await send('/api/v1/namespaces/limits/configmaps/during', { agent });
      assert.equal(during.status, 200, during.body);
      assert.ok(during.reusedSocket, 'served on the connection it already had');

      for (const c of flood) c.socket.destroy();
      await sleep(500);
      const fresh = await send('/api/v1/namespaces/limits/configmaps/after');
      assert.equal(fresh.status, 200, 'new connections are accepted again');
    } finally {
      agent.destroy();
    }
  });

  test('a hung apiserver: a request fails after the route timeout with a 504 Timeout Status while a watch and a followed log stay open and other clients are served', async () => {
    const watch = await openStream('/api/v1/namespaces/limits/configmaps?watch=true');
    const log = await openStream('/api/v1/namespaces/limits/pods/p/log?follow=true');
    assert.equal(watch.res.statusCode, 200);
    assert.equal(log.res.statusCode, 200);
    const started = Date.now();
    const hungRead = send('/api/v1/namespaces/limits/configmaps/hang');
    const hungWrite = send('/api/v1/namespaces/limits/configmaps/hang', { method: 'POST' });
    // The apiserver serves everyone else meanwhile.
    await sleep(1000);
    for (let i = 0; i < 5; i++) assert.equal((await send(`/api/v1/namespaces/limits/configmaps/other-${i}`)).status, 200);

    const [read, write] = await Promise.all([hungRead, hungWrite]);
    for (const [what, reply] of [
      ['GET', read],
      ['POST', write],
    ] as const) {
      assert.equal(reply.status, 504, `${what}: ${reply.body}`);
      assert.ok(reply.ms >= ROUTE_TIMEOUT_MS - 500 && reply.ms < ROUTE_TIMEOUT_MS + 4000, `${what} answered after ${reply.ms} ms`);
      assert.match(String(reply.headers['content-type']), /^application\/json/);
      const status = JSON.parse(reply.body) as Record<string, unknown>;
      assert.deepEqual(
        { kind: status['kind'], status: status['status'], reason: status['reason'], code: status['code'], message: status['message'] },
        { kind: 'Status', status: 'Failure', reason: 'Timeout', code: 504, message: 'Timeout: request did not complete within the allotted timeout' },
      );
    }
    assert.equal(read.headers['retry-after'], '1', 'a read is safe to retry');
    assert.deepEqual((JSON.parse(read.body) as { details: unknown }).details, { retryAfterSeconds: 1 });
    assert.equal(write.headers['retry-after'], undefined, 'a write may have been applied: no retry asked for');

    // Past the route timeout and the idle timeout, silent since their first line: both streams still deliver.
    await sleep(Math.max(0, started + ROUTE_TIMEOUT_MS + 3000 - Date.now()));
    assert.ok(!watch.ended() && !log.ended(), 'the streams are still open');
    for (const res of [...(held.get('watch') ?? []), ...(held.get('log') ?? [])]) res.write('{"type":"MODIFIED"}\n');
    for (const stream of [watch, log]) {
      for (let i = 0; i < 50 && !stream.text().includes('MODIFIED'); i++) await sleep(100);
      assert.match(stream.text(), /ADDED[\s\S]*MODIFIED/);
      stream.close();
    }
  });
});
