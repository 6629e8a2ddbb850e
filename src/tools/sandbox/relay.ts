// How the host reaches the sandbox's network namespace (network mode
// `namespace`): a host process cannot connect into another network
// namespace, but a Unix socket is a filesystem object and crosses it. The
// relay agent (relayAgent.ts) runs inside the namespace on one Unix socket;
// for every TCP endpoint the host uses, the sandbox listens on
// 127.0.0.1:<port> on the host and hands each connection to the agent with
// the target's in-namespace `host:port` as its first line.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedProcess } from './processes.js';
import { relayHeader, type RelayTarget } from './relayHeader.js';

const agentMain = fileURLToPath(new URL('./relayAgent.js', import.meta.url));

/** Pipes `client` to the agent at `socketPath`, announcing `target` first. */
export function relayConnection(client: Socket, socketPath: string, target: RelayTarget): void {
  // Half-open both ways: a side that is done sending may still be answered.
  const agent = connect({ path: socketPath, allowHalfOpen: true });
  agent.write(relayHeader(target));
  client.pipe(agent);
  agent.pipe(client);
  agent.on('error', () => client.destroy());
  client.on('error', () => agent.destroy());
  agent.on('close', () => client.destroy());
  client.on('close', () => agent.destroy());
}

export class HostRelays {
  private readonly servers: Server[] = [];
  private readonly exposed = new Map<number, RelayTarget>();

  private constructor(
    private readonly agent: ManagedProcess,
    readonly socketPath: string,
  ) {}

  /** Starts the agent inside the namespace (`enter`); resolves once its socket accepts. */
  static async start(dir: string, logsDir: string, enter: readonly string[]): Promise<HostRelays> {
    const socketPath = join(dir, 'relay.sock');
    const agent = new ManagedProcess({ name: 'relay', command: process.execPath, args: [agentMain, socketPath], logFile: join(logsDir, 'relay.log'), enter });
    const accepts = (): Promise<boolean> =>
      new Promise((resolve) => {
        const probe = connect(socketPath, () => {
          probe.destroy();
          resolve(true);
        });
        probe.on('error', () => resolve(false));
      });
    try {
      await agent.waitReady('the relay agent', accepts, 10_000, 50);
    } catch (err) {
      await agent.kill();
      throw err;
    }
    return new HostRelays(agent, socketPath);
  }

  /** Listens on the host's 127.0.0.1:`hostPort` and relays every connection to `target` inside the namespace. */
  async expose(hostPort: number, target: RelayTarget): Promise<void> {
    if (this.exposed.has(hostPort)) throw new Error(`internal: host port ${hostPort} is relayed already`);
    const server = createServer({ allowHalfOpen: true }, (client) => relayConnection(client, this.socketPath, target));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(hostPort, '127.0.0.1', () => resolve());
    });
    this.servers.push(server);
    this.exposed.set(hostPort, target);
  }

  /** What each host port reaches (the state file's view). */
  targets(): ReadonlyMap<number, RelayTarget> {
    return this.exposed;
  }

  async stop(): Promise<void> {
    for (const server of this.servers) server.close();
    // Its connections end with it, and with them every relayed host connection.
    await this.agent.kill();
  }
}
