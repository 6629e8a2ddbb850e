// The inbound relay (network mode `namespace`; relay.ts is the host side):
// run with node inside the sandbox's network namespace, it listens on the
// namespace's 127.0.0.1:PORT and pipes each connection to a Unix socket the
// host serves, which connects to the host's own 127.0.0.1:PORT. What a test
// runs on the host (an egress proxy, an extension server) is then reached
// from inside the namespace at the address it has on the host.
// Usage: node relayInbound.js PORT SOCKET
import { connect, createServer } from 'node:net';

const [port, socketPath] = [Number(process.argv[2]), process.argv[3]];
if (!Number.isInteger(port) || port < 1 || port > 65535 || !socketPath) {
  process.stderr.write('usage: relayInbound.js PORT SOCKET\n');
  process.exit(2);
}
const server = createServer({ allowHalfOpen: true }, (client) => {
  // Half-open both ways, as the other relays: a side done sending may still be answered.
  const host = connect({ path: socketPath, allowHalfOpen: true });
  client.pipe(host);
  host.pipe(client);
  host.on('error', () => client.destroy());
  client.on('error', () => host.destroy());
  host.on('close', () => client.destroy());
  client.on('close', () => host.destroy());
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`relaying 127.0.0.1:${port} to ${socketPath}\n`));
