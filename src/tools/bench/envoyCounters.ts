// Envoy's own counters of the sidecar and of the minimal Envoy, read from
// their admin interface before and after a measurement: how many requests the
// listener took and how many upstream connections each cluster opened. A
// filter that answers locally while the upstream body is unread resets the
// upstream HTTP/1.1 connection, so the next request pays a new TLS
// connection to the apiserver: these counts show it per path.
import { envoyAdminGet } from '../../util/envoyAdmin.js';

/** Counter values by stat name. */
export type Counters = Record<string, number>;

/** Clusters that lead to no apiserver: the control plane's (xDS, ext_proc) and the admin interface's. */
const NOT_APISERVER: ReadonlySet<string> = new Set(['mvproxy_xds', 'envoy_admin']);

const CLUSTER_COUNTER = /^cluster\.(.+)\.(upstream_cx_total|upstream_cx_destroy_with_active_rq)$/;

/** Pure: the `name: value` lines of Envoy's /stats whose value is a whole number (histograms and text left out). */
export function parseCounters(text: string): Counters {
  const out: Counters = {};
  for (const line of text.split('\n')) {
    const m = /^([^:\s]+): (\d+)$/.exec(line.trim());
    if (m?.[1] && m[2] !== undefined) out[m[1]] = Number(m[2]);
  }
  return out;
}

/** The request and connection counters of one Envoy, through its admin interface (a Unix socket). */
export async function readCounters(adminSocket: string): Promise<Counters> {
  const filter = encodeURIComponent('(upstream_cx_total|upstream_cx_destroy_with_active_rq|downstream_rq_total)$');
  return parseCounters(await envoyAdminGet(adminSocket, `/stats?filter=${filter}`));
}

export interface ConnectionCount {
  /** Requests the listener took (its connection manager's `downstream_rq_total`). */
  requests: number;
  /** Upstream connections opened to apiservers: every cluster's `upstream_cx_total` but the control plane's and the admin's. */
  upstreamConnections: number;
  /** The same per 1,000 requests (one decimal); absent when no request was taken. */
  perThousandRequests?: number;
  /** Connections opened by each cluster that opened any. */
  byCluster: Record<string, number>;
  /**
   * Upstream connections closed with a request in flight (`upstream_cx_destroy_with_active_rq`):
   * a reset by a filter's local reply, or a client gone mid-answer (h2load ends
   * each round with requests in flight), which the next requests pay for with new connections.
   */
  closedWithRequestInFlight: number;
}

/** Pure: what happened between two readings of an Envoy whose listener's stat prefix is `listener`. */
export function connectionCount(before: Counters, after: Counters, listener: string): ConnectionCount {
  const requestsKey = `http.${listener}.downstream_rq_total`;
  const requests = (after[requestsKey] ?? 0) - (before[requestsKey] ?? 0);
  const byCluster: Record<string, number> = {};
  let upstreamConnections = 0;
  let closedWithRequestInFlight = 0;
  for (const [name, value] of Object.entries(after).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const [, cluster, counter] = CLUSTER_COUNTER.exec(name) ?? [];
    if (cluster === undefined || NOT_APISERVER.has(cluster)) continue;
    const delta = value - (before[name] ?? 0);
    if (counter !== 'upstream_cx_total') {
      closedWithRequestInFlight += delta;
      continue;
    }
    if (delta === 0) continue;
    byCluster[cluster] = delta;
    upstreamConnections += delta;
  }
  return {
    requests,
    upstreamConnections,
    ...(requests > 0 ? { perThousandRequests: Math.round((upstreamConnections / requests) * 10_000) / 10 } : {}),
    byCluster,
    closedWithRequestInFlight,
  };
}

/** An Envoy whose counters a measurement reads: the side it stands for, its admin socket, its listener's stat prefix. */
export interface CountedEnvoy {
  side: string;
  adminSocket: string;
  listener: string;
}

/** Runs `measure` between two readings of every Envoy; the counts are keyed by side. */
export async function withConnectionCounts<T>(
  envoys: readonly CountedEnvoy[],
  measure: () => Promise<T>,
): Promise<{ result: T; connections: Record<string, ConnectionCount> }> {
  const before = await Promise.all(envoys.map((e) => readCounters(e.adminSocket)));
  const result = await measure();
  const after = await Promise.all(envoys.map((e) => readCounters(e.adminSocket)));
  const connections = Object.fromEntries(envoys.map((e, i) => [e.side, connectionCount(before[i] ?? {}, after[i] ?? {}, e.listener)]));
  return { result, connections };
}

/** One line for the progress log: per side, connections per 1,000 requests. */
export function describeConnections(what: string, connections: Record<string, ConnectionCount>): string {
  const sides = Object.entries(connections).map(
    ([side, c]) =>
      `${side} ${c.perThousandRequests ?? '-'} (${c.upstreamConnections} over ${c.requests} requests; ${c.closedWithRequestInFlight} closed with a request in flight)`,
  );
  return `${what}: upstream connections per 1,000 requests: ${sides.join(', ')}`;
}
