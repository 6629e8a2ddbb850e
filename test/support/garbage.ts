// Bytes that are not gRPC, for "garbage on the port changes nothing" specs.
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';

/** An HTTP/1.1 request, a broken HTTP/2 preface and frame, and 4 KiB of binary noise. */
export const GARBAGE: readonly Buffer[] = [
  Buffer.from('GET /mvproxy.admin.v1.Admin/GetStatus HTTP/1.1\r\nHost: x\r\n\r\n'),
  Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from('\x00\x00\x04\x99\xff\xff\xff\xff\xffjunkjunkjunk', 'latin1')]),
  Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)),
];

/**
 * Sends each piece of `pieces` on its own connection (a Unix socket path, or
 * TCP; inside TLS when `tls` is given) and waits for the server to drop it.
 */
export async function sendGarbage(
  target: string | { path: string } | { host: string; port: number },
  options: { tls?: ConnectionOptions; pieces?: readonly Buffer[] } = {},
): Promise<void> {
  const where = typeof target === 'string' ? { path: target } : target;
  for (const junk of options.pieces ?? GARBAGE) {
    await new Promise<void>((resolve) => {
      const onConnect = (): void => {
        socket.end(junk);
      };
      const socket: Socket = options.tls
        ? tlsConnect({ ...('path' in where ? { path: where.path } : { host: where.host, port: where.port }), ...options.tls }, onConnect)
        : 'path' in where
          ? connect(where.path, onConnect)
          : connect(where.port, where.host, onConnect);
      socket.on('error', () => resolve());
      socket.on('close', () => resolve());
      socket.resume();
    });
  }
}
