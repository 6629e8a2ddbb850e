// The ext_proc filter (identity for client-certificate requests, merged
// aggregated discovery) and what goes with it: the per-route switches and the 503 that
// replaces Envoy's empty 500/504 when the ext_proc service fails.
//
// ext_proc is on in the filter chain and switched off per route: only routes
// matching a verified client certificate, and the aggregated discovery route,
// leave it on. A route that forgets to switch it off costs a round trip, never identity.
import type { HeaderValue } from '../generated/envoy/config/core/v3/HeaderValue.js';
import type { ExternalProcessor } from '../generated/envoy/extensions/filters/http/ext_proc/v3/ExternalProcessor.js';
import type { ExtProcPerRoute } from '../generated/envoy/extensions/filters/http/ext_proc/v3/ExtProcPerRoute.js';
import type { ProcessingMode } from '../generated/envoy/extensions/filters/http/ext_proc/v3/ProcessingMode.js';
import type { HttpFilter } from '../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpFilter.js';
import type { Any } from '../generated/google/protobuf/Any.js';
import {
  EXT_PROC_DISCOVERY_METADATA,
  EXT_PROC_FILTER,
  EXT_PROC_NODE_METADATA,
} from './names.js';
import type { TranslatorSettings } from './settings.js';
import { typedConfig } from './typed.js';

const EXT_PROC_PER_ROUTE = 'envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute';

/** How long Envoy waits for one ext_proc answer (Envoy's default, 200 ms, is too tight for a busy control plane). */
export const EXT_PROC_MESSAGE_TIMEOUT_MS = 1000;

/** Request headers only: bodies are never buffered, so watches and streams flow. */
const REQUEST_HEADERS_ONLY: ProcessingMode = {
  request_header_mode: 'SEND',
  response_header_mode: 'SKIP',
  request_body_mode: 'NONE',
  response_body_mode: 'NONE',
  request_trailer_mode: 'SKIP',
  response_trailer_mode: 'SKIP',
};

export function extProcFilter(settings: TranslatorSettings, node: string): HttpFilter {
  const config: ExternalProcessor = {
    grpc_service: {
      envoy_grpc: { cluster_name: settings.controlPlaneCluster },
      // Tells mvproxy which sidecar (and so which plan and discovery) is asking.
      initial_metadata: [{ key: EXT_PROC_NODE_METADATA, value: node }],
    },
    // Fail closed: a certificate request never reaches an apiserver without its identity.
    failure_mode_allow: false,
    processing_mode: REQUEST_HEADERS_ONLY,
    message_timeout: { seconds: Math.floor(EXT_PROC_MESSAGE_TIMEOUT_MS / 1000), nanos: (EXT_PROC_MESSAGE_TIMEOUT_MS % 1000) * 1_000_000 },
    allow_mode_override: false,
    // Routing was decided on what the client sent; identity headers never re-route.
    disable_clear_route_cache: true,
    // A mutation Envoy refuses fails the request rather than being skipped silently.
    mutation_rules: { disallow_is_error: { value: true } },
    stat_prefix: 'mvproxy',
  };
  return {
    name: EXT_PROC_FILTER,
    typed_config: typedConfig<ExternalProcessor>('envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor', config),
  };
}

/** typed_per_filter_config of a route that must never call ext_proc. */
export function extProcDisabled(): Record<string, Any> {
  return { [EXT_PROC_FILTER]: typedConfig<ExtProcPerRoute>(EXT_PROC_PER_ROUTE, { disabled: true }) };
}

/**
 * Processing mode of the aggregated discovery route: request headers (identity,
 * If-None-Match held back) and response headers (the apiserver's verdict:
 * only its 200 is replaced by the merged document); bodies never.
 */
export const DISCOVERY_PROCESSING_MODE: ProcessingMode = { ...REQUEST_HEADERS_ONLY, response_header_mode: 'SEND' };

/**
 * typed_per_filter_config of the aggregated discovery route: ext_proc on, told
 * the request may get merged discovery, and also sent the response headers
 * (ExtProcPerRoute.overrides.processing_mode; allow_mode_override is about
 * the server changing modes, not routes).
 */
export function extProcForDiscovery(): Record<string, Any> {
  const marker: HeaderValue = { key: EXT_PROC_DISCOVERY_METADATA, value: 'true' };
  return {
    [EXT_PROC_FILTER]: typedConfig<ExtProcPerRoute>(EXT_PROC_PER_ROUTE, {
      overrides: { processing_mode: DISCOVERY_PROCESSING_MODE, grpc_initial_metadata: [marker] },
    }),
  };
}

