// The control plane's operator HTTP endpoint (loopback by default): Prometheus
// metrics, the status dump and a health check. No authentication, so it serves
// only reads, and every connection is bounded so none can starve the others.
import { createServer, type Server } from 'node:http';

/** What the endpoint serves, from the running control plane. */
export interface AdminHttpRoutes {
  metrics: () => Promise<{ type: string; body: string }>;
  /** /status: everything the control plane believes and has pushed, as one JSON value. */
  status: () => unknown;
}

/**
 * The admin HTTP server's limits (/metrics, /status, /healthz: small GETs
 * from a scraper or an operator): a connection that is slow, silent or
 * oversized is cut instead of held, so none can starve the others.
 */
export const ADMIN_HTTP_LIMITS = {
  /** The whole request head must arrive within this. */
  headersTimeoutMs: 10_000,
  /** The whole request, body included. */
  requestTimeoutMs: 15_000,
  /** How often the two above are enforced. */
  connectionsCheckingIntervalMs: 1000,
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: 5000,
  /** A socket with no traffic at all is closed after this. */
  idleSocketTimeoutMs: 30_000,
  maxHeaderBytes: 16 * 1024,
  maxHeadersCount: 64,
  /** Connections beyond this are closed at once (each holds a file descriptor the gRPC servers also need). */
  maxConnections: 256,
} as const;

/** Listens on host:port; resolves with the server and its URL (the port is the one bound when 0 was asked). */
export function startAdminHttp(host: string, port: number, routes: AdminHttpRoutes): Promise<{ server: Server; url: string }> {
  const limits = ADMIN_HTTP_LIMITS;
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
    },
    (req, res) => {
      const send = (status: number, type: string, body: string): void => {
        res.writeHead(status, { 'content-type': type });
        res.end(body);
      };
      if (req.url === '/metrics') {
        routes.metrics().then(
          ({ type, body }) => send(200, type, body),
          (err: Error) => send(500, 'text/plain', err.message),
        );
      } else if (req.url === '/status') {
        send(200, 'application/json', `${JSON.stringify(routes.status(), null, 2)}\n`);
      } else if (req.url === '/healthz') {
        send(200, 'text/plain', 'ok\n');
      } else {
        send(404, 'text/plain', 'not found: try /metrics, /status or /healthz\n');
      }
    },
  );
  server.maxHeadersCount = limits.maxHeadersCount;
  server.maxConnections = limits.maxConnections;
  server.setTimeout(limits.idleSocketTimeoutMs, (socket) => socket.destroy());
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address();
      resolve({ server, url: typeof addr === 'object' && addr ? `http://${host}:${addr.port}` : `http://${host}:${port}` });
    });
  });
}

export function stopAdminHttp(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    // Not even a connection in the middle of a request (or pretending to be) holds the shutdown.
    server.closeAllConnections();
  });
}
