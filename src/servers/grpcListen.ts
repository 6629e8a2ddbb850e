// Where the control plane's gRPC services listen: one server suited to
// long-lived Envoy streams, on a Unix socket (access by file permissions) or
// on TCP with mutual TLS, and its shutdown. Used for the xDS socket (ADS,
// ext_proc, access log) and the admin socket alike.
//
// A Unix socket's file mode is its authorization, so it must never exist with
// a looser mode than intended, not even between bind() and chmod(): the
// socket is bound inside a fresh folder only we can enter (mkdtemp, 0700),
// given its mode there, and only then renamed to its path, atomically. The
// process umask is never touched (grpc-js binds asynchronously: a umask set
// around it would be the whole process's for an unknown time).
import { chmodSync, lstatSync, mkdtempSync, renameSync, rmSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { formatHost } from '../model/cluster.js';

/** An error a gRPC handler emits to end a call with `code`. */
export function grpcError(code: grpc.status, details: string): grpc.ServerErrorResponse {
  return { name: 'AdsError', message: details, code, details };
}

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

/** sun_path holds 108 bytes with its terminating NUL. */
const MAX_UNIX_SOCKET_PATH_BYTES = 107;

/** The sockets each server bound, to remove their files when it shuts down (libuv would unlink only the name it bound). */
const boundSockets = new WeakMap<grpc.Server, Array<{ path: string; ino: number }>>();

/**
 * Serves on a Unix socket (insecure: access is controlled by file
 * permissions), which appears at `path` with `mode` already set (default
 * owner only). A stale socket file left by a previous run is replaced.
 * Returns the address, `unix:///path`.
 */
export async function listenUnix(server: grpc.Server, path: string, mode = 0o600): Promise<string> {
  if (!path.startsWith('/')) throw new Error(`listenUnix: path must be absolute, got ${path}`);
  try {
    if (!lstatSync(path).isSocket()) throw new Error(`listenUnix: ${path} exists and is not a socket`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  // Clients connect by this name: it must fit.
  if (Buffer.byteLength(path) > MAX_UNIX_SOCKET_PATH_BYTES) {
    throw new Error(`listenUnix: ${path} is too long for a Unix socket (${Buffer.byteLength(path)} bytes; at most ${MAX_UNIX_SOCKET_PATH_BYTES})`);
  }
  // Same folder, so the rename is atomic; mkdtemp makes it 0700 and ours whatever the umask.
  const privateDir = mkdtempSync(join(dirname(path), '.mvp-'));
  const bindPath = join(privateDir, 's');
  try {
    if (Buffer.byteLength(bindPath) > MAX_UNIX_SOCKET_PATH_BYTES) {
      throw new Error(
        `listenUnix: ${path} is too long for a Unix socket bound in a private folder first (${bindPath}, ${Buffer.byteLength(bindPath)} bytes; at most ${MAX_UNIX_SOCKET_PATH_BYTES})`,
      );
    }
    const bindAddress = `unix://${bindPath}`;
    await bind(server, bindAddress, grpc.ServerCredentials.createInsecure());
    try {
      chmodSync(bindPath, mode);
      // Replaces a stale socket atomically: clients never see the path missing or with another mode.
      renameSync(bindPath, path);
      const sockets = boundSockets.get(server) ?? [];
      sockets.push({ path, ino: lstatSync(path).ino });
      boundSockets.set(server, sockets);
    } catch (err) {
      server.unbind(bindAddress);
      throw err;
    }
  } finally {
    rmSync(privateDir, { recursive: true, force: true });
  }
  return `unix://${path}`;
}

/** Removes the socket files `server` bound, unless another process has put its own there since. */
function removeSocketFiles(server: grpc.Server): void {
  for (const { path, ino } of boundSockets.get(server) ?? []) {
    try {
      if (lstatSync(path).ino === ino) unlinkSync(path);
    } catch {
      // already gone
    }
  }
  boundSockets.delete(server);
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

/** Stops a gRPC server: graceful for graceMs, then cuts remaining (ADS streams never end on their own); removes its socket files. */
export function shutdownGrpcServer(server: grpc.Server, graceMs = 1000): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      removeSocketFiles(server);
      resolve();
    };
    const timer = setTimeout(() => {
      server.forceShutdown();
      done();
    }, graceMs);
    timer.unref();
    server.tryShutdown(() => {
      clearTimeout(timer);
      done();
    });
  });
}
