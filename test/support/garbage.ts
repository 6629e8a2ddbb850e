// Bytes that are not gRPC, for "garbage on the port changes nothing" specs.
import { connect } from 'node:net';

/** An HTTP/1.1 request, a broken HTTP/2 preface and frame, and 4 KiB of binary noise. */
const GARBAGE: readonly Buffer[] = [
  Buffer.from('GET /mvproxy.admin.v1.Admin/GetStatus HTTP/1.1\r\nHost: x\r\n\r\n'),
  Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from('\x00\x00\x04\x99\xff\xff\xff\xff\xffjunkjunkjunk', 'latin1')]),
  Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)),
];

/** Sends each piece of GARBAGE on its own connection to a Unix socket and waits for the server to drop it. */
export async function sendGarbage(socketPath: string): Promise<void> {
  for (const junk of GARBAGE) {
    await new Promise<void>((resolve) => {
      const socket = connect(socketPath, () => socket.end(junk));
      socket.on('error', () => resolve());
      socket.on('close', () => resolve());
      socket.resume();
    });
  }
}
