// ADS against a real Envoy: it connects over a Unix socket and over mutual
// TLS, ACKs a snapshot and serves traffic with it, NACKs a bad one while the
// old config keeps serving, and reconnects after a control plane restart.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { AdsServer } from '../../src/servers/ads.js';
import { SnapshotStore } from '../../src/servers/snapshotStore.js';
import { createGrpcServer, listenMtls, listenUnix, shutdownGrpcServer } from '../../src/servers/grpcListen.js';
import { sidecarBootstrap } from '../../src/xds/bootstrap.js';
import { TYPE_URL, PUSH_ORDER, makeSnapshot, type ResourceTypeUrl, type Snapshot } from '../../src/xds/snapshot.js';
import { envoyGrpc } from '../../src/xds/protos.js';
import { waitForAck, waitForNack } from '../support/adsWait.js';
import { documentFilterConfig } from '../support/snapshotFixtures.js';
import { dumpSection, eventually, rdsListener, startEnvoy, validateEnvoyConfig, type EnvoyInstance } from '../support/envoy.js';

const silent = pino({ level: 'silent' });

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A local HTTP server that says who it is, standing in for an apiserver. */
async function backend(name: string): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end(`${name} ${req.url ?? ''}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 3000, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** EDS cluster + endpoints to the backend, a listener on listenPort using RDS, and the route. */
function snapshotFor(backendPort: number, listenPort: number, route: { prefix?: string; regex?: string } = { prefix: '/' }): Snapshot {
  const match = route.regex !== undefined ? { safe_regex: { regex: route.regex } } : { prefix: route.prefix ?? '/' };
  return makeSnapshot({
    clusters: [
      {
        name: 'backend',
        type: 'EDS',
        connect_timeout: { seconds: 1 },
        eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
      },
    ],
    endpoints: [
      {
        cluster_name: 'backend',
        endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: backendPort } } } }] }],
      },
    ],
    listeners: [rdsListener('ingress', listenPort)],
    extensionConfigs: [documentFilterConfig()],
    routes: [
      {
        name: 'ingress',
        virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match, route: { cluster: 'backend' } }] }],
      },
    ],
  });
}

/** The types Envoy asks for with these fixtures: no secret is named (plain-text upstreams and listener), so SDS is never subscribed. */
const FIXTURE_TYPES = PUSH_ORDER.filter((url) => url !== TYPE_URL.secret);

async function waitForAll(ads: AdsServer, node: string, snapshot: Snapshot, timeoutMs: number): Promise<void> {
  await Promise.all(FIXTURE_TYPES.map((url) => waitForAck(ads, node, url, snapshot.types[url].version, timeoutMs)));
}

/** Throwaway PKI: a CA, a server cert for mvproxy-xds and a client cert, by the openssl CLI. */
function makePki(dir: string): Record<'ca' | 'caKey' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey' | 'otherCert' | 'otherKey', string> {
  const file = (name: string): string => join(dir, name);
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { stdio: 'pipe' });
  };
  const key = (name: string): void => openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file(name));
  key('ca.key');
  openssl('req', '-x509', '-new', '-key', file('ca.key'), '-out', file('ca.crt'), '-days', '1', '-subj', '/CN=mvproxy-test-ca');
  const leaf = (name: string, cn: string, ext: string, caCrt: string, caKey: string): void => {
    key(`${name}.key`);
    openssl('req', '-new', '-key', file(`${name}.key`), '-out', file(`${name}.csr`), '-subj', `/CN=${cn}`);
    writeFileSync(file(`${name}.ext`), ext);
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      caCrt,
      '-CAkey',
      caKey,
      '-CAcreateserial',
      '-out',
      file(`${name}.crt`),
      '-days',
      '1',
      '-extfile',
      file(`${name}.ext`),
    );
  };
  leaf('server', 'mvproxy-xds', 'subjectAltName=DNS:mvproxy-xds\nextendedKeyUsage=serverAuth\n', file('ca.crt'), file('ca.key'));
  leaf('client', 'apiserver-tls', 'extendedKeyUsage=clientAuth\n', file('ca.crt'), file('ca.key'));
  // A client certificate from a CA the control plane does not trust.
  key('other-ca.key');
  openssl('req', '-x509', '-new', '-key', file('other-ca.key'), '-out', file('other-ca.crt'), '-days', '1', '-subj', '/CN=other-ca');
  leaf('other', 'intruder', 'extendedKeyUsage=clientAuth\n', file('other-ca.crt'), file('other-ca.key'));
  return {
    ca: file('ca.crt'),
    caKey: file('ca.key'),
    serverCert: file('server.crt'),
    serverKey: file('server.key'),
    clientCert: file('client.crt'),
    clientKey: file('client.key'),
    otherCert: file('other.crt'),
    otherKey: file('other.key'),
  };
}

describe('Envoy over the Unix socket', () => {
  const node = 'apiserver-unix';
  let dir = '';
  let socketPath = '';
  let ads: AdsServer;
  let grpcServer: grpc.Server;
  let envoy: EnvoyInstance;
  let listenPort = 0;
  let backendPort = 0;
  let backendServer: Server;
  let good: Snapshot;
  const sent: Array<{ typeUrl: ResourceTypeUrl; version: string }> = [];

  function startControlPlane(): AdsServer {
    const server = new AdsServer(
      { current: new SnapshotStore(), startup: new SnapshotStore() },
      {
        logger: silent,
        metrics: { responseSent: (_node, typeUrl, version) => sent.push({ typeUrl, version }) },
      },
    );
    grpcServer = createGrpcServer();
    server.addToServer(grpcServer);
    return server;
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mvp-e2e-'));
    socketPath = join(dir, 'xds.sock');
    ({ server: backendServer, port: backendPort } = await backend('backend-a'));
    listenPort = await freePort();
    good = snapshotFor(backendPort, listenPort);
    ads = startControlPlane();
    await listenUnix(grpcServer, socketPath);
    ads.setSnapshot(node, good);
    envoy = await startEnvoy(undefined, {
      bootstrap: sidecarBootstrap({ nodeId: node, controlPlane: { unixSocket: socketPath }, admin: { port: 0 } }),
      readyTimeoutMs: 30_000,
    });
  });

  after(async () => {
    await envoy?.stop();
    await shutdownGrpcServer(grpcServer, 100);
    backendServer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('Envoy ACKs every type of the snapshot', async () => {
    await waitForAll(ads, node, good, 15_000);
    const status = ads.status()[node];
    assert.equal(status?.connected, 1);
    for (const url of FIXTURE_TYPES) assert.equal(status?.types[url]?.versionAcked, good.types[url].version);
  });

  it('Envoy config dump shows the pushed cluster and listener', async () => {
    const dump = await envoy.configDump();
    assert.match(JSON.stringify(dumpSection(dump, 'ClustersConfigDump')), /"name":"backend"/);
    assert.match(JSON.stringify(dumpSection(dump, 'ListenersConfigDump')), /"name":"ingress"/);
    assert.match(await envoy.clusters(), new RegExp(`backend::127\\.0\\.0\\.1:${backendPort}::`));
  });

  it('a request through the Envoy listener reaches the local HTTP server', async () => {
    const res = await eventually('a 200 through Envoy', 10_000, async () => {
      const r = await get(listenPort, '/hello');
      return r.status === 200 ? r : undefined;
    });
    assert.equal(res.body, 'backend-a /hello');
  });

  it('an invalid route regex is NACKed, recorded, not resent, and the old route keeps serving', async () => {
    const bad = snapshotFor(backendPort, listenPort, { regex: '(' });
    ads.setSnapshot(node, bad);
    const nack = await waitForNack(ads, node, TYPE_URL.route, bad.types[TYPE_URL.route].version, 15_000);
    assert.notEqual(nack.message, '');
    const status = ads.status()[node]?.types[TYPE_URL.route];
    assert.equal(status?.lastNack?.version, bad.types[TYPE_URL.route].version);
    assert.equal(status?.lastNack?.message, nack.message);
    assert.equal(status?.versionAcked, good.types[TYPE_URL.route].version);
    // Serving continues with the previous route.
    const res = await get(listenPort, '/still');
    assert.equal(res.status, 200);
    assert.equal(res.body, 'backend-a /still');
    // Give a NACK loop the time to show itself, and re-plan the same bad state.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    ads.setSnapshot(node, snapshotFor(backendPort, listenPort, { regex: '(' }));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const badSends = sent.filter((s) => s.typeUrl === TYPE_URL.route && s.version === bad.types[TYPE_URL.route].version);
    assert.equal(badSends.length, 1);
  });

  it('a fixed snapshot after the NACK is ACKed', async () => {
    const fixed = snapshotFor(backendPort, listenPort, { prefix: '/' });
    ads.setSnapshot(node, fixed);
    await waitForAck(ads, node, TYPE_URL.route, fixed.types[TYPE_URL.route].version, 15_000);
    assert.equal(fixed.types[TYPE_URL.route].version, good.types[TYPE_URL.route].version);
  });

  it('after a control plane restart on the same socket Envoy reconnects and ACKs, serving throughout', async () => {
    await shutdownGrpcServer(grpcServer, 100);
    // The data path does not depend on the control plane being up.
    const meanwhile = await get(listenPort, '/during-outage');
    assert.equal(meanwhile.status, 200);
    assert.equal(meanwhile.body, 'backend-a /during-outage');
    ads = startControlPlane();
    ads.setSnapshot(node, good);
    await listenUnix(grpcServer, socketPath);
    await waitForAll(ads, node, good, 30_000);
    assert.equal(ads.status()[node]?.connected, 1);
    const res = await get(listenPort, '/after');
    assert.equal(res.body, 'backend-a /after');
  });
});

describe('Envoy over mutual TLS', () => {
  const node = 'apiserver-tls';
  let dir = '';
  let pki: ReturnType<typeof makePki>;
  let ads: AdsServer;
  let grpcServer: grpc.Server;
  let envoy: EnvoyInstance | undefined;
  let backendServer: Server;
  let port = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mvp-e2e-tls-'));
    pki = makePki(dir);
    ads = new AdsServer({ current: new SnapshotStore(), startup: new SnapshotStore() }, { logger: silent });
    grpcServer = createGrpcServer();
    ads.addToServer(grpcServer);
    port = await listenMtls(grpcServer, {
      host: '127.0.0.1',
      port: 0,
      ca: readFileSync(pki.ca),
      cert: readFileSync(pki.serverCert),
      key: readFileSync(pki.serverKey),
    });
    ({ server: backendServer } = await backend('backend-tls'));
  });

  after(async () => {
    await envoy?.stop();
    await shutdownGrpcServer(grpcServer, 100);
    backendServer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function bootstrap(): ReturnType<typeof sidecarBootstrap> {
    return sidecarBootstrap({
      nodeId: node,
      controlPlane: {
        host: '127.0.0.1',
        port,
        tls: { ca: { filename: pki.ca }, cert: { filename: pki.clientCert }, key: { filename: pki.clientKey }, serverName: 'mvproxy-xds' },
      },
      admin: { port: 0 },
    });
  }

  it('the mTLS sidecar bootstrap passes envoy --mode validate', async () => {
    const result = await validateEnvoyConfig(bootstrap());
    assert.ok(result.ok, result.output);
  });

  it('Envoy connects with its client certificate, ACKs the snapshot and serves through it', async () => {
    const backendPort = (backendServer.address() as AddressInfo).port;
    const listenPort = await freePort();
    const snapshot = snapshotFor(backendPort, listenPort);
    ads.setSnapshot(node, snapshot);
    envoy = await startEnvoy(undefined, { bootstrap: bootstrap(), readyTimeoutMs: 30_000 });
    await waitForAll(ads, node, snapshot, 15_000);
    const res = await eventually('a 200 through Envoy', 10_000, async () => {
      const r = await get(listenPort, '/tls');
      return r.status === 200 ? r : undefined;
    });
    assert.equal(res.body, 'backend-tls /tls');
  });

  it('a stream may not claim a node its client certificate does not name', async () => {
    const Client = envoyGrpc().envoy.service.discovery.v3.AggregatedDiscoveryService;
    const creds = grpc.credentials.createSsl(readFileSync(pki.ca), readFileSync(pki.clientKey), readFileSync(pki.clientCert));
    const client = new Client(`127.0.0.1:${port}`, creds, { 'grpc.ssl_target_name_override': 'mvproxy-xds' });
    try {
      const call = client.StreamAggregatedResources();
      const failed = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
      call.write({ node: { id: 'another-apiserver' }, type_url: TYPE_URL.cluster });
      const err = await failed;
      assert.equal(err.code, grpc.status.PERMISSION_DENIED);
      assert.match(err.details, /names "apiserver-tls", not this node/);
      assert.equal(ads.status()['another-apiserver'], undefined);
    } finally {
      client.close();
    }
  });

  it('the control plane refuses a client certificate from another CA', async () => {
    const Client = envoyGrpc().envoy.service.discovery.v3.AggregatedDiscoveryService;
    const creds = grpc.credentials.createSsl(readFileSync(pki.ca), readFileSync(pki.otherKey), readFileSync(pki.otherCert));
    const client = new Client(`127.0.0.1:${port}`, creds, { 'grpc.ssl_target_name_override': 'mvproxy-xds' });
    try {
      const call = client.StreamAggregatedResources();
      const failed = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
      call.write({ node: { id: 'intruder' }, type_url: TYPE_URL.cluster });
      const err = await failed;
      assert.equal(err.code, grpc.status.UNAVAILABLE);
      assert.equal(ads.status()['intruder'], undefined);
    } finally {
      client.close();
    }
  });
});

describe('sidecar bootstrap', () => {
  it('the Unix socket sidecar bootstrap passes envoy --mode validate', async () => {
    const result = await validateEnvoyConfig(
      sidecarBootstrap({
        nodeId: 'apiserver-1',
        controlPlane: { unixSocket: '/run/mvproxy/xds.sock' },
        admin: { port: 9901 },
        runtime: { 'overload.global_downstream_max_connections': 50000 },
      }),
    );
    assert.ok(result.ok, result.output);
  });

  it('envoy --mode validate reports an invalid config', async () => {
    const result = await validateEnvoyConfig({ static_resources: { clusters: [{ name: 'x', type: 'NOPE' }] } });
    assert.equal(result.ok, false);
    assert.match(result.output, /NOPE/);
  });
});
