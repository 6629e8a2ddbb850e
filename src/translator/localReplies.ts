// Envoy's own error answers, rewritten as the apiserver would write them: a
// metav1.Status JSON body (and Retry-After where retrying is safe), so clients
// retry or report instead of failing on an empty or plain-text 5xx. Answers
// from apiservers are never local replies and pass unchanged.
import type { AccessLogFilter } from '../generated/envoy/config/accesslog/v3/AccessLogFilter.js';
import type { HeaderValueOption } from '../generated/envoy/config/core/v3/HeaderValueOption.js';
import type { LocalReplyConfig } from '../generated/envoy/extensions/filters/network/http_connection_manager/v3/LocalReplyConfig.js';
import type { ResponseMapper } from '../generated/envoy/extensions/filters/network/http_connection_manager/v3/ResponseMapper.js';
import { serviceUnavailableJson } from '../model/status.js';
import { RETRY_AFTER_SECONDS } from './routes.js';

/**
 * Envoy response flags of a request that reached no apiserver: connection
 * failure or reset before a response, no healthy host, overflow. Nothing was
 * processed, so retrying is safe.
 */
const UPSTREAM_UNAVAILABLE_FLAGS = ['UF', 'UH', 'URX', 'UO', 'UC'] as const;

/**
 * The route timeout (UT) or idle timeout (SI, 408 by default) of a request
 * that is not long-running (routes.ts): the apiserver did not answer in time,
 * which an apiserver that is alive never lets happen (it answers its own 504
 * first). The request may have been processed.
 */
const TIMEOUT_FLAGS = ['UT', 'SI'] as const;

/** Reads: retrying a timed-out one is safe, so the answer says when. */
const READ_REQUEST: AccessLogFilter = { header_filter: { header: { name: ':method', string_match: { safe_regex: { regex: 'GET|HEAD' } } } } };

export function localReplyConfig(): LocalReplyConfig {
  const timedOut: AccessLogFilter = { response_flag_filter: { flags: [...TIMEOUT_FLAGS] } };
  return {
    mappers: [
      mapper(
        { response_flag_filter: { flags: [...UPSTREAM_UNAVAILABLE_FLAGS] } },
        503,
        serviceUnavailableJson('no apiserver could be reached for this request; retry shortly'),
        true,
      ),
      mapper({ and_filter: { filters: [timedOut, READ_REQUEST] } }, 504, timeoutJson(RETRY_AFTER_SECONDS), true),
      // A write may have been applied: the apiserver's own answer, which asks for no retry.
      mapper(timedOut, 504, timeoutJson(), false),
    ],
  };
}

/**
 * kube-apiserver's answer to a request that outlived its timeout: the Status
 * of apierrors.NewTimeoutError("request did not complete within the allotted
 * timeout", retryAfterSeconds) (WithTimeoutForNonLongRunningRequests).
 */
function timeoutJson(retryAfterSeconds?: number): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Timeout: request did not complete within the allotted timeout',
    reason: 'Timeout',
    details: retryAfterSeconds === undefined ? {} : { retryAfterSeconds },
    code: 504,
  });
}

function mapper(filter: AccessLogFilter, status: number, body: string, retry: boolean): ResponseMapper {
  const retryAfter: HeaderValueOption = { header: { key: 'retry-after', value: String(RETRY_AFTER_SECONDS) }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' };
  return {
    filter,
    status_code: { value: status },
    body: { inline_string: body },
    body_format_override: { text_format_source: { inline_string: '%LOCAL_REPLY_BODY%' }, content_type: 'application/json' },
    ...(retry ? { headers_to_add: [retryAfter] } : {}),
  };
}
