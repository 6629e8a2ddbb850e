// Where the sidecars reach the control plane: the xDS gRPC server (ADS,
// ext_proc, access log, health) on a Unix socket for sidecars on this host
// and/or a TCP port with mutual TLS (config.ts, xds).
import type * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { listenMtls, listenUnix } from '../servers/grpcListen.js';
import type { ServeConfig } from './config.js';

/** Binds `server` where `xds` says; the addresses bound: the socket path, then host:port. */
export async function listenXds(server: grpc.Server, xds: ServeConfig['xds']): Promise<string[]> {
  const bound: string[] = [];
  if (xds.unixSocket) bound.push(await listenUnix(server, xds.unixSocket, xds.unixSocketMode));
  if (xds.tcp) {
    const tcp = xds.tcp;
    const port = await listenMtls(server, {
      host: tcp.host,
      port: tcp.port,
      ca: readFileSync(tcp.clientCa),
      cert: readFileSync(tcp.cert),
      key: readFileSync(tcp.key),
    });
    bound.push(`${tcp.host}:${port}`);
  }
  return bound;
}
