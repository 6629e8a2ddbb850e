import { createServer } from 'node:net';

/** A port that is free right now on 127.0.0.1 (the kernel picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('could not allocate a port');
  return address.port;
}

/** Throws a clear error if `port` is already taken on 127.0.0.1. */
export async function assertPortFree(port: number, purpose: string): Promise<void> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  } catch (err) {
    throw new Error(`port ${port} for ${purpose} is not available: ${(err as Error).message}`);
  } finally {
    server.close();
  }
}
