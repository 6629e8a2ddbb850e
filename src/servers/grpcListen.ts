// Where the control plane's gRPC services listen: one server suited to
// long-lived Envoy streams, on a Unix socket (access by file permissions) or
// on TCP with mutual TLS, and its shutdown. Used for the xDS socket (ADS,
// ext_proc, access log) and the admin socket alike.
import { lstatSync, unlinkSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { formatHost } from '../model/cluster.js';

/** A gRPC server suited to long-lived Envoy streams (other services may be added to it). */
export function createGrpcServer(options: grpc.ServerOptions = {}): grpc.Server {
  return new grpc.Server({
    // Find dead Envoys (and half-open TCP) instead of holding their state forever.
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    ...options,
  });
}

function bind(server: grpc.Server, address: string, creds: grpc.ServerCredentials): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.bindAsync(address, creds, (err, port) => (err ? reject(err) : resolve(port)));
  });
}

/**
 * Serves on a Unix socket (insecure: access is controlled by file
 * permissions). A stale socket file left by a previous run is removed.
 * Returns the address, `unix:///path`.
 */
export async function listenUnix(server: grpc.Server, path: string): Promise<string> {
  if (!path.startsWith('/')) throw new Error(`listenUnix: path must be absolute, got ${path}`);
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
    else throw new Error(`listenUnix: ${path} exists and is not a socket`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const address = `unix://${path}`;
  await bind(server, address, grpc.ServerCredentials.createInsecure());
  return address;
}

export interface MtlsListenOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** PEM: CA that client certificates must chain to. */
  ca: Buffer;
  /** PEM: server certificate chain and key. */
  cert: Buffer;
  key: Buffer;
}

/** Serves on TCP with mutual TLS (client certificate required). Returns the bound port. */
export function listenMtls(server: grpc.Server, opts: MtlsListenOptions): Promise<number> {
  const creds = grpc.ServerCredentials.createSsl(opts.ca, [{ cert_chain: opts.cert, private_key: opts.key }], true);
  return bind(server, formatHost(opts), creds);
}

/** Stops a gRPC server: graceful for graceMs, then cuts remaining (ADS streams never end on their own). */
export function shutdownGrpcServer(server: grpc.Server, graceMs = 1000): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    timer.unref();
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
