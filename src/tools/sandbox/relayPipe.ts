// How the sandbox's relays (relay.ts, relayInbound.ts) join two connections.
import type { Socket } from 'node:net';

/**
 * Every TCP end of a relay: half-open (a side done sending may still be
 * answered) and without Nagle's algorithm. A relay forwards each chunk as it
 * reads it; with Nagle on, a response that reaches it in two reads holds its
 * tail until the client ACKs the head, and a client waiting for that tail
 * delays its ACK up to 40 ms: a stall no client of the real apiserver or
 * Envoy (both TCP_NODELAY) sees, landing on whichever side answers in pieces.
 */
export const RELAY_TCP = { allowHalfOpen: true, noDelay: true } as const;

/** Pipes two connections into each other, half-open both ways (a side done sending may still be answered); either gone, both go. */
export function pipeBoth(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
}
