// Every port `mvproxy serve` opens, against clients that misbehave: garbage,
// silent (half-open) and slow connections on the xDS Unix socket, xDS over
// mutual TLS (ADS, ext_proc and access log share that gRPC server), the admin
// socket and the admin HTTP listener (/metrics, /status, /healthz). Nothing
// crashes, well-behaved clients of every service are served meanwhile, the
// admin HTTP server cuts what it should, and the process's open files and
// memory return to about their level once the connections are gone.
//
// The control plane runs as its own process (the command an operator runs),
// on a cluster whose apiservers refuse connections: the ports are the subject.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';

import { GARBAGE, sendGarbage } from '../support/garbage.js';
import {
  accessLogExchange,
  adminStatusNames,
  adsFirstResponse,
  extProcExchange,
  startServeProcess,
  timed,
  type ServeProcess,
} from '../support/controlPlaneProcess.js';
import { HeldConnections, MiB, mib, processFootprint, type PortTarget } from '../support/portAbuse.js';

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/** Garbage an HTTP/1.1 server may get: a broken request line, a 20 KiB header, 500 headers, bytes that are not HTTP. */
const HTTP_GARBAGE: readonly Buffer[] = [
  Buffer.from('GARBAGE\r\n\r\n'),
  Buffer.from(`GET /status HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`),
  Buffer.from(`GET /metrics HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 500 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`),
  Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n'),
  Buffer.from('POST /status HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'),
  ...GARBAGE,
];

describe('the control plane ports under garbage, silent and slow connections', { timeout: 110_000 }, () => {
  let cp: ServeProcess;
  let insecure: grpc.ChannelCredentials;
  let mtls: grpc.ChannelCredentials;
  let xdsUnix: string;
  let xdsTcp: string;
  let xdsTcpTarget: PortTarget;
  let tlsOptions: { ca: Buffer; cert: Buffer; key: Buffer; servername: string };

  before(async () => {
    cp = await startServeProcess();
    insecure = grpc.credentials.createInsecure();
    mtls = grpc.credentials.createSsl(cp.xdsTls.ca, cp.xdsTls.key, cp.xdsTls.cert);
    xdsUnix = `unix://${cp.xdsSocket}`;
    xdsTcp = `${cp.xdsTcp.host}:${cp.xdsTcp.port}`;
    xdsTcpTarget = cp.xdsTcp;
    tlsOptions = { ...cp.xdsTls, servername: 'localhost' };
  });

  after(async () => {
    await cp?.stop();
  });

  /** One well-behaved call to every service on every port; how long each took (ms). */
  async function serveEveryone(): Promise<Record<string, number>> {
    const http = async (path: string): Promise<void> => {
      const res = await fetch(`${cp.adminUrl}${path}`, { signal: AbortSignal.timeout(5000) });
      assert.equal(res.status, 200, path);
      await res.text();
    };
    const calls: Record<string, () => Promise<unknown>> = {
      'ADS over the xDS socket': async () => assert.ok((await adsFirstResponse(xdsUnix, insecure, 'kas-a')).version_info),
      'ADS over mutual TLS': async () => assert.ok((await adsFirstResponse(xdsTcp, mtls, 'kas-b')).version_info),
      'ext_proc over the xDS socket': () => extProcExchange(xdsUnix, insecure, 'kas-a'),
      'ext_proc over mutual TLS': () => extProcExchange(xdsTcp, mtls, 'kas-b'),
      'access log over the xDS socket': () => accessLogExchange(xdsUnix, insecure, 'kas-a'),
      'access log over mutual TLS': () => accessLogExchange(xdsTcp, mtls, 'kas-b'),
      'admin API GetStatus': async () => assert.deepEqual(await adminStatusNames(cp.adminSocket), ['kas-a', 'kas-b']),
      'admin HTTP /healthz': () => http('/healthz'),
      'admin HTTP /status': () => http('/status'),
      'admin HTTP /metrics': () => http('/metrics'),
    };
    const took: Record<string, number> = {};
    await Promise.all(
      Object.entries(calls).map(async ([name, call]) => {
        try {
          took[name] = await timed(call);
        } catch (err) {
          throw new Error(`${name} was not served: ${(err as Error).message}`);
        }
      }),
    );
    return took;
  }

  function assertAlive(): void {
    assert.equal(cp.proc.running, true, `mvproxy serve ${cp.proc.describeExit()}:\n${cp.proc.logTail()}`);
  }

  test("over mutual TLS, ADS, ext_proc and the access log refuse a stream claiming another sidecar's node", async () => {
    const refused = async (call: Promise<unknown>): Promise<void> => {
      await assert.rejects(call, (err: grpc.ServiceError) => err.code === grpc.status.PERMISSION_DENIED && /names "kas-b", not this node/.test(err.details));
    };
    // The client certificate names kas-b.
    await refused(adsFirstResponse(xdsTcp, mtls, 'kas-a'));
    await refused(extProcExchange(xdsTcp, mtls, 'kas-a'));
    await refused(accessLogExchange(xdsTcp, mtls, 'kas-a'));
    assertAlive();
  });

  test('garbage on every port, raw and inside TLS, changes nothing', async () => {
    await serveEveryone();
    for (let round = 0; round < 5; round++) {
      await Promise.all([
        sendGarbage(cp.xdsSocket),
        sendGarbage(cp.adminSocket),
        // Not TLS at all, on the TLS port.
        sendGarbage(xdsTcpTarget),
        // TLS with our client certificate, then garbage instead of HTTP/2.
        sendGarbage(xdsTcpTarget, { tls: tlsOptions }),
        // TLS without a client certificate: refused in the handshake.
        sendGarbage(xdsTcpTarget, { tls: { ca: cp.xdsTls.ca, servername: 'localhost' } }),
        sendGarbage(cp.adminHttp, { pieces: HTTP_GARBAGE }),
      ]);
    }
    assertAlive();
    await serveEveryone();
  });

  /** Opens every kind of silent and slow connection on every port; none is refused. */
  async function holdEverywhere(): Promise<{ grpcHeld: HeldConnections; httpHeld: HeldConnections }> {
    const grpcHeld = new HeldConnections();
    const httpHeld = new HeldConnections();
    await Promise.all([
      // The xDS socket and the admin socket: silent, a partial HTTP/2 preface, the preface then a frame one byte at a time.
      ...[cp.xdsSocket, cp.adminSocket].flatMap((path) => [
        grpcHeld.open({ path }, 200),
        grpcHeld.open({ path }, 50, { prefix: H2_PREFACE.subarray(0, 12) }),
        grpcHeld.open({ path }, 20, { drip: Buffer.concat([H2_PREFACE, Buffer.from('\x00\x00\x08\x06\x00\x00\x00\x00\x00', 'latin1')]), dripIntervalMs: 100 }),
      ]),
      // xDS over mutual TLS: silent before the handshake, a ClientHello dripped byte by byte, silent after the handshake, the preface dripped inside TLS.
      grpcHeld.open(xdsTcpTarget, 200),
      grpcHeld.open(xdsTcpTarget, 20, { drip: Buffer.from('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03', 'latin1'), dripIntervalMs: 100 }),
      grpcHeld.open(xdsTcpTarget, 100, { tls: tlsOptions }),
      grpcHeld.open(xdsTcpTarget, 20, { tls: tlsOptions, drip: H2_PREFACE, dripIntervalMs: 100 }),
      // Admin HTTP: silent, a request head never finished, a header dripped forever (slowloris).
      httpHeld.open(cp.adminHttp, 100),
      httpHeld.open(cp.adminHttp, 50, { prefix: Buffer.from('GET /status HTTP/1.1\r\nHost: x\r\n') }),
      httpHeld.open(cp.adminHttp, 20, {
        prefix: Buffer.from('GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: '),
        drip: Buffer.from('abcdefgh'),
        dripIntervalMs: 200,
      }),
    ]);
    assert.equal(grpcHeld.failedToOpen + httpHeld.failedToOpen, 0, 'every connection was accepted');
    return { grpcHeld, httpHeld };
  }

  interface Footprint {
    fds: number;
    rssBytes: number;
    /** After a full garbage collection: what the process keeps, not what it has not collected yet. */
    heapUsedBytes: number;
  }

  /** The process's footprint once it has noticed every close (waiting at most 10 s for its open files to settle near `near`). */
  async function settledFootprint(near?: Footprint): Promise<Footprint> {
    // Until its open files stop changing (and are back near `near`, if given).
    let fds = processFootprint(cp.pid).fds;
    for (let i = 0; i < 40; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      const now = processFootprint(cp.pid).fds;
      if (now === fds && (!near || now <= near.fds + 2)) break;
      fds = now;
    }
    const { heapUsedBytes } = await cp.collectGarbage();
    return { ...processFootprint(cp.pid), heapUsedBytes };
  }

  function footprintText(f: Footprint): string {
    return `heap ${mib(f.heapUsedBytes)} MiB after GC, rss ${mib(f.rssBytes)} MiB, ${f.fds} fds`;
  }

  test('silent and slow connections on every port starve nobody; the admin HTTP server cuts them; files and memory come back', async (t) => {
    // Warm up every code path (and the allocator) the way the real run will, then measure.
    const warm = await holdEverywhere();
    await serveEveryone();
    await warm.grpcHeld.closeAll();
    await warm.httpHeld.closeAll();
    for (let i = 0; i < 3; i++) await serveEveryone();
    const baseline = await settledFootprint();

    const rounds: string[] = [];
    let slowestOverall = 0;
    for (let round = 1; round <= 3; round++) {
      const { grpcHeld, httpHeld } = await holdEverywhere();
      const held = processFootprint(cp.pid);
      assert.ok(held.fds >= baseline.fds + 700, `the connections are really held by the server (${held.fds} fds)`);

      // Meanwhile, everyone else is served, promptly.
      const slowest: Record<string, number> = {};
      for (let i = 0; i < 3; i++) {
        for (const [name, ms] of Object.entries(await serveEveryone())) slowest[name] = Math.max(slowest[name] ?? 0, ms);
      }
      for (const [name, ms] of Object.entries(slowest)) {
        assert.ok(ms < 2000, `${name} took ${ms.toFixed(0)} ms while ${grpcHeld.opened + httpHeld.opened} connections were held`);
      }
      slowestOverall = Math.max(slowestOverall, ...Object.values(slowest));
      assertAlive();

      if (round === 1) {
        // The admin HTTP server cuts silent and slow clients itself (headersTimeout 10 s, checked every second).
        const cutBy = Date.now() + 15_000;
        while (httpHeld.stillOpen > 0 && Date.now() < cutBy) await new Promise((resolve) => setTimeout(resolve, 250));
        assert.equal(httpHeld.stillOpen, 0, `admin HTTP connections still open 15 s on: ${httpHeld.stillOpen} of ${httpHeld.opened}`);
        assert.equal(httpHeld.closedByServer, httpHeld.opened);
      }

      await grpcHeld.closeAll();
      await httpHeld.closeAll();
      assertAlive();
      await serveEveryone();
      const after = await settledFootprint(baseline);
      rounds.push(
        `round ${round}: ${grpcHeld.opened} gRPC-port and ${httpHeld.opened} admin HTTP connections held ` +
          `(rss ${mib(held.rssBytes)} MiB, ${held.fds} fds), then ${footprintText(after)}`,
      );
      // Nothing is kept per connection: the heap comes back (a few MiB of lazily loaded code and caches aside), and so do open files.
      assert.ok(
        after.heapUsedBytes <= baseline.heapUsedBytes + 8 * MiB,
        `heap back near ${footprintText(baseline)} after round ${round}: ${footprintText(after)}`,
      );
      assert.ok(after.fds <= baseline.fds + 2, `open files back to ${baseline.fds} (+2) after round ${round}: ${after.fds}`);
      // Resident memory shrinks only when the allocator gives pages back: a loose bound.
      assert.ok(
        after.rssBytes <= baseline.rssBytes + 64 * MiB,
        `resident memory near ${footprintText(baseline)} after round ${round}: ${footprintText(after)}`,
      );
    }
    t.diagnostic(`before: ${footprintText(baseline)}; ${rounds.join('; ')}; slowest well-behaved call meanwhile ${slowestOverall.toFixed(0)} ms`);
  });

  test('admin HTTP connections beyond its limit are closed at once, and it serves again when they are gone', async () => {
    const flood = new HeldConnections();
    await flood.open(cp.adminHttp, 400);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.ok(flood.closedByServer >= 400 - 256, `cut at once: ${flood.closedByServer} of 400 (limit 256)`);
    await flood.closeAll();
    assertAlive();
    await serveEveryone();
  });

  test('with connections still held on every port, SIGTERM stops it cleanly and promptly', async () => {
    const held = new HeldConnections();
    await Promise.all([
      held.open({ path: cp.xdsSocket }, 20),
      held.open({ path: cp.adminSocket }, 20),
      held.open(xdsTcpTarget, 20, { tls: tlsOptions }),
      held.open(cp.adminHttp, 20, { prefix: Buffer.from('GET /status HTTP/1.1\r\n') }),
    ]);
    const started = Date.now();
    const how = await cp.stop();
    await held.closeAll();
    assert.equal(how, 'exited with code 0');
    assert.ok(Date.now() - started < 4000, `stopped in ${Date.now() - started} ms`);
  });
});
