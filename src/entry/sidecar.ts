// Entry module (docs/architecture.md, "The tools' way in"): an apiserver's
// Envoy sidecar as the tools start one: its bootstrap (what `mvproxy
// bootstrap` prints) and command line, and the Envoy API it speaks with the
// control plane, for a tool that plays a sidecar's part on the wire.
import { LISTENER_NAME } from '../translator/names.js';
import { envoyRoot } from '../xds/protos.js';

export { NODE_APISERVER_KEY, PROMETHEUS_STATS_PATH, sidecarBootstrap, type ControlPlaneAddress } from '../xds/bootstrap.js';
export { sidecarEnvoyArgs } from '../deploy/replica.js';

/** The stat prefix of the sidecar's HTTP connection manager: its request counters are `http.<prefix>.*`. */
export const SIDECAR_HTTP_STAT_PREFIX: string = LISTENER_NAME;

/** One message type of the Envoy API, as it goes on the wire. */
export interface EnvoyMessageCodec {
  /** From an object with Envoy's (snake_case) field names. */
  encode(message: object): Buffer;
  /** To a plain object with Envoy's field names (protobufjs's default conversion: an Any keeps its value as bytes). */
  decode(bytes: Uint8Array): Record<string, unknown>;
}

/**
 * The Envoy API message `fullName` (e.g.
 * `envoy.service.discovery.v3.DiscoveryRequest`), from the same definitions
 * the control plane encodes with (proto/ and @grpc/grpc-js-xds).
 */
export function envoyMessageCodec(fullName: string): EnvoyMessageCodec {
  const type = envoyRoot().lookupType(fullName);
  return {
    encode: (message) => Buffer.from(type.encode(type.fromObject(message)).finish()),
    decode: (bytes) => type.toObject(type.decode(bytes)),
  };
}
