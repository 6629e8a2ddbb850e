// Clients that misbehave on a port (garbage, silent and slow connections) and
// the measures of a process that must survive them (resident memory, open
// file descriptors), for "every port the control plane opens" specs.
import { readdirSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { statusKb } from '../../src/tools/bench/procStat.js';

/** Where a port is: a Unix socket path, or TCP. */
export type PortTarget = { path: string } | { host: string; port: number };

export interface HoldOptions {
  /** Bytes sent right after connecting (a partial preface, a partial request line); none: silent. */
  prefix?: Buffer;
  /** Then one byte of `drip` every `dripIntervalMs` (a slow client), cycling. */
  drip?: Buffer;
  dripIntervalMs?: number;
  /** Do the TLS handshake first (with these options), then misbehave inside it. */
  tls?: ConnectionOptions;
}

/**
 * Connections opened and held on purpose; counts how many the server closed
 * on its own, and closes the rest on request.
 */
export class HeldConnections {
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closingOurselves = false;
  /** Connections that ended before closeAll(): the server cut them. */
  closedByServer = 0;
  /** Connections that could not be opened at all. */
  failedToOpen = 0;
  opened = 0;

  /** Opens `count` connections, resolving once each is connected (or failed). */
  async open(target: PortTarget, count: number, options: HoldOptions = {}): Promise<void> {
    await Promise.all(Array.from({ length: count }, () => this.openOne(target, options)));
  }

  private openOne(target: PortTarget, options: HoldOptions): Promise<void> {
    return new Promise((resolve) => {
      let connected = false;
      const onConnect = (): void => {
        connected = true;
        this.opened++;
        if (options.prefix) socket.write(options.prefix);
        if (options.drip && options.drip.length > 0) {
          const drip = options.drip;
          let i = 0;
          const timer = setInterval(() => {
            if (socket.destroyed) return clearInterval(timer);
            socket.write(drip.subarray(i % drip.length, (i % drip.length) + 1));
            i++;
          }, options.dripIntervalMs ?? 200);
          this.timers.add(timer);
        }
        resolve();
      };
      const socket: Socket = options.tls
        ? tlsConnect({ ...('path' in target ? { path: target.path } : { host: target.host, port: target.port }), ...options.tls }, onConnect)
        : 'path' in target
          ? connect(target.path, onConnect)
          : connect(target.port, target.host, onConnect);
      this.sockets.add(socket);
      socket.on('error', () => undefined);
      socket.resume(); // whatever the server says (SETTINGS, an error page) is read and dropped
      socket.on('close', () => {
        this.sockets.delete(socket);
        if (!connected) {
          this.failedToOpen++;
          resolve();
        } else if (!this.closingOurselves) this.closedByServer++;
      });
    });
  }

  /** Still open. */
  get stillOpen(): number {
    return this.sockets.size;
  }

  /** Closes every connection still open and waits for them to be closed. */
  async closeAll(): Promise<void> {
    this.closingOurselves = true;
    for (const timer of this.timers) clearInterval(timer);
    this.timers.clear();
    const closing = [...this.sockets].map((socket) => new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve()))));
    for (const socket of this.sockets) socket.destroy();
    await Promise.all(closing);
  }
}

/** Resident memory and open file descriptors of a process, from /proc. */
export function processFootprint(pid: number): { rssBytes: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rssBytes: statusKb(status, 'VmRSS') * 1024, fds: readdirSync(`/proc/${pid}/fd`).length };
}

export const MiB = 1024 * 1024;

/** Bytes to MiB with one decimal, for messages. */
export function mib(bytes: number): string {
  return (bytes / MiB).toFixed(1);
}
