// The client-facing TLS listener: one HTTP connection manager whose routes
// come over RDS.
import type { Listener } from '../generated/envoy/config/listener/v3/Listener.js';
import type { HeaderMutation } from '../generated/envoy/extensions/filters/http/header_mutation/v3/HeaderMutation.js';
import type { Router } from '../generated/envoy/extensions/filters/http/router/v3/Router.js';
import type { HttpConnectionManager } from '../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpConnectionManager.js';
import type { HttpFilter } from '../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpFilter.js';
import type { DownstreamTlsContext } from '../generated/envoy/extensions/transport_sockets/tls/v3/DownstreamTlsContext.js';
import { httpAccessLogs } from './accessLog.js';
import { extProcFilter } from './extProc.js';
import { documentFilter, identityFilter } from './documentFilters.js';
import { localReplyConfig } from './localReplies.js';
import { LISTENER_NAME, ROUTE_CONFIG_NAME } from './names.js';
import { CLIENT_CA_SECRET, SERVING_SECRET, sdsSecret } from './secrets.js';
import { sidecarLimits, type SidecarLimits, type TranslatorSettings } from './settings.js';
import { seconds, typedConfig } from './typed.js';
import type { SocketOption } from '../generated/envoy/config/core/v3/SocketOption.js';
import type { Http2ProtocolOptions } from '../generated/envoy/config/core/v3/Http2ProtocolOptions.js';
import type { HttpProtocolOptions } from '../generated/envoy/config/core/v3/HttpProtocolOptions.js';

const HTTP_CONNECTION_MANAGER = 'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';

// Limits: what kube-apiserver's own server allows a client (its http.Server in
// k8s.io/apiserver/pkg/server/secure_serving.go), so that the sidecar is at
// least as strict and never stricter (docs/never-worse.md). The configurable
// ones are SidecarLimits (settings.ts).

/**
 * Request line and headers of one request: Go reads at most `MaxHeaderBytes`
 * (kube-apiserver: 1 << 20) plus 4 KiB of read slack (net/http's
 * initialReadLimitSize) and answers more with 431; over HTTP/2 the limit is
 * 1 MiB + 320 in HPACK accounting (name + value + 32 per field). Envoy's
 * default (60 KiB) would refuse requests the apiserver serves. Envoy counts no
 * more than Go does (raw header bytes, or names and values only), so 1 MiB + 8 KiB
 * refuses nothing the apiserver accepts; what lies between the two limits
 * reaches the apiserver, which answers its own 431.
 */
const MAX_REQUEST_HEADERS_KIB = 1024 + 8;
/**
 * Go has no header count limit, only the size: the most headers that fit in
 * the size above, at 3 bytes each (`a:` and a line feed), so that the count
 * (Envoy's default is 100: a client impersonating a user with many groups
 * sends one Impersonate-Group header per group) never refuses a request the
 * size limit lets through.
 */
const MAX_REQUEST_HEADERS_COUNT = Math.floor(((1 << 20) + 4096) / 3);
/**
 * A connection without a request in flight is closed after 90 s
 * (`IdleTimeout`, HTTP/1.1 keep-alive and HTTP/2 alike). Go also closes a new
 * connection that sends no request within ReadHeaderTimeout; Envoy has no such
 * timer before the first byte, so there the idle timeout applies.
 */
const CONNECTION_IDLE_TIMEOUT_SECONDS = 90;
/**
 * HTTP/2 flow control: kube-apiserver lets a stream send 256 KiB before it
 * reads (`MaxReceiveBufferPerStream`, "at least 99% of serialized resources
 * ... were smaller than 256kb"), and a connection that much per allowed stream.
 */
const HTTP2_STREAM_WINDOW_BYTES = 256 * 1024;
/**
 * Go enables TCP keep-alive on every accepted connection with a 3-minute
 * period (secure_serving.go's tcpKeepAliveListener, defaultKeepAlivePeriod:
 * idle and interval; probes stay the kernel's): that, not a timeout, ends a
 * watch whose client vanished. Set on the listening socket, inherited by
 * every accepted one (Linux).
 */
const TCP_KEEPALIVE_PERIOD_SECONDS = 180;
const SOL_SOCKET = 1;
const SO_KEEPALIVE = 9;
const IPPROTO_TCP = 6;
const TCP_KEEPIDLE = 4;
const TCP_KEEPINTVL = 5;

function tcpKeepalive(): SocketOption[] {
  const option = (description: string, level: number, name: number, value: number): SocketOption => ({
    description,
    level,
    name,
    int_value: value,
    state: 'STATE_PREBIND',
  });
  return [
    option('SO_KEEPALIVE', SOL_SOCKET, SO_KEEPALIVE, 1),
    option('TCP_KEEPIDLE', IPPROTO_TCP, TCP_KEEPIDLE, TCP_KEEPALIVE_PERIOD_SECONDS),
    option('TCP_KEEPINTVL', IPPROTO_TCP, TCP_KEEPINTVL, TCP_KEEPALIVE_PERIOD_SECONDS),
  ];
}

/** What every client connection is allowed, besides the route timeouts (routes.ts). */
function connectionLimits(limits: SidecarLimits): Pick<
  HttpConnectionManager,
  'request_headers_timeout' | 'max_request_headers_kb' | 'http2_protocol_options'
> & {
  common: HttpProtocolOptions;
} {
  const http2: Http2ProtocolOptions = {
    max_concurrent_streams: { value: limits.http2MaxStreamsPerConnection },
    initial_stream_window_size: { value: HTTP2_STREAM_WINDOW_BYTES },
    initial_connection_window_size: { value: HTTP2_STREAM_WINDOW_BYTES * limits.http2MaxStreamsPerConnection },
  };
  return {
    request_headers_timeout: seconds(limits.readHeaderTimeoutSeconds),
    max_request_headers_kb: { value: MAX_REQUEST_HEADERS_KIB },
    http2_protocol_options: http2,
    // No max_connection_duration or max_requests_per_connection: kube-apiserver has neither.
    common: { idle_timeout: seconds(CONNECTION_IDLE_TIMEOUT_SECONDS), max_headers_count: { value: MAX_REQUEST_HEADERS_COUNT } },
  };
}

/** The listener of sidecar `node` (the node names it to the ext_proc service). */
export function apiserverListener(settings: TranslatorSettings, node: string): Listener {
  const { address, port } = settings.listener;
  return {
    name: LISTENER_NAME,
    address: { socket_address: { address, port_value: port } },
    socket_options: tcpKeepalive(),
    filter_chains: [
      {
        ...clientCaMetadata(settings),
        // Go's TLS handshake timeout is its ReadHeaderTimeout (net/http tlsHandshakeTimeout).
        transport_socket_connect_timeout: seconds(sidecarLimits(settings).readHeaderTimeoutSeconds),
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: typedConfig<HttpConnectionManager>(HTTP_CONNECTION_MANAGER, httpConnectionManager(settings, node)),
          },
        ],
        transport_socket: {
          name: 'envoy.transport_sockets.tls',
          typed_config: typedConfig<DownstreamTlsContext>('envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext', downstreamTls(settings)),
        },
      },
    ],
  };
}

function httpConnectionManager(settings: TranslatorSettings, node: string): HttpConnectionManager {
  const { common, ...limits } = connectionLimits(sidecarLimits(settings));
  return {
    stat_prefix: LISTENER_NAME,
    codec_type: 'AUTO',
    rds: { config_source: { ads: {}, resource_api_version: 'V3' }, route_config_name: ROUTE_CONFIG_NAME },
    http_filters: httpFilters(settings, node),
    // Append the client's address to X-Forwarded-For (audit logs), trusting none sent by clients.
    use_remote_address: { value: true },
    xff_num_trusted_hops: 0,
    // Apiservers ignore x-request-id (audit has its own Audit-ID); a UUID per request is wasted work.
    generate_request_id: { value: false },
    upgrade_configs: [{ upgrade_type: 'websocket' }, { upgrade_type: 'SPDY/3.1' }],
    // No overall or idle limit at this level: watches; routes set their own idle timeout.
    stream_idle_timeout: seconds(0),
    request_timeout: seconds(0),
    // Route on the segments the apiserver reads, and forward what it would
    // read without the sidecar (docs/request-rules.md, "Reading a request";
    // sidecarPath in src/model/requestInfo.ts): it splits on %2F after decoding,
    // so Envoy decodes %2F (and %5C) too; it removes no dot segments, merges no
    // slashes and turns no backslash into a slash, so neither does Envoy.
    normalize_path: { value: false },
    merge_slashes: false,
    path_with_escaped_slashes_action: 'UNESCAPE_AND_FORWARD',
    // The verified client certificate goes to the identity filter in
    // x-forwarded-client-cert (its SHA-256 and URL-encoded PEM); an XFCC header
    // sent by a client is always dropped. The filter removes it before the apiserver.
    forward_client_cert_details: 'SANITIZE_SET',
    set_current_client_cert_details: { cert: true },
    // `X_Remote_User` is not X-Remote-User to Go, but some proxies and servers
    // treat `_` as `-`: such headers never pass (kube-apiserver uses none).
    common_http_protocol_options: { headers_with_underscores_action: 'DROP_HEADER', ...common },
    // Header read timeout, header size, HTTP/2 streams and windows: kube-apiserver's (above).
    ...limits,
    // Envoy's own failures become a 503 Status (retry) instead of an empty 5xx.
    local_reply_config: localReplyConfig(),
    // Rerouted and unavailable-route requests only, to mvproxy's metrics.
    access_log: httpAccessLogs(settings),
  };
}

/**
 * Client-sent identity headers go first (every request), then the
 * certificate identity (certificate routes), then merged documents
 * (merged-document routes only: the filter that holds the document, or
 * ext_proc for one too large to push), then routing.
 */
function httpFilters(settings: TranslatorSettings, node: string): HttpFilter[] {
  return [
    {
      // The apiserver trusts X-Remote-* from the sidecar's front-proxy
      // certificate, so no client may supply them (X-Remote-Extra-* included).
      name: 'envoy.filters.http.header_mutation',
      typed_config: typedConfig<HeaderMutation>('envoy.extensions.filters.http.header_mutation.v3.HeaderMutation', {
        mutations: { request_mutations: [{ remove_on_match: { key_matcher: { prefix: 'x-remote-', ignore_case: true } } }] },
      }),
    },
    identityFilter(),
    documentFilter('core-discovery'),
    documentFilter('group-discovery'),
    documentFilter('openapi-index'),
    // Merged documents over the budget of a push (documentFilters.ts).
    extProcFilter(settings, node),
    {
      name: 'envoy.filters.http.router',
      typed_config: typedConfig<Router>('envoy.extensions.filters.http.router.v3.Router', {
        // Apiservers need none of Envoy's x-envoy-* request headers.
        suppress_envoy_headers: true,
      }),
    },
  ];
}

/**
 * The digest of the client CA bundle as the control plane last read it, in
 * the filter chain's metadata: when the bundle changes, so does the filter
 * chain, and Envoy drains the connections of the old one (HTTP/2 GOAWAY,
 * `Connection: close`, then closes them after its drain time). A client
 * whose certificate came from a CA since removed then meets a new handshake,
 * which SDS already verifies against the new bundle; Envoy itself verifies a
 * certificate only at the handshake, where kube-apiserver re-verifies it on
 * every request (docs/identity.md, "Rotation").
 */
function clientCaMetadata(settings: TranslatorSettings): {
  metadata?: { filter_metadata: Record<string, { fields: Record<string, { stringValue: string }> }> };
} {
  const digest = settings.listener.clientCaSha256;
  if (digest === undefined) return {};
  return { metadata: { filter_metadata: { mvproxy: { fields: { client_ca_sha256: { stringValue: digest } } } } } };
}

/**
 * Client certificates are optional (bearer tokens), but verified against the
 * cluster client CA when presented. Certificate and CA come over SDS as file
 * names Envoy watches (secrets.ts).
 */
function downstreamTls(_settings: TranslatorSettings): DownstreamTlsContext {
  return {
    common_tls_context: {
      tls_certificate_sds_secret_configs: [sdsSecret(SERVING_SECRET)],
      validation_context_sds_secret_config: sdsSecret(CLIENT_CA_SECRET),
      alpn_protocols: ['h2', 'http/1.1'],
    },
    require_client_certificate: { value: false },
  };
}
