// What an ADS stream (adsStream.ts) knows of each type, and what it reports
// to, and asks of, the server hosting it (ads.ts).
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from '../util/log.js';
import type { ResourceTypeUrl } from '../xds/snapshot.js';
import type { EncodedSnapshot } from './snapshotStore.js';
import type { DiscoveryRequest__Output } from '../generated/envoy/service/discovery/v3/DiscoveryRequest.js';
import type { DiscoveryResponse } from '../generated/envoy/service/discovery/v3/DiscoveryResponse.js';

/** An ADS call; responses are written already encoded (xds/protos.ts sends a Buffer as is). */
export type AdsCall = grpc.ServerDuplexStream<DiscoveryRequest__Output, DiscoveryResponse | Buffer>;

/** What a stream knows of one type URL. */
export interface StreamTypeState {
  /** Requested names, sorted; empty means all. */
  names: string[];
  nonce?: string;
  /** A response was sent and neither ACKed nor NACKed yet. */
  inFlight: boolean;
  /** Its size, counted against the server's budget until it is answered, or for BUDGET_HOLD_MS at most. */
  bytesInFlight?: number;
  budgetTimer?: NodeJS.Timeout;
  versionSent?: string;
  namesSent?: string;
  versionAcked?: string;
  /** The snapshot's versions when Envoy NACKed the last response: it is sent again once they change. */
  nackedAt?: string;
}

export interface StreamNack {
  /** The rejected version (the last one sent). */
  version: string;
  /** Envoy's error_detail.message. */
  message: string;
  /** What Envoy still runs: the NACK's version_info. */
  keptVersion: string;
  nonce: string;
}

/** What a stream (`Stream`: adsStream.ts AdsStream, generic so the two files do not import each other) reports to, and asks of, the server hosting it. */
export interface AdsStreamHost<Stream> {
  /** The node's current snapshot; undefined until it has one. `startedEmpty`: this stream's Envoy ran no config when it connected. */
  snapshot(node: string, startedEmpty: boolean): EncodedSnapshot | undefined;
  /** A nonce no other response of this server carries. */
  nextNonce(): string;
  /** The first request named the stream's node (stream.node is set). */
  identified(stream: Stream): void;
  acked(stream: Stream, url: ResourceTypeUrl, version: string, nonce: string): void;
  nacked(stream: Stream, url: ResourceTypeUrl, nack: StreamNack): void;
  staleRequest(stream: Stream, url: ResourceTypeUrl): void;
  /** A type waits longer than the ordering timeout for another's ACK (a NACK, or no answer): Envoy keeps what it has. */
  heldBack(stream: Stream, url: ResourceTypeUrl, waitingFor: readonly ResourceTypeUrl[]): void;
  /**
   * May a response of `bytes` go now? When not, the server flushes the stream
   * again once answers have freed room (ads.ts: the bytes in flight budget).
   */
  reserve(stream: Stream, bytes: number): boolean;
  /** A response's bytes are no longer in flight (answered, or its stream closed). */
  release(bytes: number): void;
  sent(stream: Stream, url: ResourceTypeUrl, version: string, resources: number): void;
  /** The stream ended (called once). */
  closed(stream: Stream): void;
}

export interface AdsStreamOptions<Stream> {
  id: number;
  call: AdsCall;
  host: AdsStreamHost<Stream>;
  log: Logger;
  /** Identifier Envoy shows as control_plane in its config dump. */
  identifier: string;
  /** How long a type may wait for another's ACK before the wait is logged and counted (it goes on waiting). */
  orderingTimeoutMs: number;
}
