// Small builders for protobuf well-known types in the generated (keepCase) form.
import type { Any } from '../generated/google/protobuf/Any.js';
import type { Duration } from '../generated/google/protobuf/Duration.js';

/** Envoy's type URL for a fully qualified message name. */
function typeUrl(messageName: string): string {
  return `type.googleapis.com/${messageName}`;
}

/**
 * An Any in the `{'@type', ...fields}` form protobufjs encodes (and Envoy's
 * JSON reads). The message type must be loaded in envoyRoot() (see
 * proto/envoy_api.proto), or protobufjs encodes an empty Any.
 */
export function typedConfig<T extends object>(messageName: string, message: T): Any {
  return { '@type': typeUrl(messageName), ...message };
}

/**
 * An Any for a message with no fields, in the raw `{type_url, value}` form:
 * correct on the wire whether or not the message type is loaded in envoyRoot().
 */
export function emptyTypedConfig(messageName: string): Any {
  return { type_url: typeUrl(messageName), value: '' };
}

export function seconds(value: number): Duration {
  return { seconds: value };
}
