// The sidecar's access log: only requests a reroute or unavailable route
// handled go to mvproxy over the gRPC access log service (ALS), which turns
// them into apiserver_rerouted_request_total and
// apiserver_peer_proxy_errors_total.
//
// Those routes carry route metadata `mvproxy: {kind, group, version,
// resource}`; the access log filter is a CEL expression on the route's
// metadata, so local traffic and requests that arrived already carrying
// x-kubernetes-peer-proxied (served locally by the peer-proxied routes) are
// never logged. The header itself cannot tell them apart: both kinds of
// request carry it. The labels travel as custom tags read from the same
// route metadata, so the counters' labels come from the plan, never from
// what a client wrote.
import type { AccessLog } from '../generated/envoy/config/accesslog/v3/AccessLog.js';
import type { Metadata } from '../generated/envoy/config/core/v3/Metadata.js';
import type { Value } from '../generated/google/protobuf/Value.js';
import type { ExpressionFilter } from '../generated/envoy/extensions/access_loggers/filters/cel/v3/ExpressionFilter.js';
import type { HttpGrpcAccessLogConfig } from '../generated/envoy/extensions/access_loggers/grpc/v3/HttpGrpcAccessLogConfig.js';
import type { CustomTag } from '../generated/envoy/type/tracing/v3/CustomTag.js';
import type { TranslatorSettings } from './settings.js';
import { typedConfig } from './typed.js';

/** The log_name every sidecar's ALS stream identifies itself with. */
export const ACCESS_LOG_NAME = 'mvproxy';
/** Route metadata namespace (filter_metadata key) of mvproxy's routes. */
const ROUTE_METADATA_NAMESPACE = 'mvproxy';
/** How long Envoy buffers log entries before sending them. */
const ACCESS_LOG_FLUSH_SECONDS = 1;

/** What a logged route did: forwarded to peers, or answered 503 itself. */
export type LoggedRouteKind = 'reroute' | 'unavailable';

/** What the route metadata (and so each log entry's custom tags) says about a logged route. */
export interface LoggedRoute {
  kind: LoggedRouteKind;
  /** "" for the core group. */
  group: string;
  /** "" for a group document (`/apis/{group}`). */
  version: string;
  /** "" for discovery documents. */
  resource: string;
  /** "" unless the route is a subresource's. */
  subresource: string;
}

/** Custom tag names of log entries: the LoggedRoute fields. */
const TAGS: readonly (keyof LoggedRoute)[] = ['kind', 'group', 'version', 'resource', 'subresource'];

/** The `metadata` of a reroute or unavailable route. */
export function loggedRouteMetadata(route: LoggedRoute): Metadata {
  const fields: Record<string, Value> = {};
  for (const tag of TAGS) fields[tag] = { stringValue: route[tag] };
  return { filter_metadata: { [ROUTE_METADATA_NAMESPACE]: { fields } } };
}

/** Logs a request only when its route carries mvproxy metadata (no route at all: an error, which the filter treats as false). */
export const ACCESS_LOG_FILTER_EXPRESSION = `'${ROUTE_METADATA_NAMESPACE}' in xds.route_metadata.filter_metadata`;

export function httpAccessLogs(settings: TranslatorSettings): AccessLog[] {
  const config: HttpGrpcAccessLogConfig = {
    common_config: {
      log_name: ACCESS_LOG_NAME,
      transport_api_version: 'V3',
      grpc_service: { envoy_grpc: { cluster_name: settings.controlPlaneCluster } },
      buffer_flush_interval: { seconds: ACCESS_LOG_FLUSH_SECONDS },
      custom_tags: TAGS.map(routeMetadataTag),
    },
  };
  return [
    {
      name: 'envoy.access_loggers.http_grpc',
      filter: {
        extension_filter: {
          name: 'envoy.access_loggers.extension_filters.cel',
          typed_config: typedConfig<ExpressionFilter>('envoy.extensions.access_loggers.filters.cel.v3.ExpressionFilter', {
            expression: ACCESS_LOG_FILTER_EXPRESSION,
          }),
        },
      },
      typed_config: typedConfig<HttpGrpcAccessLogConfig>('envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig', config),
    },
  ];
}

function routeMetadataTag(tag: keyof LoggedRoute): CustomTag {
  return {
    tag,
    metadata: { kind: { route: {} }, metadata_key: { key: ROUTE_METADATA_NAMESPACE, path: [{ key: tag }] }, default_value: '' },
  };
}
