// Deterministic names of the Envoy resources generated for a sidecar.

export const LISTENER_NAME = 'apiserver';
export const ROUTE_CONFIG_NAME = 'apiserver';
export const LOCAL_CLUSTER = 'local';

/** Suffix of the HTTP/1.1-only variant of a cluster, for upgrade requests (exec, attach, port-forward, proxy). */
export const HTTP1_SUFFIX = '-h1';

/**
 * The cluster (and EDS service) name for a set of apiservers a route sends to:
 * `peer-<name>` for one peer, `peers-<a>+<b>` for several (sorted). Names are
 * URI-component-encoded so that '+' and other separators in operator-chosen
 * names cannot make two sets collide.
 */
export function peerClusterName(peerNames: readonly string[]): string {
  const encoded = [...peerNames].sort().map((name) => encodeURIComponent(name));
  return encoded.length === 1 ? `peer-${encoded[0]}` : `peers-${encoded.join('+')}`;
}

export function http1ClusterName(cluster: string): string {
  return `${cluster}${HTTP1_SUFFIX}`;
}

/** Name of the ext_proc HTTP filter; per-route configs refer to it. */
export const EXT_PROC_FILTER = 'envoy.filters.http.ext_proc';

/** gRPC metadata on every ext_proc stream: the xDS node of the calling sidecar. */
export const EXT_PROC_NODE_METADATA = 'x-mvproxy-node';

/**
 * gRPC metadata added by the aggregated discovery route (per-route override):
 * an authorized answer may be replaced with merged discovery. Absent on certificate routes,
 * so their ext_proc calls assert identity only.
 */
export const EXT_PROC_DISCOVERY_METADATA = 'x-mvproxy-discovery';

/** Response code details of ext_proc's own failures (gRPC error, message timeout) in Envoy. */
export const EXT_PROC_ERROR_DETAILS_PREFIX = 'ext_proc_error';
