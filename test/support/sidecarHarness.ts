// One real Envoy sidecar configured by the translator over ADS, in front of
// fake https "apiservers" the test provides: the shared setup of the tests
// that check what Envoy really does with mvproxy's configuration.
import { writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { Server, ServerOptions } from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import type { SidecarPlan } from '../../src/planner/plan.js';
import { freePorts } from '../../src/tools/sandbox/ports.js';
import { AdsServer } from '../../src/servers/ads.js';
import { SnapshotStore } from '../../src/servers/snapshotStore.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../../src/servers/grpcListen.js';
import type { SidecarLimits, TranslatorSettings } from '../../src/translator/settings.js';
import { PEER_SERVER_NAME, translateSidecar, type SidecarDocuments } from '../../src/translator/translator.js';
import { httpsGet } from '../../src/util/https.js';
import { sidecarBootstrap } from '../../src/xds/bootstrap.js';
import { makeSnapshot } from '../../src/xds/snapshot.js';
import { testCa, testLeaf, type TestCert } from './clientCerts.js';
import { eventually, startEnvoy, type EnvoyInstance } from './envoy.js';
import { sidecarSettings } from './translatorFixtures.js';

/** The certificates of a sidecar and the apiservers behind it. */
export interface SidecarCerts {
  /** Cluster client CA: client certificates the sidecar verifies. */
  clientCa: TestCert;
  /** Signs apiserver and sidecar serving certificates (the peer CA). */
  servingCa: TestCert;
  frontProxyCa: TestCert;
  /** What the sidecar presents to apiservers. */
  frontProxy: TestCert;
  apiserverServing: TestCert;
  sidecarServing: TestCert;
}

export async function sidecarCerts(): Promise<SidecarCerts> {
  const clientCa = await testCa('cluster client CA');
  const servingCa = await testCa('apiserver serving CA');
  const frontProxyCa = await testCa('front-proxy CA');
  return {
    clientCa,
    servingCa,
    frontProxyCa,
    frontProxy: await testLeaf(frontProxyCa, { name: [{ CN: ['front-proxy-client'] }], usages: ['client'] }),
    apiserverServing: await testLeaf(servingCa, { name: [{ CN: ['kube-apiserver'] }], usages: ['server'], dnsNames: [PEER_SERVER_NAME] }),
    sidecarServing: await testLeaf(servingCa, { name: [{ CN: ['sidecar'] }], usages: ['server'], dnsNames: ['localhost'], ips: ['127.0.0.1'] }),
  };
}

/**
 * TLS of a fake apiserver: as with kube-apiserver, a client certificate is
 * optional; the only one this fake knows is the front-proxy certificate.
 */
export function fakeApiserverTls(certs: SidecarCerts): ServerOptions {
  return {
    key: certs.apiserverServing.keyPem,
    cert: certs.apiserverServing.certPem,
    ca: certs.frontProxyCa.certPem,
    requestCert: true,
    rejectUnauthorized: false,
  };
}

/**
 * Whether a request reached a fake apiserver over a connection that presented
 * the front-proxy certificate: the only connections whose X-Remote-* headers
 * kube-apiserver believes.
 */
export function viaFrontProxy(req: IncomingMessage): boolean {
  return (req.socket as TLSSocket).authorized;
}

/** Closes the fake apiservers a suite started (those it got to start). */
export async function closeServers(...servers: Array<Server | undefined>): Promise<void> {
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))));
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  if (port === undefined) throw new Error('no free port');
  return port;
}

export interface RunningSidecar {
  listenerPort: number;
  /** The CA file that verifies the sidecar's serving certificate (for httpsGet). */
  caFile: string;
  envoy: EnvoyInstance;
  /** The control plane's gRPC server (ADS and the services `register` added). */
  grpcServer: grpc.Server;
  /** Pushes the plan again with these merged documents (encoded sets, translateSidecar's `documents`), and another document module if given. */
  push: (documents: SidecarDocuments | undefined, documentModule?: Uint8Array) => void;
  /** The ADS server, the plan and the translator settings, for a test that pushes a snapshot of its own. */
  ads: AdsServer;
  plan: SidecarPlan;
  settings: TranslatorSettings;
  stop: () => Promise<void>;
}

/**
 * Translates `plan`, serves it over ADS on a new gRPC server (to which
 * `register` adds the services under test), starts Envoy with the sidecar
 * bootstrap, and resolves once the listener answers /healthz.
 */
export async function startSidecar(opts: {
  dir: string;
  node: string;
  certs: SidecarCerts;
  plan: SidecarPlan;
  register: (server: grpc.Server) => void;
  /** The listener's limits (TranslatorSettings.limits); kube-apiserver's when absent. */
  limits?: Partial<SidecarLimits>;
  /** The bootstrap's client connection limit (SidecarBootstrapOptions.maxDownstreamConnections). */
  maxDownstreamConnections?: number;
  /** The merged documents pushed over ECDS from the start (translateSidecar's `documents`); none when absent. */
  documents?: SidecarDocuments;
}): Promise<RunningSidecar> {
  const { dir, certs } = opts;
  const write = (name: string, content: string): string => {
    const file = join(dir, name);
    writeFileSync(file, content, { mode: 0o600 });
    return file;
  };
  const grpcServer = createGrpcServer();
  const ads = new AdsServer({ current: new SnapshotStore(), startup: new SnapshotStore() }, { logger: pino({ level: 'silent' }) });
  ads.addToServer(grpcServer);
  opts.register(grpcServer);
  const socket = join(dir, 'mvproxy.sock');
  await listenUnix(grpcServer, socket);

  const listenerPort = await freePort();
  const peerCa = write('peer-ca.crt', certs.servingCa.certPem);
  const files = {
    servingCert: write('sidecar.crt', certs.sidecarServing.certPem),
    servingKey: write('sidecar.key', certs.sidecarServing.keyPem),
    clientCa: write('client-ca.crt', certs.clientCa.certPem),
    frontProxyCert: write('front-proxy.crt', certs.frontProxy.certPem),
    frontProxyKey: write('front-proxy.key', certs.frontProxy.keyPem),
    peerCa,
  };
  const settings = { ...sidecarSettings(listenerPort, files), ...(opts.limits ? { limits: opts.limits } : {}) };
  const push = (documents: SidecarDocuments | undefined, documentModule?: Uint8Array): void =>
    ads.setSnapshot(opts.node, makeSnapshot(translateSidecar(opts.plan, documentModule ? { ...settings, documentModule } : settings, undefined, documents)));
  push(opts.documents);

  const envoy = await startEnvoy(undefined, {
    bootstrap: sidecarBootstrap({
      nodeId: opts.node,
      controlPlane: { unixSocket: socket },
      admin: { port: 0 },
      ...(opts.maxDownstreamConnections === undefined ? {} : { maxDownstreamConnections: opts.maxDownstreamConnections }),
    }),
  });
  await eventually('the sidecar listener serves', 20_000, async () => {
    const reply = await httpsGet(`https://127.0.0.1:${listenerPort}/healthz`, { ca: peerCa });
    return reply.status === 200 ? true : undefined;
  });
  return {
    listenerPort,
    caFile: peerCa,
    envoy,
    grpcServer,
    push,
    ads,
    plan: opts.plan,
    settings,
    stop: async () => {
      await envoy.stop();
      await shutdownGrpcServer(grpcServer, 100);
    },
  };
}
