import { createServer } from 'node:net';

/**
 * `count` distinct ports that are free right now on 127.0.0.1. All are held
 * open until every one is picked, so the kernel cannot hand out one twice.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (server) =>
          new Promise<number>((resolve, reject) => {
            server.once('error', reject);
            server.listen(0, '127.0.0.1', () => {
              const address = server.address();
              if (address === null || typeof address === 'string') reject(new Error('could not allocate a port'));
              else resolve(address.port);
            });
          }),
      ),
    );
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }
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
