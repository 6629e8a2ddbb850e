// The relay agent (network mode `namespace`; relay.ts is the host side): run
// with node inside the sandbox's network namespace, it listens on a Unix
// socket (a filesystem object, so the host reaches it although it cannot
// reach into the namespace's network) and connects each connection, over TCP
// inside the namespace, to the `host:port` named on its first line.
// Usage: node relayAgent.js SOCKET
import { connect, createServer, type Socket } from 'node:net';
import { chmodSync, rmSync } from 'node:fs';
import { parseRelayHeader, RELAY_HEADER_MAX_BYTES } from './relayHeader.js';
import { RELAY_TCP } from './relayPipe.js';

function relay(client: Socket): void {
  let buffered = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    buffered = Buffer.concat([buffered, chunk]);
    const end = buffered.indexOf(0x0a);
    if (end < 0) {
      if (buffered.length > RELAY_HEADER_MAX_BYTES) client.destroy();
      return;
    }
    client.off('data', onData);
    client.pause();
    const target = parseRelayHeader(buffered.subarray(0, end).toString('utf8'));
    if (!target) {
      client.destroy();
      return;
    }
    const rest = buffered.subarray(end + 1);
    const upstream = connect({ ...RELAY_TCP, port: target.port, host: target.host }, () => {
      if (rest.length > 0) upstream.write(rest);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    // Either side gone: both go (the host side then closes its client's connection).
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  };
  client.on('data', onData);
  client.on('error', () => undefined);
}

const socketPath = process.argv[2];
if (!socketPath) {
  process.stderr.write('usage: relayAgent.js SOCKET\n');
  process.exit(2);
}
rmSync(socketPath, { force: true });
const server = createServer({ allowHalfOpen: true }, relay);
server.listen(socketPath, () => {
  // Only the sandbox's owner may open it: it reaches everything in the namespace.
  chmodSync(socketPath, 0o600);
  process.stdout.write(`relaying ${socketPath}\n`);
});
