// The control plane's operator HTTP endpoint (loopback by default): the status
// page, Prometheus metrics, the status dump, a health check and readiness. No
// authentication, so it serves only reads, and every connection is bounded so
// none can starve the others.
import { createServer, type Server } from 'node:http';
import type { StatusInput } from './admin.js';
import { STATUS_PAGE_CSS, STATUS_PAGE_HTML, STATUS_PAGE_JS } from './statusPageAssets.js';

/** What the endpoint serves, from the running control plane. */
export interface AdminHttpRoutes {
  metrics: () => Promise<{ type: string; body: string }>;
  /** /status: everything the control plane believes and has pushed, as one JSON value. */
  status: () => unknown;
  /** /status-page.json: what the status page (/) draws (statusPage.ts). */
  page: () => unknown;
  /**
   * /readyz: whether this replica does all it is asked to (today: its
   * `kubernetes` Service publisher, when publishing is on, has not been
   * failing or holding for long); absent: always ready. /healthz (liveness)
   * never looks at it: a restart would not fix what makes it unready.
   */
  ready?: () => { ready: boolean; why: string };
}

/** The page's own files only: no inline script, nothing from elsewhere, no framing. */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
} as const;

const PAGE_FILES = new Map([
  ['/', { type: 'text/html; charset=utf-8', body: STATUS_PAGE_HTML }],
  ['/status-page.css', { type: 'text/css; charset=utf-8', body: STATUS_PAGE_CSS }],
  ['/status-page.js', { type: 'text/javascript; charset=utf-8', body: STATUS_PAGE_JS }],
]);

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
      const send = (status: number, type: string, body: string, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'content-type': type, ...headers });
        res.end(body);
      };
      const file = PAGE_FILES.get(req.url ?? '');
      if (file) {
        send(200, file.type, file.body, PAGE_HEADERS);
      } else if (req.url === '/status-page.json') {
        send(200, 'application/json', JSON.stringify(routes.page()), PAGE_HEADERS);
      } else if (req.url === '/metrics') {
        routes.metrics().then(
          ({ type, body }) => send(200, type, body),
          (err: Error) => send(500, 'text/plain', err.message),
        );
      } else if (req.url === '/status') {
        send(200, 'application/json', `${JSON.stringify(routes.status(), null, 2)}\n`);
      } else if (req.url === '/healthz') {
        send(200, 'text/plain', 'ok\n');
      } else if (req.url === '/readyz') {
        const r = routes.ready?.() ?? { ready: true, why: 'ok' };
        send(r.ready ? 200 : 503, 'text/plain', `${r.ready ? 'ok' : 'not ready'}: ${r.why}\n`);
      } else {
        send(404, 'text/plain', 'not found: try / (the status page), /metrics, /status, /healthz or /readyz\n');
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

/** /status: everything the control plane believes and has pushed, plans included, as one JSON value. Pure. */
export function statusDump(input: StatusInput): unknown {
  const { model, draining, plans, ads, replica, reports } = input;
  return {
    draining: [...draining].sort(),
    apiservers: model.apiservers.map((a) => ({
      name: a.endpoint.name,
      hostname: a.endpoint.hostname,
      lease: a.lease ? { name: a.lease.name, holderIdentity: a.lease.holderIdentity } : null,
      leaseGoneAt: a.leaseGoneAt ?? null,
      reachable: a.reachable,
      servedResources: a.servedSet.length,
    })),
    localOnly: model.localOnly,
    plans,
    xds: ads,
    replica,
    syncRecord: Object.fromEntries(reports),
    kubernetesService: input.kubernetesService ?? null,
  };
}
