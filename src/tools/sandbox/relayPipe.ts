// How the sandbox's relays (relay.ts, relayInbound.ts) join two connections.
import type { Socket } from 'node:net';

/** Pipes two connections into each other, half-open both ways (a side done sending may still be answered); either gone, both go. */
export function pipeBoth(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
}
