// The static part of a sidecar's config: who it is (node id), where the
// control plane is (cluster mvproxy_xds) and that everything else comes over
// ADS. Output is Envoy's JSON form (Envoy reads JSON as YAML), so durations
// are strings like "5s" and the object can be written to a file as is.
import { isIP } from 'node:net';

/** Static cluster that reaches the control plane; point other gRPC services (ext_proc, ALS) at it too. */
export const CONTROL_PLANE_CLUSTER = 'mvproxy_xds';

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

/** A PEM given as a file Envoy reads (and re-reads after rotation by restart) or inline. */
export type PemSource = { filename: string } | { inline: string };

export type ControlPlaneAddress =
  | { unixSocket: string }
  | {
      host: string;
      port: number;
      tls: {
        /** CA that signed the control plane's serving certificate. */
        ca: PemSource;
        /** Envoy's client certificate and key. */
        cert: PemSource;
        key: PemSource;
        /** SNI to send; also required as a DNS SAN of the server certificate. */
        serverName?: string;
      };
    };

/**
 * The node.metadata key naming the apiserver whose sidecar config an Envoy
 * runs, when its node id is not that name (servers/peerIdentity.ts reads it).
 */
export const NODE_APISERVER_KEY = 'apiserver';

export interface SidecarBootstrapOptions {
  /** xDS node id: the name of the apiserver this sidecar fronts, or of this Envoy when `apiserver` names that. */
  nodeId: string;
  /** The apiserver whose sidecar config this Envoy runs, when not its node id (node.metadata `apiserver`). */
  apiserver?: string;
  /** node.cluster; defaults to "mvproxy". */
  nodeCluster?: string;
  controlPlane: ControlPlaneAddress;
  /**
   * Other replicas of the control plane (mutual TLS, IP addresses), tried in
   * this order when the ones before fail their health checks (gRPC health,
   * every second): the sidecar keeps receiving updates while its own replica
   * is down. Empty or absent: one control plane.
   */
  failover?: ControlPlaneAddress[];
  /** Admin interface: always 127.0.0.1 (port 0 = any free port), or a Unix socket. */
  admin: { port: number } | { unixSocket: string };
  /** Static runtime values; adds layered_runtime with a static and an admin layer. */
  runtime?: JsonObject;
  /** Extra static clusters (in Envoy JSON form). */
  extraClusters?: JsonObject[];
  /** Client connections the sidecar holds at most (all listeners); default DEFAULT_MAX_DOWNSTREAM_CONNECTIONS. */
  maxDownstreamConnections?: number;
  /**
   * A loopback listener (127.0.0.1:port) that answers only `GET /stats/prometheus`
   * from the admin interface, for Prometheus (statsListener). Absent: none.
   */
  stats?: { port: number };
}

/** The static listener of `stats`, and the cluster it reaches the admin interface through. */
export const STATS_LISTENER = 'mvproxy_stats';
export const ADMIN_CLUSTER = 'envoy_admin';
/** The one admin path the stats listener serves. */
export const PROMETHEUS_STATS_PATH = '/stats/prometheus';

/**
 * Client connections a sidecar accepts at once; past it, a new connection is
 * closed at once while every open one keeps being served. kube-apiserver has
 * no such limit of its own (only its file-descriptor limit), so this is set
 * far above what a real cluster opens to one apiserver (a 5,000-node cluster
 * opens a few per node, spread over its apiservers) and is only a guard
 * against running out of file descriptors, which would fail requests on
 * connections already open. Each client connection can also hold one to an
 * apiserver: give the sidecar a file-descriptor limit (LimitNOFILE) of more
 * than twice this.
 */
export const DEFAULT_MAX_DOWNSTREAM_CONNECTIONS = 100_000;

function dataSource(source: PemSource): JsonObject {
  return 'filename' in source ? { filename: source.filename } : { inline_string: source.inline };
}

/**
 * Every ext_proc stream is a request on the control-plane cluster (one per
 * request in flight for a document over the push budget), beside the ADS and access-log streams:
 * Envoy's default limit of 1024 would make a busy sidecar's discovery
 * requests fall back to the local document.
 */
const CONTROL_PLANE_CIRCUIT_LIMIT = 1_000_000;

/**
 * Envoy resets every ext_proc stream it is done with, and the control plane's
 * HTTP/2 server (Node, nghttp2) takes more than 1000 resets on one connection
 * (burst 1000, then 33 a second) for a rapid-reset attack and drops the
 * connection with every stream on it. A fresh connection every 500 streams
 * stays below that; the long-lived ADS and access-log streams simply stay on
 * their draining connection.
 */
const CONTROL_PLANE_STREAMS_PER_CONNECTION = 500;

/** Endpoint metadata that selects the mutual-TLS transport socket of the control-plane cluster. */
const TLS_MATCH = { mvproxy_xds_tls: true };

function tlsTransportSocket(tlsOptions: Extract<ControlPlaneAddress, { tls: unknown }>['tls']): JsonObject {
  const validation: JsonObject = { trusted_ca: dataSource(tlsOptions.ca) };
  const tls: JsonObject = {
    '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
    common_tls_context: {
      // gRPC servers (grpc-js/Node http2) insist on ALPN h2 over TLS.
      alpn_protocols: ['h2'],
      tls_certificates: [{ certificate_chain: dataSource(tlsOptions.cert), private_key: dataSource(tlsOptions.key) }],
      validation_context: validation,
    },
  };
  if (tlsOptions.serverName !== undefined) {
    tls['sni'] = tlsOptions.serverName;
    validation['match_typed_subject_alt_names'] = [{ san_type: 'DNS', matcher: { exact: tlsOptions.serverName } }];
  }
  return { name: 'envoy.transport_sockets.tls', typed_config: tls };
}

function endpointAddress(address: ControlPlaneAddress): JsonObject {
  return 'unixSocket' in address ? { pipe: { path: address.unixSocket } } : { socket_address: { address: address.host, port_value: address.port } };
}

/**
 * The preferred control plane at priority 0 and each failover replica at the
 * next priority: Envoy sends new streams to the best priority whose endpoint
 * passes its health check, so a dead or hung replica is left within about a
 * second and its ADS, ext_proc and access-log streams reopen on the next one.
 */
function replicatedControlPlaneCluster(cluster: JsonObject, all: ControlPlaneAddress[]): JsonObject {
  const tcp = all.filter((a): a is Extract<ControlPlaneAddress, { tls: unknown }> => !('unixSocket' in a));
  for (const a of tcp) {
    if (!isIP(a.host)) throw new Error(`control-plane replica ${a.host}: failover needs IP addresses (a static cluster), not host names`);
  }
  cluster['type'] = 'STATIC';
  cluster['load_assignment'] = {
    cluster_name: CONTROL_PLANE_CLUSTER,
    endpoints: all.map((address, priority) => ({
      priority,
      lb_endpoints: [
        {
          endpoint: { address: endpointAddress(address) },
          ...('unixSocket' in address ? {} : { metadata: { filter_metadata: { 'envoy.transport_socket_match': TLS_MATCH } } }),
        },
      ],
    })),
  };
  const firstTls = tcp[0];
  if (firstTls) cluster['transport_socket_matches'] = [{ name: 'mvproxy-xds-mtls', match: TLS_MATCH, transport_socket: tlsTransportSocket(firstTls.tls) }];
  cluster['health_checks'] = [
    { timeout: '1s', interval: '1s', no_traffic_interval: '1s', unhealthy_threshold: 1, healthy_threshold: 1, grpc_health_check: {} },
  ];
  // A replica that refuses a connection is left at once, not at the next health check.
  cluster['outlier_detection'] = {
    split_external_local_origin_errors: true,
    consecutive_local_origin_failure: 1,
    enforcing_consecutive_local_origin_failure: 100,
    interval: '1s',
    base_ejection_time: '2s',
    max_ejection_percent: 100,
  };
  cluster['upstream_connection_options'] = { tcp_keepalive: { keepalive_probes: 3, keepalive_time: 30, keepalive_interval: 10 } };
  return cluster;
}

function controlPlaneCluster(address: ControlPlaneAddress, failover: ControlPlaneAddress[] = []): JsonObject {
  const cluster: JsonObject = {
    name: CONTROL_PLANE_CLUSTER,
    connect_timeout: '5s',
    circuit_breakers: {
      thresholds: [
        {
          priority: 'DEFAULT',
          max_connections: CONTROL_PLANE_CIRCUIT_LIMIT,
          max_pending_requests: CONTROL_PLANE_CIRCUIT_LIMIT,
          max_requests: CONTROL_PLANE_CIRCUIT_LIMIT,
          max_retries: CONTROL_PLANE_CIRCUIT_LIMIT,
        },
      ],
    },
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        common_http_protocol_options: { max_requests_per_connection: CONTROL_PLANE_STREAMS_PER_CONNECTION },
        explicit_http_config: {
          http2_protocol_options: {
            // HTTP/2 pings find a dead control plane (or a dead NAT entry) in seconds.
            connection_keepalive: { interval: '30s', timeout: '10s' },
          },
        },
      },
    },
  };
  if (failover.length > 0) return replicatedControlPlaneCluster(cluster, [address, ...failover]);
  if ('unixSocket' in address) {
    cluster['type'] = 'STATIC';
    cluster['load_assignment'] = loadAssignment({ pipe: { path: address.unixSocket } });
    return cluster;
  }
  cluster['type'] = isIP(address.host) ? 'STATIC' : 'STRICT_DNS';
  cluster['load_assignment'] = loadAssignment({ socket_address: { address: address.host, port_value: address.port } });
  cluster['upstream_connection_options'] = {
    tcp_keepalive: { keepalive_probes: 3, keepalive_time: 30, keepalive_interval: 10 },
  };
  cluster['transport_socket'] = tlsTransportSocket(address.tls);
  return cluster;
}

function loadAssignment(address: JsonObject): JsonObject {
  return {
    cluster_name: CONTROL_PLANE_CLUSTER,
    endpoints: [{ lb_endpoints: [{ endpoint: { address } }] }],
  };
}

/**
 * Envoy's admin interface has no authentication and can stop the sidecar
 * (POST /quitquitquit) or drop its listeners, so it stays on a Unix socket.
 * Prometheus cannot scrape a socket: this loopback listener routes exactly
 * `GET /stats/prometheus` (any query, e.g. `?usedonly`) to the admin interface
 * through a static cluster, and answers 404 to everything else (other paths,
 * other methods, paths that only normalize to it). It is how Istio (15090) and
 * Envoy Gateway (19001) expose Envoy's stats. It does not count against the
 * client connection limit, so stats stay readable when the sidecar is full.
 */
function statsListener(port: number): JsonObject {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`stats port ${port}: expected 1 to 65535`);
  return {
    name: STATS_LISTENER,
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    ignore_global_conn_limit: true,
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              stat_prefix: STATS_LISTENER,
              // Matched on the normalized path: `/stats/../quitquitquit` is `/quitquitquit`, a 404.
              normalize_path: true,
              merge_slashes: true,
              path_with_escaped_slashes_action: 'REJECT_REQUEST',
              route_config: {
                name: STATS_LISTENER,
                virtual_hosts: [
                  {
                    name: STATS_LISTENER,
                    domains: ['*'],
                    routes: [
                      {
                        match: { path: PROMETHEUS_STATS_PATH, headers: [{ name: ':method', string_match: { exact: 'GET' } }] },
                        route: { cluster: ADMIN_CLUSTER, timeout: '10s' },
                      },
                      { match: { prefix: '/' }, direct_response: { status: 404 } },
                    ],
                  },
                ],
              },
              http_filters: [
                { name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } },
              ],
            },
          },
        ],
      },
    ],
  };
}

function adminCluster(adminAddress: JsonObject): JsonObject {
  return {
    name: ADMIN_CLUSTER,
    type: 'STATIC',
    connect_timeout: '1s',
    load_assignment: { cluster_name: ADMIN_CLUSTER, endpoints: [{ lb_endpoints: [{ endpoint: { address: adminAddress } }] }] },
  };
}

const ADS_SOURCE: JsonObject = { ads: {}, resource_api_version: 'V3' };

/** Envoy bootstrap for a sidecar whose clusters, endpoints, listeners and routes all come over ADS. */
export function sidecarBootstrap(opts: SidecarBootstrapOptions): JsonObject {
  const adminAddress: JsonObject =
    'unixSocket' in opts.admin
      ? { pipe: { path: opts.admin.unixSocket, mode: 0o600 } }
      : { socket_address: { address: '127.0.0.1', port_value: opts.admin.port } };
  const bootstrap: JsonObject = {
    node: {
      id: opts.nodeId,
      cluster: opts.nodeCluster ?? 'mvproxy',
      ...(opts.apiserver === undefined || opts.apiserver === opts.nodeId ? {} : { metadata: { [NODE_APISERVER_KEY]: opts.apiserver } }),
    },
    // The admin interface still answers with the connection limit reached.
    admin: { address: adminAddress, ignore_global_conn_limit: true },
    overload_manager: {
      resource_monitors: [
        {
          name: 'envoy.resource_monitors.global_downstream_max_connections',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig',
            max_active_downstream_connections: opts.maxDownstreamConnections ?? DEFAULT_MAX_DOWNSTREAM_CONNECTIONS,
          },
        },
      ],
    },
    dynamic_resources: {
      ads_config: {
        api_type: 'GRPC',
        transport_api_version: 'V3',
        grpc_services: [
          {
            envoy_grpc: {
              cluster_name: CONTROL_PLANE_CLUSTER,
              // Reconnect soon after a failed attempt: a sidecar and its replica often
              // start together, and until the stream is up the sidecar serves nothing.
              // Backoff (jittered) keeps a long outage cheap.
              retry_policy: { retry_back_off: { base_interval: '0.1s', max_interval: '2s' } },
            },
          },
        ],
        set_node_on_first_message_only: true,
      },
      cds_config: { ...ADS_SOURCE },
      lds_config: { ...ADS_SOURCE },
    },
    static_resources: {
      clusters: [controlPlaneCluster(opts.controlPlane, opts.failover), ...(opts.extraClusters ?? [])],
    },
  };
  if (opts.stats !== undefined) {
    if ('port' in opts.admin && opts.admin.port === 0)
      throw new Error('a stats listener needs the admin interface at a known address: a Unix socket or a fixed port');
    const upstream: JsonObject =
      'unixSocket' in opts.admin ? { pipe: { path: opts.admin.unixSocket } } : { socket_address: { address: '127.0.0.1', port_value: opts.admin.port } };
    const statics = bootstrap['static_resources'] as { clusters: JsonObject[]; listeners?: JsonObject[] };
    statics.clusters.push(adminCluster(upstream));
    statics.listeners = [statsListener(opts.stats.port)];
  }
  if (opts.runtime !== undefined) {
    bootstrap['layered_runtime'] = {
      layers: [
        { name: 'static', static_layer: opts.runtime },
        { name: 'admin', admin_layer: {} },
      ],
    };
  }
  return bootstrap;
}
