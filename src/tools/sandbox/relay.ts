// How the host reaches the sandbox's network namespace (network mode
// `namespace`): a host process cannot connect into another network
// namespace, but a Unix socket is a filesystem object and crosses it. The
// relay agent (relayAgent.ts) runs inside the namespace on one Unix socket;
// for every TCP endpoint the host uses, the sandbox listens on
// 127.0.0.1:<port> on the host and hands each connection to the agent with
// the target's in-namespace `host:port` as its first line.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { chmodSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedProcess } from './processes.js';
import { relayHeader, type RelayTarget } from './relayHeader.js';
import { pipeBoth, RELAY_TCP } from './relayPipe.js';

const agentMain = fileURLToPath(new URL('./relayAgent.js', import.meta.url));
const inboundMain = fileURLToPath(new URL('./relayInbound.js', import.meta.url));

/** A connection from the host to `target` inside the namespace, through the agent at `socketPath`. */
export function dialInside(socketPath: string, target: RelayTarget): Socket {
  const agent = connect({ path: socketPath, allowHalfOpen: true });
  agent.write(relayHeader(target));
  return agent;
}

/** Pipes `client` to the agent at `socketPath`, announcing `target` first. */
export function relayConnection(client: Socket, socketPath: string, target: RelayTarget): void {
  // Half-open both ways: a side that is done sending may still be answered.
  pipeBoth(client, dialInside(socketPath, target));
}

export class HostRelays {
  private readonly servers: Server[] = [];
  private readonly inbound: ManagedProcess[] = [];
  private readonly reachedHostPorts = new Set<string>();
  private readonly exposed = new Map<number, RelayTarget>();

  private constructor(
    private readonly agent: ManagedProcess,
    readonly socketPath: string,
    private readonly dir: string,
    private readonly logsDir: string,
    private readonly enter: readonly string[],
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
    return new HostRelays(agent, socketPath, dir, logsDir, enter);
  }

  /** Listens on the host's 127.0.0.1:`hostPort` and relays every connection to `target` inside the namespace. */
  async expose(hostPort: number, target: RelayTarget): Promise<void> {
    if (this.exposed.has(hostPort)) throw new Error(`internal: host port ${hostPort} is relayed already`);
    const server = createServer(RELAY_TCP, (client) => relayConnection(client, this.socketPath, target));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(hostPort, '127.0.0.1', () => resolve());
    });
    this.servers.push(server);
    this.exposed.set(hostPort, target);
  }

  /**
   * Makes the host's 127.0.0.1:`port` reachable at `at`:`port` inside the
   * namespace (default 127.0.0.1; or a node address): the host serves a Unix
   * socket that connects there, and an inbound relay (relayInbound.ts) in the
   * namespace listens on that address. Resolves once it listens.
   */
  async reachHost(port: number, at = '127.0.0.1'): Promise<void> {
    const key = `${at}:${port}`;
    if (this.reachedHostPorts.has(key)) return;
    const socketPath = join(this.dir, `host-${at}-${port}.sock`);
    rmSync(socketPath, { force: true });
    const server = createServer({ allowHalfOpen: true }, (inside) => pipeBoth(inside, connect({ ...RELAY_TCP, port, host: '127.0.0.1' })));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
    chmodSync(socketPath, 0o600);
    this.servers.push(server);
    const logFile = join(this.logsDir, `relay-host-${at}-${port}.log`);
    rmSync(logFile, { force: true });
    const args = [inboundMain, String(port), socketPath, at];
    const relay = new ManagedProcess({ name: `relay-host-${key}`, command: process.execPath, args, logFile, enter: this.enter });
    this.inbound.push(relay);
    await relay.waitReady(`the inbound relay of host port ${port} at ${at}`, async () => readFileSync(logFile, 'utf8').includes('relaying'), 10_000, 50);
    this.reachedHostPorts.add(key);
  }

  /** What each host port reaches (the state file's view). */
  targets(): ReadonlyMap<number, RelayTarget> {
    return this.exposed;
  }

  async stop(): Promise<void> {
    for (const server of this.servers) server.close();
    await Promise.all(this.inbound.map((relay) => relay.kill()));
    // Its connections end with it, and with them every relayed host connection.
    await this.agent.kill();
  }
}
