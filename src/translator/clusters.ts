// Upstream clusters: the local apiserver, each peer, and each set of peers a
// route spreads over, every one in four flavours (names.ts, UpstreamFlavour):
// HTTP/1.1 or HTTP/2, with or without the front-proxy certificate.
import { isIP } from 'node:net';
import type { Cluster } from '../generated/envoy/config/cluster/v3/Cluster.js';
import type { ClusterLoadAssignment } from '../generated/envoy/config/endpoint/v3/ClusterLoadAssignment.js';
import type { UpstreamTlsContext } from '../generated/envoy/extensions/transport_sockets/tls/v3/UpstreamTlsContext.js';
import type { Http11ProxyUpstreamTransport } from '../generated/envoy/extensions/transport_sockets/http_11_proxy/v3/Http11ProxyUpstreamTransport.js';
import type { Address } from '../generated/envoy/config/core/v3/Address.js';
import type { TransportSocket } from '../generated/envoy/config/core/v3/TransportSocket.js';
import type { HttpProtocolOptions } from '../generated/envoy/extensions/upstreams/http/v3/HttpProtocolOptions.js';
import type { PlannedApiserver } from '../planner/plan.js';
import { flavouredClusterName, UPSTREAM_FLAVOURS, type UpstreamFlavour } from './names.js';
import { FRONT_PROXY_SECRET, PEER_CA_SECRET, sdsSecret } from './secrets.js';
import type { TranslatorSettings } from './settings.js';
import { seconds, typedConfig } from './typed.js';

/** A named group of apiservers load-balanced as one Envoy cluster. */
export interface UpstreamSet {
  /** Base of the flavoured cluster names, and EDS service name of all of them. */
  name: string;
  /** Sorted by name. */
  members: PlannedApiserver[];
}

const HTTP_PROTOCOL_OPTIONS = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';
const UPSTREAM_TLS_CONTEXT = 'envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext';
const HTTP_11_PROXY_TRANSPORT = 'envoy.extensions.transport_sockets.http_11_proxy.v3.Http11ProxyUpstreamTransport';
const ADDRESS = 'envoy.config.core.v3.Address';
/** Endpoint metadata key Envoy's HTTP/1.1 proxy transport socket reads the proxy address from. */
const EGRESS_PROXY_METADATA = 'envoy.http11_proxy_transport_socket.proxy_address';

/** Every watch holds a request open for its whole life: Envoy's default limit of 1024 is far too low. */
const MANY = 1_000_000;

/** kube-apiserver's HTTP/2 stream limit per connection when --http2-max-streams-per-connection is 0 (k8s.io/apiserver secure_serving.go). */
const KUBE_APISERVER_DEFAULT_HTTP2_STREAMS = 100;

/**
 * Long-running requests have no timeout (routes.ts): an apiserver that
 * vanishes without closing its connections (host down, network cut) is found
 * by TCP keep-alive, as a client-go client connected to it directly would find
 * it (its dialer's 30 s keep-alive: idle and interval 30 s, 9 probes). The
 * HTTP/2 flavours also ping (protocolOptions).
 */
const UPSTREAM_TCP_KEEPALIVE = { keepalive_time: { value: 30 }, keepalive_interval: { value: 30 }, keepalive_probes: { value: 9 } };

/** Every flavour of the cluster for an upstream set, and its endpoints when they come over EDS. */
export function clustersFor(set: UpstreamSet, settings: TranslatorSettings, peers: boolean): { clusters: Cluster[]; endpoints: ClusterLoadAssignment[] } {
  const egressProxy = peers ? settings.upstream.egressProxy : undefined;
  const assignment = loadAssignment(set, egressProxy);
  // EDS carries IP addresses only; a host name needs Envoy's DNS resolution,
  // so such a set gets a STRICT_DNS cluster with its endpoints inline.
  const viaEds = set.members.every((member) => isIP(member.address.host) !== 0);
  const clusters = UPSTREAM_FLAVOURS.map((flavour): Cluster => {
    const name = flavouredClusterName(set.name, flavour);
    const discovery: Cluster = viaEds
      ? { type: 'EDS', eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' }, service_name: set.name } }
      : { type: 'STRICT_DNS', load_assignment: { ...assignment, cluster_name: name } };
    return {
      name,
      ...discovery,
      connect_timeout: seconds(1),
      upstream_connection_options: { tcp_keepalive: UPSTREAM_TCP_KEEPALIVE },
      // Watches are long-lived: balance on outstanding requests, not turns.
      lb_policy: 'LEAST_REQUEST',
      circuit_breakers: {
        thresholds: [
          {
            priority: 'DEFAULT',
            max_connections: { value: MANY },
            max_pending_requests: { value: MANY },
            max_requests: { value: MANY },
            // Concurrent retries (default 3); retries happen only before anything was sent.
            max_retries: { value: 1000 },
          },
        ],
      },
      // An apiserver's 5xx can be legitimate: eject only on connection failures.
      outlier_detection: {
        split_external_local_origin_errors: true,
        consecutive_local_origin_failure: { value: 3 },
        enforcing_consecutive_local_origin_failure: { value: 100 },
        enforcing_local_origin_success_rate: { value: 0 },
        enforcing_failure_percentage_local_origin: { value: 0 },
        enforcing_consecutive_5xx: { value: 0 },
        enforcing_consecutive_gateway_failure: { value: 0 },
        enforcing_success_rate: { value: 0 },
        enforcing_failure_percentage: { value: 0 },
        interval: seconds(5),
        base_ejection_time: seconds(10),
        max_ejection_percent: { value: 100 },
      },
      ...(peers && set.members.length > 1 ? readinessCheck(settings, flavour, egressProxy !== undefined) : {}),
      transport_socket: upstreamTransport(upstreamTls(settings, flavour), egressProxy !== undefined),
      typed_extension_protocol_options: {
        [HTTP_PROTOCOL_OPTIONS]: typedConfig<HttpProtocolOptions>(HTTP_PROTOCOL_OPTIONS, protocolOptions(flavour)),
      },
    };
  });
  return { clusters, endpoints: viaEds ? [assignment] : [] };
}

/** The transport socket a front-proxy set's readiness check selects (Envoy's transport_socket_matches). */
const READINESS_CHECK_SOCKET = 'readiness-check';
const READINESS_CHECK_MATCH = { fields: { [READINESS_CHECK_SOCKET]: { boolValue: true } } };

/**
 * A set of several peers checks each one's /readyz itself, every second: an
 * apiserver fails it from its SIGTERM on, through its shutdown delay, and
 * refuses ("apiserver is shutting down", 503) after it. The control plane
 * drains it too, but a slow or paused control plane must not leave a
 * stopping peer in a set whose other members serve the same (never worse
 * than no proxy: without mvproxy those clients never met that apiserver).
 * Only while some member passes: with none passing, Envoy spreads over all
 * of them as before (its panic mode, at any share below 1 %), and a single
 * peer, the local apiserver included, is never checked (it has no stand-in).
 */
function readinessCheck(
  settings: TranslatorSettings,
  flavour: UpstreamFlavour,
  viaEgressProxy: boolean,
): Pick<Cluster, 'health_checks' | 'common_lb_config' | 'transport_socket_matches'> {
  // The front-proxy certificate without X-Remote-User headers authenticates nobody (kube-apiserver answers 401):
  // such a set checks over TLS without a client certificate, as anyone may read /readyz.
  const anonymous = flavour.frontProxy
    ? {
        transport_socket_matches: [
          {
            name: READINESS_CHECK_SOCKET,
            match: READINESS_CHECK_MATCH,
            transport_socket: upstreamTransport(upstreamTls(settings, { ...flavour, frontProxy: false }), viaEgressProxy),
          },
        ],
      }
    : {};
  return {
    ...anonymous,
    health_checks: [
      {
        ...(flavour.frontProxy ? { transport_socket_match_criteria: READINESS_CHECK_MATCH } : {}),
        timeout: seconds(1),
        interval: seconds(1),
        // An idle set is checked as often: the first request after a quiet spell must not meet a stale verdict.
        no_traffic_interval: seconds(1),
        unhealthy_threshold: { value: 1 },
        healthy_threshold: { value: 1 },
        http_health_check: { path: '/readyz', codec_client_type: flavour.protocol === 'http1' ? 'HTTP1' : 'HTTP2' },
      },
    ],
    common_lb_config: { healthy_panic_threshold: { value: 1 } },
  };
}

function loadAssignment(set: UpstreamSet, egressProxy: { host: string; port: number } | undefined): ClusterLoadAssignment {
  return {
    cluster_name: set.name,
    endpoints: [
      {
        lb_endpoints: set.members.map((member) => ({
          endpoint: {
            address: { socket_address: { address: member.address.host, port_value: member.address.port } },
            // Shown in admin output and logs. Not through an egress proxy: Envoy
            // would send it as the CONNECT target, which the proxy cannot resolve.
            ...(egressProxy ? {} : { hostname: member.name }),
          },
          // Where the HTTP/1.1 proxy transport socket sends its CONNECT.
          ...(egressProxy
            ? {
                metadata: {
                  typed_filter_metadata: {
                    [EGRESS_PROXY_METADATA]: typedConfig<Address>(ADDRESS, { socket_address: { address: egressProxy.host, port_value: egressProxy.port } }),
                  },
                },
              }
            : {}),
        })),
      },
    ],
  };
}

/** TLS to the apiserver, inside an HTTP CONNECT tunnel when an egress proxy is configured. */
function upstreamTransport(tls: UpstreamTlsContext, viaEgressProxy: boolean): TransportSocket {
  const socket: TransportSocket = { name: 'envoy.transport_sockets.tls', typed_config: typedConfig<UpstreamTlsContext>(UPSTREAM_TLS_CONTEXT, tls) };
  if (!viaEgressProxy) return socket;
  return {
    name: 'envoy.transport_sockets.http_11_proxy',
    typed_config: typedConfig<Http11ProxyUpstreamTransport>(HTTP_11_PROXY_TRANSPORT, { transport_socket: socket }),
  };
}

/**
 * TLS to an apiserver: its serving certificate checked against the peer CA for
 * the in-cluster service name and, on front-proxy flavours, the front-proxy
 * client certificate (the apiserver trusts X-Remote-* headers only from it).
 */
function upstreamTls(settings: TranslatorSettings, flavour: UpstreamFlavour): UpstreamTlsContext {
  const { serverName } = settings.upstream;
  return {
    sni: serverName,
    common_tls_context: {
      // Certificate and CA over SDS, as file names Envoy watches (secrets.ts).
      ...(flavour.frontProxy ? { tls_certificate_sds_secret_configs: [sdsSecret(FRONT_PROXY_SECRET)] } : {}),
      combined_validation_context: {
        default_validation_context: { match_typed_subject_alt_names: [{ san_type: 'DNS', matcher: { exact: serverName } }] },
        validation_context_sds_secret_config: sdsSecret(PEER_CA_SECRET),
      },
      // The HTTP/2 flavour negotiates h2 (or http/1.1, should an apiserver refuse h2) by ALPN.
      alpn_protocols: flavour.protocol === 'http1' ? ['http/1.1'] : ['h2', 'http/1.1'],
    },
  };
}

/**
 * kube-apiserver closes a connection idle for 90 s. Envoy closes its idle
 * ones first, so no request is ever sent on a connection the apiserver is
 * closing at that moment (a reset that may not be retried: retry-connect-only).
 */
const UPSTREAM_IDLE_TIMEOUT_SECONDS = 60;

/**
 * kube-apiserver verifies the front-proxy certificate on every request, and
 * Envoy presents a rotated one (SDS) on new connections only. So a pooled
 * front-proxy connection stops taking new requests once it is this old
 * (requests in flight, watches included, finish on it first): a new front-
 * proxy certificate is on every new request within this time (plus the
 * moment Envoy takes to re-read the file), after which the old CA may leave
 * the apiservers' --requestheader-client-ca-file (docs/identity.md, "Rotation").
 * kube-aggregator itself re-reads its --proxy-client-cert-file about once a
 * minute and then dials new connections with it.
 */
export const FRONT_PROXY_MAX_CONNECTION_SECONDS = 60;

function protocolOptions(flavour: UpstreamFlavour): HttpProtocolOptions {
  const common = {
    idle_timeout: seconds(UPSTREAM_IDLE_TIMEOUT_SECONDS),
    ...(flavour.frontProxy ? { max_connection_duration: seconds(FRONT_PROXY_MAX_CONNECTION_SECONDS) } : {}),
  };
  if (flavour.protocol === 'http1') {
    // Keep-alive connections, one request at a time each; upgrades need exactly this.
    return { common_http_protocol_options: common, explicit_http_config: { http_protocol_options: {} } };
  }
  return {
    common_http_protocol_options: common,
    auto_config: {
      http_protocol_options: {},
      http2_protocol_options: {
        // Detect a peer that vanished without closing its connections (watches would hang).
        connection_keepalive: { interval: seconds(30), timeout: seconds(10) },
        // Streams Envoy opens on a connection before the apiserver's SETTINGS
        // arrive are otherwise unbounded, and kube-apiserver resets those past
        // its limit (100 unless --http2-max-streams-per-connection says more):
        // under load, a burst of watches got 503 once retries ran out. Go's
        // client assumes the same 100 until it hears otherwise.
        max_concurrent_streams: { value: KUBE_APISERVER_DEFAULT_HTTP2_STREAMS },
      },
    },
  };
}
