// The inbound relay (network mode `namespace`; relay.ts is the host side):
// run with node inside the sandbox's network namespace, it listens on the
// namespace's HOST:PORT (default 127.0.0.1) and pipes each connection to a
// Unix socket the host serves, which connects to the host's own
// 127.0.0.1:PORT. What a test runs on the host (an egress proxy, an extension
// server, a pod's stand-in) is then reached from inside the namespace.
// Usage: node relayInbound.js PORT SOCKET [HOST]
import { connect, createServer } from 'node:net';
import { pipeBoth, RELAY_TCP } from './relayPipe.js';

const [port, socketPath, host = '127.0.0.1'] = [Number(process.argv[2]), process.argv[3], process.argv[4]];
if (!Number.isInteger(port) || port < 1 || port > 65535 || !socketPath) {
  process.stderr.write('usage: relayInbound.js PORT SOCKET [HOST]\n');
  process.exit(2);
}
const server = createServer(RELAY_TCP, (client) => {
  pipeBoth(client, connect({ path: socketPath, allowHalfOpen: true }));
});
server.listen(port, host, () => process.stdout.write(`relaying ${host}:${port} to ${socketPath}\n`));
