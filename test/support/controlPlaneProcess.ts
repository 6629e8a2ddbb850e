// `mvproxy serve` as its own process on a cluster that is not there (every
// apiserver address refuses connections), with every port it can open: the
// xDS Unix socket, xDS over mutual TLS, the admin socket and the admin HTTP
// listener; and one well-behaved client call per service on those ports.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';

import type { DiscoveryResponse__Output } from '../../src/generated/envoy/service/discovery/v3/DiscoveryResponse.js';
import type { ProcessingResponse__Output } from '../../src/generated/envoy/service/ext_proc/v3/ProcessingResponse.js';
import { ensureSandboxPki, type SandboxPki } from '../../src/tools/sandbox/pki.js';
import { writeKubeconfig } from '../../src/tools/sandbox/kubeconfig.js';
import { ManagedProcess } from '../../src/tools/sandbox/processes.js';
import { adminGrpc } from '../../src/servers/admin.js';
import { ACCESS_LOG_NAME } from '../../src/translator/accessLog.js';
import { EXT_PROC_DOCUMENT_METADATA, EXT_PROC_NODE_METADATA } from '../../src/translator/names.js';
import { envoyGrpc } from '../../src/xds/protos.js';
import { TYPE_URL } from '../../src/xds/snapshot.js';
import { AGGREGATED_DISCOVERY_JSON } from '../../src/model/discovery.js';

const cliMain = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export interface ServeProcess {
  proc: ManagedProcess;
  pid: number;
  dir: string;
  /** http://127.0.0.1:PORT */
  adminUrl: string;
  adminHttp: { host: string; port: number };
  adminSocket: string;
  xdsSocket: string;
  xdsTcp: { host: string; port: number };
  /** Client credentials for xDS over mutual TLS: kas-b's sidecar (the only node they may claim). */
  xdsTls: { ca: Buffer; cert: Buffer; key: Buffer };
  pki: SandboxPki;
  /** Runs a full garbage collection in it (a test-only preload: SIGUSR2 calls gc()), then reads its heap from /metrics. */
  collectGarbage(): Promise<{ heapUsedBytes: number }>;
  /** SIGTERM; resolves with how it exited. */
  stop(): Promise<string>;
}

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

/** Starts `mvproxy serve` for apiservers kas-a and kas-b, which do not exist (their addresses refuse connections). */
export async function startServeProcess(): Promise<ServeProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'mvp-serve-'));
  const pki = await ensureSandboxPki(join(dir, 'pki'), { apiserverNames: ['kas-a', 'kas-b'] });
  const kubeconfig = join(dir, 'kubeconfig');
  const nowhere = await freePort();
  await writeKubeconfig(kubeconfig, {
    server: `https://127.0.0.1:${nowhere}`,
    caFile: pki.ca.cert,
    user: { certFile: pki.admin.cert, keyFile: pki.admin.key },
  });
  const adminHttp = { host: '127.0.0.1', port: await freePort() };
  const xdsTcp = { host: '127.0.0.1', port: await freePort() };
  const xdsSocket = join(dir, 'xds.sock');
  const adminSocket = join(dir, 'admin.sock');
  const config = {
    kubeconfig,
    apiservers: ['kas-a', 'kas-b'].map((name, i) => ({
      name,
      hostname: name,
      address: `127.0.0.1:${nowhere}`,
      sidecar: { listen: `127.0.0.${2 + i}:6443`, servingCert: pki.serving[name]?.cert, servingKey: pki.serving[name]?.key },
    })),
    tls: { clientCa: pki.ca.cert, frontProxyClientCert: pki.frontProxyClient.cert, frontProxyClientKey: pki.frontProxyClient.key, peerCa: pki.peerCa },
    xds: { unixSocket: xdsSocket, tcp: { listen: `${xdsTcp.host}:${xdsTcp.port}`, cert: pki.xdsServer.cert, key: pki.xdsServer.key, clientCa: pki.ca.cert } },
    admin: { listen: `${adminHttp.host}:${adminHttp.port}`, socket: adminSocket },
    discoveryPollMillis: 1000,
  };
  const configPath = join(dir, 'mvproxy.json');
  writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  // So a test can tell garbage not collected yet from memory kept: a full collection on demand.
  const gcOnSignal = join(dir, 'gc-on-signal.cjs');
  writeFileSync(gcOnSignal, "process.on('SIGUSR2', () => globalThis.gc());\n");
  const proc = new ManagedProcess({
    name: 'mvproxy',
    command: process.execPath,
    args: ['--expose-gc', `--require=${gcOnSignal}`, cliMain, 'serve', `--config=${configPath}`, '--log-level=warn'],
    logFile: join(dir, 'mvproxy.log'),
  });
  const adminUrl = `http://${adminHttp.host}:${adminHttp.port}`;
  await proc.waitReady('mvproxy serve', async (signal) => (await fetch(`${adminUrl}/healthz`, { signal })).ok, 30_000);
  const pid = proc.pid;
  if (pid === undefined) throw new Error('mvproxy serve has no pid');
  const kasB = pki.xdsClients['kas-b'];
  if (!kasB) throw new Error('internal: no xDS client certificate for kas-b');
  return {
    proc,
    pid,
    dir,
    adminUrl,
    adminHttp,
    adminSocket,
    xdsSocket,
    xdsTcp,
    xdsTls: { ca: readFileSync(pki.ca.cert), cert: readFileSync(kasB.cert), key: readFileSync(kasB.key) },
    pki,
    async collectGarbage() {
      process.kill(pid, 'SIGUSR2');
      await new Promise((resolve) => setTimeout(resolve, 500));
      const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
      const heapUsedBytes = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(metrics)?.[1]);
      if (!Number.isFinite(heapUsedBytes)) throw new Error('no nodejs_heap_size_used_bytes in /metrics');
      return { heapUsedBytes };
    },
    async stop() {
      await proc.stop(5000);
      const how = proc.describeExit();
      rmSync(dir, { recursive: true, force: true });
      return how;
    },
  };
}

function deadline(ms: number): grpc.CallOptions {
  return { deadline: Date.now() + ms };
}

/** How long `work` took, in ms; rejects if it does. */
export async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** Writes `request` on a new bidirectional stream, resolves with the first answer, then cancels the stream and closes the client. */
function firstAnswer<Req, Res>(client: grpc.Client, call: grpc.ClientDuplexStream<Req, Res>, request: Req): Promise<Res> {
  return new Promise((resolve, reject) => {
    const finish = (err: Error | undefined, response?: Res): void => {
      call.removeAllListeners('data');
      call.on('error', () => undefined);
      call.cancel();
      client.close();
      if (err) reject(err);
      else if (response) resolve(response);
    };
    call.on('data', (response: Res) => finish(undefined, response));
    call.on('error', (err: Error) => finish(err));
    call.write(request);
  });
}

/** An ADS stream as a sidecar opens it: subscribes to clusters and resolves with the first answer. */
export function adsFirstResponse(address: string, credentials: grpc.ChannelCredentials, node: string, timeoutMs = 5000): Promise<DiscoveryResponse__Output> {
  const Client = envoyGrpc().envoy.service.discovery.v3.AggregatedDiscoveryService;
  const client = new Client(address, credentials);
  return firstAnswer(client, client.StreamAggregatedResources(deadline(timeoutMs)), { node: { id: node }, type_url: TYPE_URL.cluster, resource_names: [] });
}

/** One ext_proc exchange as a sidecar makes it for `/apis`: the request headers, and the answer to them. */
export function extProcExchange(address: string, credentials: grpc.ChannelCredentials, node: string, timeoutMs = 5000): Promise<ProcessingResponse__Output> {
  const Client = envoyGrpc().envoy.service.ext_proc.v3.ExternalProcessor;
  const client = new Client(address, credentials);
  const metadata = new grpc.Metadata();
  metadata.set(EXT_PROC_NODE_METADATA, node);
  metadata.set(EXT_PROC_DOCUMENT_METADATA, 'group-discovery');
  const headers = [
    [':method', 'GET'],
    [':path', '/apis'],
    [':authority', 'apiserver'],
    ['accept', AGGREGATED_DISCOVERY_JSON],
  ];
  return firstAnswer(client, client.Process(metadata, deadline(timeoutMs)), {
    request_headers: { headers: { headers: headers.map(([key, value]) => ({ key, raw_value: Buffer.from(value ?? '') })) }, end_of_stream: true },
  });
}

/** One access-log stream as a sidecar sends it (one entry), ended cleanly. */
export function accessLogExchange(address: string, credentials: grpc.ChannelCredentials, node: string, timeoutMs = 5000): Promise<void> {
  const Client = envoyGrpc().envoy.service.accesslog.v3.AccessLogService;
  const client = new Client(address, credentials);
  return new Promise((resolve, reject) => {
    const call = client.StreamAccessLogs(deadline(timeoutMs), (err: grpc.ServiceError | null) => {
      client.close();
      if (err) reject(err);
      else resolve();
    });
    call.write({ identifier: { node: { id: node }, log_name: ACCESS_LOG_NAME }, http_logs: { log_entry: [{}] } });
    call.end();
  });
}

/** The admin API's GetStatus over its socket: the apiservers it knows, by name. */
export function adminStatusNames(socketPath: string, timeoutMs = 5000): Promise<string[]> {
  const Admin = adminGrpc().mvproxy.admin.v1.Admin;
  const client = new Admin(`unix://${socketPath}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    client.GetStatus({}, deadline(timeoutMs), (err, status) => {
      client.close();
      if (err) reject(err);
      else resolve((status?.apiservers ?? []).map((a) => a.name ?? ''));
    });
  });
}
