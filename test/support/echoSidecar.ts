// A real Envoy sidecar for end-to-end identity and merged-document tests:
// the translator's listener (with the compiled identity filter inline) and
// routes pushed over ADS, ext_proc served by mvproxy on the same gRPC
// server, and Node https "apiservers" (local and one peer) that believe
// X-Remote-* only from the front-proxy client certificate and echo the
// headers they receive. The local one authenticates discovery like
// kube-apiserver: 401 for unknown tokens.
//
// A test file calls useEchoSidecar() at its top level: the sidecar starts
// before its tests and stops after them. The state below is the running
// sidecar of that test file (each test file runs in its own process).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, request as httpsRequest, type Agent as HttpsAgent, type Server as HttpsServer } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import pino from 'pino';

import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { SidecarPlan } from '../../src/planner/plan.js';
import { ExtProcServer, type DiscoveryRequest } from '../../src/servers/extProc.js';
import { testLeaf, type TestCert } from './clientCerts.js';
import { closeServers, fakeApiserverTls, sidecarCerts, startSidecar, viaFrontProxy, type RunningSidecar } from './sidecarHarness.js';
import { AGGREGATED_DISCOVERY_JSON_ACCEPT } from '../../src/model/discovery.js';

export const NODE = 'a';
export const AGGREGATED = AGGREGATED_DISCOVERY_JSON_ACCEPT;
/** Not valid UTF-8, with NUL and high bytes: must reach the client unchanged. */
export const DISCOVERY_BODY = Buffer.from([0x6b, 0x38, 0x73, 0x00, 0xff, 0xfe, 0x80, 0x0a, 0x7b]);
/** The local apiserver's own aggregated document and its ETag. */
export const LOCAL_DOCUMENT = '{"kind":"APIGroupDiscoveryList","items":[]}';
export const LOCAL_ETAG = '"local"';
export const MERGED_ETAG = '"merged"';
/** The one token the fake apiserver knows. */
export const KNOWN_TOKEN = 'Bearer known-token';
/** A group-version only the peer serves. */
export const PEER_GROUP = 'storagemigration.k8s.io';

export interface Echo {
  path: string;
  headers: Record<string, string[]>;
  /** The request came over a connection with the front-proxy certificate. */
  frontProxy: boolean;
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

// The running sidecar and its fakes, set by useEchoSidecar's before hook.
let dir: string;
export let sidecar: RunningSidecar;
let apiserver: HttpsServer;
let peer: HttpsServer;
/** Headers of the last discovery request the local apiserver received. */
export let lastDiscoveryHeaders: IncomingHttpHeaders | undefined;
let metrics: Metrics;
export let listenerPort: number;
export let servingCa: TestCert;
/** A client certificate from the cluster client CA: CN=alice, O=system:masters and O="team, a+b". */
export let alice: TestCert;
export let certs: Awaited<ReturnType<typeof sidecarCerts>>;
export const discoveryCalls: Array<{ node: string; request: DiscoveryRequest }> = [];
/** Ends the responses of requests the apiserver holds open. */
export const hanging: Array<() => void> = [];

/** A GET through the sidecar's listener, with a client certificate if `cert`; `resumed` tells whether the TLS session was resumed. */
export function send(
  path: string,
  opts: { cert?: TestCert; headers?: Record<string, string>; agent?: HttpsAgent } = {},
): Promise<Reply & { resumed: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: listenerPort,
        path,
        method: 'GET',
        ca: servingCa.certPem,
        servername: 'localhost',
        headers: opts.headers ?? {},
        ...(opts.cert ? { cert: opts.cert.certPem, key: opts.cert.keyPem } : {}),
        agent: opts.agent ?? false,
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        const resumed = (res.socket as import('node:tls').TLSSocket).isSessionReused();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), resumed }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** What the fake apiserver received, from its 200 echo. */
export function echoed(reply: Reply): Echo {
  assert.equal(reply.status, 200, reply.body.toString());
  return JSON.parse(reply.body.toString('utf8')) as Echo;
}

/** ext_proc requests mvproxy has served so far. */
export async function extProcCalls(): Promise<number> {
  return (await metrics.extProcRequests.get()).values.reduce((sum, v) => sum + v.value, 0);
}

/** Starts the fake apiservers, ext_proc and the sidecar before the calling test file's tests, and stops them after. */
export function useEchoSidecar(): void {
  before(startEchoSidecar);
  after(stopEchoSidecar);
}

async function startEchoSidecar(): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'mvproxy-extproc-e2e-'));
  certs = await sidecarCerts();
  servingCa = certs.servingCa;
  alice = await testLeaf(certs.clientCa, { name: [{ O: ['system:masters'] }, { O: ['team, a+b'] }, { CN: ['alice'] }], usages: ['client'] });

  // The "apiserver": echoes what it received, except for aggregated discovery,
  // which it authenticates as kube-apiserver would: a known token, or an
  // X-Remote-User over a front-proxy connection, gets its own document;
  // anything else 401.
  apiserver = createHttpsServer(fakeApiserverTls(certs), (req, res) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path === '/apis' || path === '/api') {
      lastDiscoveryHeaders = req.headers;
      if (req.headers['authorization'] !== KNOWN_TOKEN && !(viaFrontProxy(req) && req.headers['x-remote-user'] !== undefined)) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 }),
        );
        return;
      }
      if (req.headers['if-none-match'] === LOCAL_ETAG) {
        res.writeHead(304, { etag: LOCAL_ETAG });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', etag: LOCAL_ETAG });
      res.end(LOCAL_DOCUMENT);
      return;
    }
    const body: Echo = { path: req.url ?? '', headers: req.headersDistinct as Record<string, string[]>, frontProxy: viaFrontProxy(req) };
    res.writeHead(200, { 'content-type': 'application/json' });
    // A watch: headers now, the rest when the test lets go.
    if (req.url?.includes('watch=hang')) {
      res.write(JSON.stringify(body));
      hanging.push(() => res.end());
      return;
    }
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => apiserver.listen(0, '127.0.0.1', resolve));
  const apiserverPort = (apiserver.address() as AddressInfo).port;

  // The peer: serves PEER_GROUP's documents itself; echoes what it received, marked as the peer.
  peer = createHttpsServer(fakeApiserverTls(certs), (req, res) => {
    const body: Echo & { server: string } = {
      server: 'peer',
      path: req.url ?? '',
      headers: req.headersDistinct as Record<string, string[]>,
      frontProxy: viaFrontProxy(req),
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
  const peerPort = (peer.address() as AddressInfo).port;

  metrics = createMetrics();
  const plan: SidecarPlan = {
    node: NODE,
    local: { name: NODE, address: { host: '127.0.0.1', port: apiserverPort } },
    peers: [{ name: 'b', address: { host: '127.0.0.1', port: peerPort } }],
    routes: [],
    groupDocuments: [
      { group: PEER_GROUP, action: { kind: 'peers', peers: ['b'] } },
      { group: PEER_GROUP, version: 'v1', action: { kind: 'peers', peers: ['b'] } },
    ],
  };
  sidecar = await startSidecar({
    dir,
    node: NODE,
    certs,
    plan,
    register: (server) => {
      new ExtProcServer({
        logger: pino({ level: 'silent' }),
        metrics,
        discovery: (node, request) => {
          discoveryCalls.push({ node, request });
          const cacheHeaders = { etag: MERGED_ETAG, vary: 'Accept' };
          if (request.ifNoneMatch === MERGED_ETAG) return { status: 304, headers: cacheHeaders, body: Buffer.alloc(0) };
          return { status: 200, headers: { 'content-type': 'application/vnd.kubernetes.protobuf', ...cacheHeaders }, body: DISCOVERY_BODY };
        },
      }).addToServer(server);
    },
  });
  listenerPort = sidecar.listenerPort;
}

async function stopEchoSidecar(): Promise<void> {
  for (const end of hanging) end();
  await sidecar?.stop();
  await closeServers(apiserver, peer);
  rmSync(dir, { recursive: true, force: true });
}
