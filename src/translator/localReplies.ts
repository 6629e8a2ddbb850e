// Envoy's own error answers, rewritten as the apiserver would write them: a
// metav1.Status JSON body and Retry-After, so clients retry instead of
// failing on an empty or plain-text 5xx. Answers from apiservers are never
// local replies and pass unchanged.
import type { AccessLogFilter } from '../generated/envoy/config/accesslog/v3/AccessLogFilter.js';
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

export function localReplyConfig(): LocalReplyConfig {
  return {
    mappers: [
      unavailable({ response_flag_filter: { flags: [...UPSTREAM_UNAVAILABLE_FLAGS] } }, 'no apiserver could be reached for this request; retry shortly'),
    ],
  };
}

function unavailable(filter: AccessLogFilter, why: string): ResponseMapper {
  return {
    filter,
    status_code: { value: 503 },
    body: { inline_string: serviceUnavailableJson(why) },
    body_format_override: { text_format_source: { inline_string: '%LOCAL_REPLY_BODY%' }, content_type: 'application/json' },
    headers_to_add: [{ header: { key: 'retry-after', value: String(RETRY_AFTER_SECONDS) }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }],
  };
}
