// The ext_proc filter: the merged documents (aggregated discovery, the
// OpenAPI v3 index) too large to push to their document filters
// (documentFilters.ts documentDelivery decides which), and nothing else. It
// is off in the filter chain and switched on only by the routes of those
// documents, so a route
// that forgets it serves the local apiserver's own document, never a call to
// the control plane. When the control plane is slow or away, Envoy lets the
// request and the local apiserver's answer through (failure_mode_allow):
// what the client would get without mvproxy. Envoy counts those in its
// `ext_proc.mvproxy.failure_mode_allowed` statistic.
import type { HeaderValue } from '../generated/envoy/config/core/v3/HeaderValue.js';
import type { FilterConfig } from '../generated/envoy/config/route/v3/FilterConfig.js';
import type { ExternalProcessor } from '../generated/envoy/extensions/filters/http/ext_proc/v3/ExternalProcessor.js';
import type { ExtProcPerRoute } from '../generated/envoy/extensions/filters/http/ext_proc/v3/ExtProcPerRoute.js';
import type { ProcessingMode } from '../generated/envoy/extensions/filters/http/ext_proc/v3/ProcessingMode.js';
import type { HttpFilter } from '../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpFilter.js';
import type { Any } from '../generated/google/protobuf/Any.js';
import type { MergedDocument } from '../model/requestInfo.js';
import { EXT_PROC_DOCUMENT_METADATA, EXT_PROC_FILTER, EXT_PROC_NODE_METADATA } from './names.js';
import type { TranslatorSettings } from './settings.js';
import { typedConfig } from './typed.js';

/** Envoy's stat prefix of the filter (`http.<listener>.ext_proc.<prefix>.*`). */
const EXT_PROC_STAT_PREFIX = 'mvproxy';

/**
 * How long Envoy waits for one ext_proc answer before letting the local
 * document through. The control plane merges a document in a few
 * milliseconds; a stopped one costs a discovery request this much, once per
 * message.
 */
const EXT_PROC_MESSAGE_TIMEOUT_MS = 250;

/**
 * Request headers (If-None-Match and Accept-Encoding held back), response
 * headers (the apiserver's verdict: only its 200 is merged into) and the
 * response body, buffered so the control plane merges the local document as
 * the apiserver answered this very request. BUFFERED_PARTIAL, not BUFFERED: a
 * body over Envoy's buffer limit is sent partial (and the local answer goes
 * through) instead of failing the request.
 */
const MERGED_DOCUMENT_PROCESSING_MODE: ProcessingMode = {
  request_header_mode: 'SEND',
  response_header_mode: 'SEND',
  request_body_mode: 'NONE',
  response_body_mode: 'BUFFERED_PARTIAL',
  request_trailer_mode: 'SKIP',
  response_trailer_mode: 'SKIP',
};

export function extProcFilter(settings: TranslatorSettings, node: string): HttpFilter {
  const config: ExternalProcessor = {
    grpc_service: {
      envoy_grpc: { cluster_name: settings.controlPlaneCluster },
      // Tells mvproxy which sidecar (and so which merged documents) is asking.
      initial_metadata: [{ key: EXT_PROC_NODE_METADATA, value: node }],
    },
    // Never worse than no proxy: without an answer, the local document.
    failure_mode_allow: true,
    processing_mode: MERGED_DOCUMENT_PROCESSING_MODE,
    message_timeout: { seconds: 0, nanos: EXT_PROC_MESSAGE_TIMEOUT_MS * 1_000_000 },
    allow_mode_override: false,
    // Routing was decided on what the client sent.
    disable_clear_route_cache: true,
    // A mutation Envoy refuses fails the call (and so falls back) rather than being skipped silently.
    mutation_rules: { disallow_is_error: { value: true } },
    stat_prefix: EXT_PROC_STAT_PREFIX,
  };
  return {
    name: EXT_PROC_FILTER,
    typed_config: typedConfig<ExternalProcessor>('envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor', config),
    // On only where a merged-document route switches it on.
    disabled: true,
  };
}

/** typed_per_filter_config entry of the route that selects `document`: ext_proc on, told which document. */
export function extProcForMergedDocument(document: MergedDocument): Record<string, Any> {
  const marker: HeaderValue = { key: EXT_PROC_DOCUMENT_METADATA, value: document };
  const perRoute = typedConfig<ExtProcPerRoute>('envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute', {
    overrides: { grpc_initial_metadata: [marker] },
  });
  return { [EXT_PROC_FILTER]: typedConfig<FilterConfig>('envoy.config.route.v3.FilterConfig', { config: perRoute, disabled: false }) };
}
