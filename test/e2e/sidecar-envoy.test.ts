// Identity and merged documents through a real Envoy: the translator's
// listener (with the compiled identity filter inline) and routes pushed over
// ADS, ext_proc served by mvproxy on the same gRPC server, and Node https
// "apiservers" (local and one peer) that believe X-Remote-* only from the
// front-proxy client certificate and echo the headers they receive. The local
// one authenticates discovery like kube-apiserver: 401 for unknown tokens.
import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent as HttpsAgent, createServer as createHttpsServer, request as httpsRequest, type Server as HttpsServer } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';

import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { SidecarPlan } from '../../src/planner/plan.js';
import { shutdownGrpcServer } from '../../src/servers/grpcListen.js';
import { ExtProcServer, type DiscoveryRequest } from '../../src/servers/extProc.js';
import { testCa, testLeaf, type TestCert } from '../support/clientCerts.js';
import { IDENTITY_CASES, type IdentityOutcome } from '../support/identityCases.js';
import { closeServers, fakeApiserverTls, sidecarCerts, startSidecar, viaFrontProxy, type RunningSidecar } from '../support/sidecarHarness.js';

const NODE = 'a';
const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';
/** Not valid UTF-8, with NUL and high bytes: must reach the client unchanged. */
const DISCOVERY_BODY = Buffer.from([0x6b, 0x38, 0x73, 0x00, 0xff, 0xfe, 0x80, 0x0a, 0x7b]);
/** The local apiserver's own aggregated document and its ETag. */
const LOCAL_DOCUMENT = '{"kind":"APIGroupDiscoveryList","items":[]}';
const LOCAL_ETAG = '"local"';
const MERGED_ETAG = '"merged"';
/** The one token the fake apiserver knows. */
const KNOWN_TOKEN = 'Bearer known-token';
/** A group-version only the peer serves. */
const PEER_GROUP = 'storagemigration.k8s.io';

interface Echo {
  path: string;
  headers: Record<string, string[]>;
  /** The request came over a connection with the front-proxy certificate. */
  frontProxy: boolean;
}

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

let dir: string;
let sidecar: RunningSidecar;
let apiserver: HttpsServer;
let peer: HttpsServer;
/** Headers of the last discovery request the local apiserver received. */
let lastDiscoveryHeaders: IncomingHttpHeaders | undefined;
let metrics: Metrics;
let listenerPort: number;
let servingCa: TestCert;
let alice: TestCert;
let certs: Awaited<ReturnType<typeof sidecarCerts>>;
const discoveryCalls: Array<{ node: string; request: DiscoveryRequest }> = [];
/** Ends the responses of requests the apiserver holds open. */
const hanging: Array<() => void> = [];

function send(path: string, opts: { cert?: TestCert; headers?: Record<string, string>; agent?: HttpsAgent } = {}): Promise<Reply & { resumed: boolean }> {
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

function echoed(reply: Reply): Echo {
  assert.equal(reply.status, 200, reply.body.toString());
  return JSON.parse(reply.body.toString('utf8')) as Echo;
}

async function extProcCalls(): Promise<number> {
  return (await metrics.extProcRequests.get()).values.reduce((sum, v) => sum + v.value, 0);
}

/** Identity headers a client may try to smuggle, in several spellings. */
const FORGED = {
  'X-Remote-User': 'mallory',
  'X-REMOTE-GROUP': 'system:masters',
  'x-remote-uid': '0',
  'X-Remote-Extra-Scopes': 'everything',
  'X-Remote-Extra-Authentication.kubernetes.io%2fcredential-id': 'X509SHA256=00',
  X_Remote_User: 'mallory',
  'X-Forwarded-Client-Cert': 'Hash=00;Cert="forged"',
};
const IDENTITY_HEADERS = [
  'x-remote-user',
  'x-remote-group',
  'x-remote-uid',
  'x-remote-extra-scopes',
  'x-remote-extra-authentication.kubernetes.io%2fcredential-id',
  'x_remote_user',
  'x-forwarded-client-cert',
];
const CREDENTIAL_ID = 'x-remote-extra-authentication.kubernetes.io%2fcredential-id';

function credentialId(cert: TestCert): string {
  return `X509SHA256=${createHash('sha256').update(new X509Certificate(cert.certPem).raw).digest('hex')}`;
}

before(async () => {
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
});

after(async () => {
  for (const end of hanging) end();
  await sidecar?.stop();
  await closeServers(apiserver, peer);
  rmSync(dir, { recursive: true, force: true });
});

describe('identity and merged documents through a real Envoy', () => {
  test('a client certificate arrives as X-Remote-User, one X-Remote-Group per O and the credential-id extra over a front-proxy connection; forged identity headers are gone', async () => {
    const echo = echoed(await send('/api/v1/namespaces/default/pods', { cert: alice, headers: FORGED }));
    assert.equal(echo.frontProxy, true);
    assert.deepEqual(echo.headers['x-remote-user'], ['alice']);
    assert.deepEqual(echo.headers['x-remote-group'], ['system:masters', 'team, a+b']);
    assert.equal(echo.headers['x-remote-uid'], undefined, 'alice has no UID attribute');
    assert.deepEqual(echo.headers[CREDENTIAL_ID], [credentialId(alice)]);
    for (const name of ['x-remote-extra-scopes', 'x_remote_user', 'x-forwarded-client-cert']) assert.equal(echo.headers[name], undefined, name);
    // Audit logs see the client (Envoy writes its own address for a loopback client).
    assert.equal(echo.headers['x-forwarded-for']?.length, 1);
  });

  for (const identityCase of IDENTITY_CASES) {
    test(`identity table: ${identityCase.name}`, async () => {
      const leaf = await testLeaf(certs.clientCa, { usages: ['client'], ...identityCase.leaf });
      if (identityCase.refusedAtHandshake) {
        await assert.rejects(send('/api/v1/pods', { cert: leaf }));
        return;
      }
      const reply = await send('/api/v1/pods', { cert: leaf, headers: FORGED });
      let outcome: IdentityOutcome;
      if (reply.status === 401) {
        const status = JSON.parse(reply.body.toString('utf8')) as { kind: string; code: number; reason: string };
        assert.deepEqual([status.kind, status.code, status.reason], ['Status', 401, 'Unauthorized']);
        outcome = { kind: 'rejected' };
      } else {
        const echo = echoed(reply);
        assert.equal(echo.frontProxy, true, 'a certificate request travels on a front-proxy connection');
        for (const name of ['x-remote-extra-scopes', 'x_remote_user', 'x-forwarded-client-cert']) assert.equal(echo.headers[name], undefined, name);
        // Node reads header bytes as Latin-1; the apiserver (Go) reads them as the UTF-8 they are.
        const utf8 = (values: string[] | undefined): string[] | undefined => values?.map((v) => Buffer.from(v, 'latin1').toString('utf8'));
        const user = utf8(echo.headers['x-remote-user']);
        const uid = utf8(echo.headers['x-remote-uid']);
        if (user === undefined) {
          assert.equal(echo.headers['x-remote-group'], undefined);
          assert.equal(echo.headers[CREDENTIAL_ID], undefined);
          outcome = { kind: 'none' };
        } else {
          assert.deepEqual(echo.headers[CREDENTIAL_ID], [credentialId(leaf)]);
          outcome = { kind: 'identity', user: user.join(','), groups: utf8(echo.headers['x-remote-group']) ?? [], ...(uid ? { uid: uid.join(',') } : {}) };
        }
      }
      assert.deepEqual(outcome, identityCase.expected);
    });
  }

  test('a certificate from another CA never completes the handshake', async () => {
    const otherCa = await testCa('another CA');
    const stranger = await testLeaf(otherCa, { name: [{ CN: ['alice'] }], usages: ['client'] });
    await assert.rejects(send('/api/v1/pods', { cert: stranger }));
  });

  test('a client without certificate arrives without identity headers, over a connection without the front-proxy certificate, and never calls ext_proc', async () => {
    const calls = await extProcCalls();
    for (const path of ['/api/v1/namespaces/default/pods', '/api/v1/namespaces/default/pods?watch=1']) {
      const echo = echoed(await send(path, { headers: { ...FORGED, Authorization: 'Bearer token' } }));
      assert.equal(echo.frontProxy, false, path);
      for (const name of IDENTITY_HEADERS) assert.equal(echo.headers[name], undefined, `${path}: ${name}`);
      assert.deepEqual(echo.headers['authorization'], ['Bearer token'], path);
    }
    assert.equal(await extProcCalls(), calls);
  });

  test('a resumed TLS session keeps its certificate identity', async () => {
    // Node's https.Agent caches TLS sessions: a new connection resumes the last one.
    const agent = new HttpsAgent({ keepAlive: false, maxCachedSessions: 10 });
    try {
      const replies = [];
      for (let i = 0; i < 4; i++) replies.push(await send('/api/v1/pods', { cert: alice, agent }));
      assert.ok(
        replies.slice(1).some((r) => r.resumed),
        'at least one connection resumed its session',
      );
      for (const reply of replies) {
        const echo = echoed(reply);
        assert.deepEqual([echo.frontProxy, echo.headers['x-remote-user']], [true, ['alice']], `resumed: ${reply.resumed}`);
      }
    } finally {
      agent.destroy();
    }
  });

  test('a certificate that expires while its connection stays open stops authenticating on that connection', async () => {
    const brief = await testLeaf(certs.clientCa, {
      name: [{ CN: ['brief'] }],
      usages: ['client'],
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 2_500),
    });
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
    try {
      assert.deepEqual(echoed(await send('/api/v1/pods', { cert: brief, agent })).headers['x-remote-user'], ['brief']);
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      const later = await send('/api/v1/pods', { cert: brief, agent });
      assert.equal(later.status, 401);
    } finally {
      agent.destroy();
    }
  });

  test('a certificate watch opens no ext_proc stream', async () => {
    // Every open stream would hold a request on the control-plane cluster.
    const active = async (): Promise<number> => {
      const text = (await sidecar.envoy.admin('/stats?filter=^cluster\\.mvproxy_xds\\.upstream_rq_active$')).body;
      return Number(/upstream_rq_active: (\d+)/.exec(text)?.[1] ?? NaN);
    };
    const idle = await active(); // the ADS stream (and the access log's, once it has logged)
    const watch = new Promise<number>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port: listenerPort,
          path: '/api/v1/pods?watch=hang',
          ca: servingCa.certPem,
          servername: 'localhost',
          cert: alice.certPem,
          key: alice.keyPem,
          agent: false,
        },
        (res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(await watch, 200);
    assert.equal(await active(), idle);
    for (const end of hanging.splice(0)) end();
  });

  test('two thousand quick certificate requests on keep-alive connections all get their identity', async () => {
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 8 });
    let next = 0;
    const failures: string[] = [];
    const worker = async (): Promise<void> => {
      while (next < 2000) {
        next++;
        const reply = await send('/api/v1/namespaces/default/pods', { cert: alice, agent });
        if (reply.status !== 200) failures.push(`${reply.status} ${reply.body.toString('utf8').slice(0, 120)}`);
        else if (echoed(reply).headers['x-remote-user']?.[0] !== 'alice') failures.push('no identity');
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker)).finally(() => agent.destroy());
    assert.deepEqual(failures, []);
  });

  test('the control-plane cluster that ext_proc streams share has its circuit breakers raised', async () => {
    const clusters = (await sidecar.envoy.admin('/clusters')).body;
    for (const limit of ['max_connections', 'max_pending_requests', 'max_requests', 'max_retries']) {
      assert.match(clusters, new RegExp(`^mvproxy_xds::default_priority::${limit}::1000000$`, 'm'), limit);
    }
  });

  test("a made-up bearer token on aggregated discovery gets the apiserver's own 401, never the merged document", async () => {
    discoveryCalls.length = 0;
    const reply = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: 'Bearer made-up' } });
    assert.equal(reply.status, 401);
    const status = JSON.parse(reply.body.toString('utf8')) as { kind: string; code: number };
    assert.deepEqual([status.kind, status.code], ['Status', 401]);
    assert.equal(reply.headers['etag'], undefined);
    assert.deepEqual(discoveryCalls, []);
  });

  test("aggregated discovery without credentials gets the apiserver's own 401", async () => {
    discoveryCalls.length = 0;
    const reply = await send('/api', { headers: { Accept: AGGREGATED } });
    assert.equal(reply.status, 401);
    assert.deepEqual(discoveryCalls, []);
  });

  test('an authenticated client gets the merged document, body bytes intact, with its ETag and Vary: Accept', async () => {
    discoveryCalls.length = 0;
    const reply = await send('/apis?timeout=32s', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN, 'If-None-Match': LOCAL_ETAG } });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, DISCOVERY_BODY);
    assert.equal(reply.headers['content-type'], 'application/vnd.kubernetes.protobuf');
    assert.equal(reply.headers['etag'], MERGED_ETAG);
    assert.equal(reply.headers['vary'], 'Accept');
    assert.deepEqual(discoveryCalls, [{ node: NODE, request: { document: 'group-discovery', accept: AGGREGATED, ifNoneMatch: LOCAL_ETAG } }]);
    // The apiserver answered in full: it never saw the client's If-None-Match.
    assert.equal(lastDiscoveryHeaders?.['if-none-match'], undefined);
    assert.equal(lastDiscoveryHeaders?.['authorization'], KNOWN_TOKEN);
  });

  test('If-None-Match with the merged ETag gets a 304 once the apiserver has authorized the client', async () => {
    const reply = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN, 'If-None-Match': MERGED_ETAG } });
    assert.equal(reply.status, 304);
    assert.equal(reply.headers['etag'], MERGED_ETAG);
    assert.equal(reply.body.length, 0);
    const refused = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: 'Bearer made-up', 'If-None-Match': MERGED_ETAG } });
    assert.equal(refused.status, 401);
  });

  test('a certificate client gets the merged document; the apiserver authenticated it by its asserted identity', async () => {
    discoveryCalls.length = 0;
    const reply = await send('/api', { cert: alice, headers: { Accept: AGGREGATED } });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, DISCOVERY_BODY);
    assert.equal(lastDiscoveryHeaders?.['x-remote-user'], 'alice');
    assert.equal(discoveryCalls.length, 1);
  });

  test('the group-version document of a peer-only group-version is answered by the peer, which sees the caller', async () => {
    discoveryCalls.length = 0;
    const calls = await extProcCalls();
    for (const path of [`/apis/${PEER_GROUP}/v1`, `/apis/${PEER_GROUP}`, `/apis/${PEER_GROUP}/v1/?timeout=32s`]) {
      const reply = await send(path, { headers: { Authorization: 'Bearer made-up' } });
      const echo = JSON.parse(reply.body.toString('utf8')) as Echo & { server?: string };
      assert.equal(echo.server, 'peer', path);
      assert.equal(echo.path, path);
      assert.deepEqual(echo.headers['authorization'], ['Bearer made-up']);
      assert.deepEqual(echo.headers['x-kubernetes-peer-proxied'], ['true']);
      assert.equal(echo.frontProxy, false, path);
    }
    assert.equal(await extProcCalls(), calls, 'token requests to a peer need no ext_proc');
    const withCert = JSON.parse((await send(`/apis/${PEER_GROUP}/v1`, { cert: alice })).body.toString('utf8')) as Echo & { server?: string };
    assert.equal(withCert.server, 'peer');
    assert.equal(withCert.frontProxy, true);
    assert.deepEqual(withCert.headers['x-remote-user'], ['alice']);
    assert.deepEqual(discoveryCalls, []);
  });

  test("discovery with profile=nopeer is the local apiserver's own answer, If-None-Match and certificate identity included", async () => {
    discoveryCalls.length = 0;
    const nopeer = `${AGGREGATED.split(',')[0]};profile=nopeer`;
    const reply = await send('/apis', { cert: alice, headers: { Accept: nopeer } });
    assert.equal(reply.status, 200);
    assert.equal(reply.body.toString('utf8'), LOCAL_DOCUMENT);
    assert.equal(reply.headers['etag'], LOCAL_ETAG);
    assert.equal(lastDiscoveryHeaders?.['x-remote-user'], 'alice');
    const cached = await send('/apis', { headers: { Accept: nopeer, Authorization: KNOWN_TOKEN, 'If-None-Match': LOCAL_ETAG } });
    assert.equal(cached.status, 304);
    assert.deepEqual(discoveryCalls, []);
  });

  test('with the control plane gone, certificate identity still works, merged documents fall back to the local ones, token requests work', async () => {
    await shutdownGrpcServer(sidecar.grpcServer, 100);
    const withCert = echoed(await send('/api/v1/namespaces/default/pods', { cert: alice }));
    assert.deepEqual([withCert.frontProxy, withCert.headers['x-remote-user']], [true, ['alice']]);

    const discovery = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN } });
    assert.equal(discovery.status, 200);
    assert.equal(discovery.body.toString('utf8'), LOCAL_DOCUMENT);
    assert.equal(discovery.headers['etag'], LOCAL_ETAG);
    const discoveryWithCert = await send('/api', { cert: alice, headers: { Accept: AGGREGATED } });
    assert.equal(discoveryWithCert.status, 200);
    assert.equal(discoveryWithCert.body.toString('utf8'), LOCAL_DOCUMENT);
    const fallbacks = (await sidecar.envoy.admin('/stats?filter=ext_proc\\.mvproxy\\.failure_mode_allowed$')).body;
    assert.ok(Number(/: (\d+)/.exec(fallbacks)?.[1] ?? 0) >= 2, `Envoy counts the fallbacks: ${fallbacks}`);

    const echo = echoed(await send('/api/v1/namespaces/default/pods', { headers: { Authorization: 'Bearer token' } }));
    assert.equal(echo.headers['x-remote-user'], undefined);
    assert.equal(echo.frontProxy, false);
  });
});
