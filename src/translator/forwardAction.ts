// The forwarding action every route that reaches an apiserver takes: its
// timeouts and its retry policy (connect-time failures only, another
// apiserver of the set when there is one).
import type { RouteAction } from '../generated/envoy/config/route/v3/RouteAction.js';
import { emptyTypedConfig, seconds } from './typed.js';

/** Route and idle timeout of long-running requests: none (0 disables both). */
export const NO_TIMEOUT = 0;

/**
 * `timeout` bounds both the wait for the whole answer (from the end of the
 * request) and any silence in between; a hung apiserver's request fails with
 * the 504 Status of localReplies.ts. Long-running requests (NO_TIMEOUT) last
 * as long as the client and the apiserver want.
 */
export function forwardAction(cluster: string, timeout: number): RouteAction {
  return {
    cluster,
    timeout: seconds(timeout),
    idle_timeout: seconds(timeout),
    retry_policy: {
      // Only failures where nothing reached an apiserver (retry-connect-only).
      retry_on: 'connect-failure,refused-stream,reset-before-request',
      num_retries: { value: 3 },
      // Each retry picks another apiserver of the set when there is one.
      retry_host_predicate: [
        {
          name: 'envoy.retry_host_predicates.previous_hosts',
          typed_config: emptyTypedConfig('envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate'),
        },
      ],
      host_selection_retry_max_attempts: 5,
    },
  };
}
