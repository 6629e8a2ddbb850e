import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { randomInt } from 'node:crypto';

/** The lowest port picked: below it live the well-known ports of Kubernetes and its neighbours (6443, 2379, 10250, ...). */
const LOWEST_PICKED = 20_000;
/** Tries per port before giving up: a range this wide is never nearly full on a test machine. */
const TRIES_PER_PORT = 200;

/**
 * The ports `freePorts` picks from: those below the kernel's ephemeral range
 * (ip_local_port_range). A port picked free is closed before its user binds
 * it; inside the ephemeral range any bind(0) or connect() on the machine (an
 * Envoy's admin, a client) may take it in between, and the user then finds
 * someone else on its port. Undefined where the range cannot be read or
 * leaves no room below it: the kernel picks then.
 */
export function pickableRange(rangeFile = '/proc/sys/net/ipv4/ip_local_port_range'): [number, number] | undefined {
  let ephemeralLow: number;
  try {
    ephemeralLow = Number.parseInt(readFileSync(rangeFile, 'utf8').trim().split(/\s+/, 1)[0] ?? '', 10);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(ephemeralLow) || ephemeralLow - 1 - LOWEST_PICKED < 1_000) return undefined;
  return [LOWEST_PICKED, ephemeralLow - 1];
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.removeListener('error', reject);
      const address = server.address();
      if (address === null || typeof address === 'string') reject(new Error('could not allocate a port'));
      else resolve(address.port);
    });
  });
}

async function holdPort(server: Server, range: PortRange, taken: ReadonlySet<number>): Promise<number> {
  if (range === 'kernel') return listen(server, 0);
  for (let tries = 0; tries < TRIES_PER_PORT; tries++) {
    const port = randomInt(range[0], range[1] + 1);
    if (taken.has(port)) continue; // held by this call's own server: its bind would fail anyway
    try {
      return await listen(server, port);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
  throw new Error(`no free port found in ${range[0]}-${range[1]} after ${TRIES_PER_PORT} tries`);
}

/** Lowest and highest port to pick from, or 'kernel': bind(0) picks. */
export type PortRange = [number, number] | 'kernel';

/**
 * `count` distinct ports that are free right now on 127.0.0.1, from
 * `range` (pickableRange by default, where there is one). All are held open
 * until every one is picked, so none is handed out twice.
 */
export async function freePorts(count: number, range: PortRange = pickableRange() ?? 'kernel'): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  const picked = new Set<number>();
  try {
    for (const server of servers) picked.add(await holdPort(server, range, picked));
    return [...picked];
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()))));
  }
}

/** Throws a clear error if `port` is already taken on 127.0.0.1. */
export async function assertPortFree(port: number, purpose: string): Promise<void> {
  const server = createServer();
  try {
    await listen(server, port);
  } catch (err) {
    throw new Error(`port ${port} for ${purpose} is not available: ${(err as Error).message}`);
  } finally {
    server.close();
  }
}
