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
import { identityFilter } from './identityFilter.js';
import { localReplyConfig } from './localReplies.js';
import { LISTENER_NAME, ROUTE_CONFIG_NAME } from './names.js';
import type { TranslatorSettings } from './settings.js';
import { seconds, typedConfig } from './typed.js';

const HTTP_CONNECTION_MANAGER = 'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';

/** The listener of sidecar `node` (the node names it to the ext_proc service). */
export function apiserverListener(settings: TranslatorSettings, node: string): Listener {
  const { address, port } = settings.listener;
  return {
    name: LISTENER_NAME,
    address: { socket_address: { address, port_value: port } },
    filter_chains: [
      {
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
    common_http_protocol_options: { headers_with_underscores_action: 'DROP_HEADER' },
    // Envoy's own failures become a 503 Status (retry) instead of an empty 5xx.
    local_reply_config: localReplyConfig(),
    // Rerouted and unavailable-route requests only, to mvproxy's metrics.
    access_log: httpAccessLogs(settings),
  };
}

/**
 * Client-sent identity headers go first (every request), then the
 * certificate identity (certificate routes), then merged documents
 * (merged-document routes only), then routing.
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
    identityFilter(settings),
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

/** Client certificates are optional (bearer tokens), but verified against the cluster client CA when presented. */
function downstreamTls(settings: TranslatorSettings): DownstreamTlsContext {
  const { servingCertPath, servingKeyPath, clientCaPath } = settings.listener;
  return {
    common_tls_context: {
      tls_certificates: [{ certificate_chain: { filename: servingCertPath }, private_key: { filename: servingKeyPath } }],
      validation_context: { trusted_ca: { filename: clientCaPath } },
      alpn_protocols: ['h2', 'http/1.1'],
    },
    require_client_certificate: { value: false },
  };
}
