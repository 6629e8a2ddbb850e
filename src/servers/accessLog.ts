// The gRPC access log service (envoy.service.accesslog.v3.AccessLogService)
// the sidecars stream their access log to: only requests that a reroute or
// unavailable route handled reach it (src/translator/accessLog.ts), and each
// becomes upstream MVP's counters:
// - a request forwarded to a peer: apiserver_rerouted_request_total{code,group,version,resource};
// - one that failed on the way (no healthy peer, connection failure, reset,
//   overflow, timeout), or that an unavailable route answered 503 itself:
//   apiserver_peer_proxy_errors_total{type,group,version,resource}.
// Labels come from the route's metadata (custom tags), so they are bounded by
// the plan; a log entry without them falls back to the route name and path.
// Nothing here can take the server down: a bad entry is skipped, a broken
// stream is dropped.
import * as grpc from '@grpc/grpc-js';
import { nodeClaimRefusal } from './peerIdentity.js';
import type { Logger } from '../util/log.js';
import type { HTTPAccessLogEntry__Output } from '../generated/envoy/data/accesslog/v3/HTTPAccessLogEntry.js';
import type { ResponseFlags__Output } from '../generated/envoy/data/accesslog/v3/ResponseFlags.js';
import type { AccessLogServiceHandlers } from '../generated/envoy/service/accesslog/v3/AccessLogService.js';
import type { StreamAccessLogsMessage__Output } from '../generated/envoy/service/accesslog/v3/StreamAccessLogsMessage.js';
import type { StreamAccessLogsResponse } from '../generated/envoy/service/accesslog/v3/StreamAccessLogsResponse.js';
import type { Metrics } from '../metrics.js';
import { parseRequestPath } from '../model/requestInfo.js';
import type { LoggedRouteKind } from '../translator/accessLog.js';
import { envoyService } from '../xds/protos.js';

export interface AccessLogServerOptions {
  logger: Logger;
  metrics: Metrics;
}

/** The `type` label of apiserver_peer_proxy_errors_total. */
export type PeerProxyErrorType = 'no_healthy_peer' | 'connect' | 'overflow' | 'reset' | 'timeout' | 'unavailable';

/** What one log entry counts as. */
export interface LoggedRequest {
  kind: LoggedRouteKind;
  code: string;
  group: string;
  version: string;
  resource: string;
  /** Set when the request failed on its way to a peer, or was answered 503 by an unavailable route. */
  error?: PeerProxyErrorType;
}

/** Response flags in the order they explain a failure best (no peer at all before the attempt's symptom). */
const ERROR_FLAGS: ReadonlyArray<[keyof ResponseFlags__Output, PeerProxyErrorType]> = [
  ['no_healthy_upstream', 'no_healthy_peer'],
  ['upstream_connection_failure', 'connect'],
  ['upstream_overflow', 'overflow'],
  ['upstream_remote_reset', 'reset'],
  ['upstream_connection_termination', 'reset'],
  ['local_reset', 'reset'],
  ['upstream_request_timeout', 'timeout'],
];

export class AccessLogServer {
  private readonly log: Logger;
  private readonly metrics: Metrics;

  constructor(opts: AccessLogServerOptions) {
    this.log = opts.logger.child({ component: 'access_log' });
    this.metrics = opts.metrics;
  }

  /** Registers the AccessLogService on a gRPC server (which hosts ADS and ext_proc too). */
  addToServer(server: grpc.Server): void {
    const handlers: AccessLogServiceHandlers = {
      StreamAccessLogs: (call, callback) => this.openStream(call, callback),
    };
    server.addService(envoyService('envoy.service.accesslog.v3.AccessLogService'), handlers);
  }

  private openStream(
    call: grpc.ServerReadableStream<StreamAccessLogsMessage__Output, StreamAccessLogsResponse>,
    callback: grpc.sendUnaryData<StreamAccessLogsResponse>,
  ): void {
    // Only the first message of a stream carries the identifier.
    let node = '';
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      try {
        callback(null, {});
      } catch {
        // the call is gone
      }
    };
    call.on('data', (message: StreamAccessLogsMessage__Output) => {
      if (done) return;
      if (message.identifier?.node?.id) {
        node = message.identifier.node.id;
        // Entries counted for another sidecar would skew its metrics.
        const refusal = nodeClaimRefusal(call.getAuthContext(), node);
        if (refusal !== undefined) {
          done = true;
          this.log.warn({ claimed: node, peer: call.getPeer() }, 'refused an access log stream claiming a node its client certificate does not name');
          callback({ code: grpc.status.PERMISSION_DENIED, details: refusal });
          return;
        }
      }
      this.handle(node, message);
    });
    call.on('end', finish);
    call.on('error', (err: Error) => {
      done = true;
      this.log.debug({ err: err.message, node }, 'access log stream error');
    });
    call.on('cancelled', () => {
      done = true;
    });
  }

  /** Counts every HTTP entry of one stream message; never throws. */
  handle(node: string, message: StreamAccessLogsMessage__Output): void {
    for (const entry of message.http_logs?.log_entry ?? []) {
      try {
        this.record(entry);
      } catch (err) {
        this.log.warn({ err, node }, 'access log entry skipped');
      }
    }
  }

  /** Counts one entry; returns what it counted as (undefined: nothing). */
  record(entry: HTTPAccessLogEntry__Output): LoggedRequest | undefined {
    const request = classify(entry);
    if (request === undefined) return undefined;
    const { kind, code, group, version, resource, error } = request;
    if (kind === 'reroute') this.metrics.reroutedRequests.inc({ code, group, version, resource });
    if (error !== undefined) this.metrics.peerProxyErrors.inc({ type: error, group, version, resource });
    return request;
  }
}

/**
 * What an access log entry counts as: undefined for entries of other routes,
 * and for intermediate entries of long streams (the final one counts).
 */
function classify(entry: HTTPAccessLogEntry__Output): LoggedRequest | undefined {
  const common = entry.common_properties;
  if (common?.intermediate_log_entry) return undefined;
  const tags = common?.custom_tags ?? {};
  const kind = routeKind(tags['kind'], common?.route_name ?? '');
  if (kind === undefined) return undefined;

  let { group, version, resource } = { group: tags['group'] ?? '', version: tags['version'] ?? '', resource: tags['resource'] ?? '' };
  if (tags['kind'] === undefined) {
    // No route metadata in the entry (a config without custom tags): the reroute route matched this path.
    const info = parseRequestPath(entry.request?.path ?? '');
    ({ group, version } = info);
    resource = info.resource ?? '';
  }
  const code = String(entry.response?.response_code?.value ?? 0);
  const request: LoggedRequest = { kind, code, group, version, resource };
  const error = kind === 'unavailable' ? 'unavailable' : peerError(common?.response_flags);
  if (error !== undefined) request.error = error;
  return request;
}

function routeKind(tag: string | undefined, routeName: string): LoggedRouteKind | undefined {
  const value = tag ?? routeName.split(' ', 1)[0];
  return value === 'reroute' || value === 'unavailable' ? value : undefined;
}

function peerError(flags: ResponseFlags__Output | undefined): PeerProxyErrorType | undefined {
  if (!flags) return undefined;
  for (const [flag, type] of ERROR_FLAGS) if (flags[flag] === true) return type;
  return undefined;
}
