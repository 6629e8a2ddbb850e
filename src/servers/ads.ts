// The ADS server, state of the world: one gRPC stream per Envoy carries CDS,
// EDS, LDS and RDS. The protocol of one stream (names, nonces, versions sent
// and ACKed, NACKs, ordering) is adsStream.ts; what each node should have is
// the snapshot cache it is given (a SnapshotCache: serve passes
// snapshotStore.ts's SnapshotStore), one snapshot per sidecar, shared by
// every node (Envoy) that runs that sidecar's config (peerIdentity.ts says
// which). This module hosts the streams: it knows which streams belong to
// which node and sidecar, keeps each node's last NACK per type, and reports
// ACKs, NACKs and connections as events, metrics and status.
import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../util/log.js';
import { envoyService } from '../xds/protos.js';
import { PUSH_ORDER, type ResourceTypeUrl, type Snapshot } from '../xds/snapshot.js';
import type { EncodedSnapshot } from './snapshotStore.js';
import { AdsStream, type AdsCall, type AdsStreamHost, type StreamNack, type StreamTypeState } from './adsStream.js';
import { grpcError } from './grpcListen.js';
import { ResponseBudget } from './responseBudget.js';
import type { AggregatedDiscoveryServiceHandlers } from '../generated/envoy/service/discovery/v3/AggregatedDiscoveryService.js';
import { compareStrings } from '../util/order.js';

/** Counting hooks; each is optional and must not throw (errors are logged and dropped). */
export interface AdsMetrics {
  streamOpened?(node: string): void;
  streamClosed?(node: string): void;
  responseSent?(node: string, typeUrl: ResourceTypeUrl, version: string, resources: number): void;
  ack?(node: string, typeUrl: ResourceTypeUrl, version: string): void;
  nack?(node: string, typeUrl: ResourceTypeUrl, version: string, message: string): void;
  staleRequest?(node: string, typeUrl: ResourceTypeUrl): void;
  /** A type of a change waited past the ordering timeout for another's ACK (a NACK, or no answer): counted once per change. */
  heldBack?(node: string, typeUrl: ResourceTypeUrl): void;
}

/** Where the ADS server keeps what each sidecar should have: only what the server uses of a store (SnapshotStore is one). */
export interface SnapshotCache {
  /** Sets what a sidecar's nodes should have; throws if a resource cannot be encoded, leaving the previous snapshot in place. */
  set(sidecar: string, snapshot: Snapshot): EncodedSnapshot;
  /** The sidecar's snapshot; undefined until one was set. */
  get(sidecar: string): EncodedSnapshot | undefined;
}

/** The ADS server's two caches, made and passed by whoever runs it (src/serve), as go-control-plane's NewServer takes its cache. */
export interface AdsSnapshotCaches {
  /** What each sidecar's nodes should have (setSnapshot). */
  current: SnapshotCache;
  /** What a node that runs nothing yet gets until its sidecar has a snapshot (setStartupSnapshot). */
  startup: SnapshotCache;
}

export interface AdsServerOptions {
  logger: Logger;
  metrics?: AdsMetrics;
  /** Identifier Envoy shows as control_plane in its config dump. */
  identifier?: string;
  /**
   * How long a type may wait for the ACK of one it depends on (LDS/RDS for
   * CDS/EDS, ECDS for LDS/RDS or the other way round) before the wait is
   * logged and counted. It goes on waiting: nothing is sent out of order.
   */
  orderingTimeoutMs?: number;
  /**
   * The snapshots set are not yet read from the cluster afresh (a warm start):
   * until markSynced(), they go only to Envoys that run nothing yet, and an
   * Envoy that runs a config (perhaps a newer one, from another replica)
   * keeps it. Default false: every snapshot set is current.
   */
  awaitSync?: boolean;
  /** Clock for NACK timestamps (epoch ms). */
  now?: () => number;
  /**
   * Bytes of responses sent and not yet answered, over all streams, past
   * which further responses wait for answers (default 2 MiB; one response
   * always goes when none is in flight). A change pushed to many Envoys at
   * once would otherwise hold a copy per stream until each was read: with
   * 200 Envoys, tens of MiB. (Istio's PILOT_PUSH_THROTTLE bounds the same.)
   */
  maxBytesInFlight?: number;
}

export interface AckEvent {
  node: string;
  typeUrl: ResourceTypeUrl;
  version: string;
  nonce: string;
}

export interface NackEvent extends AckEvent {
  /** Envoy's error_detail.message. */
  message: string;
}

export interface StreamEvent {
  node: string;
  streamId: number;
}

export interface AdsServerEvents {
  ack: [AckEvent];
  nack: [NackEvent];
  connect: [StreamEvent];
  disconnect: [StreamEvent];
}

export interface NackRecord {
  version: string;
  message: string;
  at: number;
}

export interface AdsTypeStatus {
  versionSent?: string;
  versionAcked?: string;
  nonce?: string;
  lastNack?: NackRecord;
  /** Names Envoy subscribed to; empty means all. */
  subscribed: string[];
}

export interface AdsNodeStatus {
  /** Whose sidecar config the node runs (its newest stream's claim). */
  sidecar: string;
  /** Open streams of this node (normally 0 or 1). */
  connected: number;
  /** Versions of its sidecar's snapshot, when it has one. */
  snapshot?: Record<ResourceTypeUrl, string>;
  /** From the newest open stream, else from the last one that closed. */
  types: Partial<Record<ResourceTypeUrl, AdsTypeStatus>>;
}

interface NodeRecord {
  sidecar: string;
  streams: Set<AdsStream>;
  /** Type state of the last stream that closed, for status() while none is open. */
  lastClosed?: Map<ResourceTypeUrl, StreamTypeState>;
  lastNack: Map<ResourceTypeUrl, NackRecord>;
  /** Version whose NACK was logged, per type: log once, count always. */
  nackLogged: Map<ResourceTypeUrl, string>;
}

export class AdsServer extends EventEmitter<AdsServerEvents> {
  private readonly log: Logger;
  private readonly metrics: AdsMetrics;
  private readonly identifier: string;
  private readonly orderingTimeoutMs: number;
  private readonly now: () => number;
  private readonly snapshots: SnapshotCache;
  /** What a node that runs nothing yet gets until it has a snapshot (setStartupSnapshot). */
  private readonly startupSnapshots: SnapshotCache;
  private readonly nodes = new Map<string, NodeRecord>();
  /** Streams whose first request (with the node id) has not arrived yet. */
  private readonly anonymous = new Set<AdsStream>();
  private readonly noncePrefix = randomBytes(4).toString('hex');
  private nonceCounter = 0;
  private streamCounter = 0;
  private readonly budget: ResponseBudget<AdsStream>;
  /** The snapshots set were read from the cluster afresh: they go to every Envoy (awaitSync, markSynced). */
  private synced: boolean;
  /** What the streams report to. */
  private readonly host: AdsStreamHost<AdsStream> = {
    snapshot: (sidecar, startedEmpty) => {
      const current = this.snapshots.get(sidecar);
      if (current && this.synced) return current;
      // Not synced (or no snapshot yet): only an Envoy that holds nothing may be given something, never one that may hold newer.
      return startedEmpty ? (current ?? this.startupSnapshots.get(sidecar)) : undefined;
    },
    nextNonce: () => `${this.noncePrefix}-${++this.nonceCounter}`,
    identified: (stream) => this.onIdentified(stream),
    acked: (stream, url, version, nonce) => {
      const node = stream.node ?? '';
      this.safe(() => this.metrics.ack?.(node, url, version));
      this.emit('ack', { node, typeUrl: url, version, nonce });
    },
    nacked: (stream, url, nack) => this.onNack(stream, url, nack),
    staleRequest: (stream, url) => this.safe(() => this.metrics.staleRequest?.(stream.node ?? '', url)),
    heldBack: (stream, url) => this.safe(() => this.metrics.heldBack?.(stream.node ?? '', url)),
    sent: (stream, url, version, resources) => this.safe(() => this.metrics.responseSent?.(stream.node ?? '', url, version, resources)),
    closed: (stream) => this.onClosed(stream),
    reserve: (stream, bytes) => this.budget.reserve(stream, bytes),
    release: (bytes) => this.budget.release(bytes),
  };

  constructor(caches: AdsSnapshotCaches, opts: AdsServerOptions) {
    super();
    this.snapshots = caches.current;
    this.startupSnapshots = caches.startup;
    this.log = opts.logger.child({ component: 'ads' });
    this.metrics = opts.metrics ?? {};
    this.identifier = opts.identifier ?? 'mvproxy';
    this.orderingTimeoutMs = opts.orderingTimeoutMs ?? 2000;
    this.now = opts.now ?? Date.now;
    this.budget = new ResponseBudget(opts.maxBytesInFlight ?? 2 * 1024 * 1024);
    this.synced = !(opts.awaitSync ?? false);
  }

  /** The snapshots set from now on were read from the cluster afresh: pushes them to every Envoy (awaitSync). */
  markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const record of this.nodes.values()) for (const stream of record.streams) stream.flush();
  }

  /** Registers the ADS service on a gRPC server (which may host other services too). */
  addToServer(server: grpc.Server): void {
    const handlers: AggregatedDiscoveryServiceHandlers = {
      StreamAggregatedResources: (call) => this.openStream(call),
      DeltaAggregatedResources: (call) => {
        call.emit('error', grpcError(grpc.status.UNIMPLEMENTED, 'mvproxy serves state-of-the-world ADS only'));
      },
    };
    server.addService(envoyService('envoy.service.discovery.v3.AggregatedDiscoveryService'), handlers);
  }

  /**
   * Sets what a sidecar's nodes should have and pushes the changed types to
   * their open streams, CDS then EDS then LDS then RDS. Throws if a resource
   * cannot be encoded (a translator bug), leaving the previous snapshot in place.
   */
  setSnapshot(sidecar: string, snapshot: Snapshot): void {
    this.snapshots.set(sidecar, snapshot);
    // status() lists the sidecar with its versions before any of its Envoys connects here (others' reports are checked against them).
    this.record(sidecar);
    this.flushSidecar(sidecar);
  }

  /**
   * What a sidecar's nodes get before it has a snapshot, but only on a stream
   * whose Envoy runs nothing yet (its first request carried no version): an
   * Envoy that already runs a config keeps it until setSnapshot gives one
   * (and, with awaitSync, until markSynced).
   */
  setStartupSnapshot(sidecar: string, snapshot: Snapshot): void {
    this.startupSnapshots.set(sidecar, snapshot);
    this.record(sidecar);
    if (this.snapshots.get(sidecar)) return;
    this.flushSidecar(sidecar);
  }

  /** Pushes what changed to every open stream running the sidecar's config. */
  private flushSidecar(sidecar: string): void {
    for (const record of this.nodes.values()) for (const stream of record.streams) if (stream.sidecar === sidecar) stream.flush();
  }

  /** Per node and type: what was sent, ACKed, the last nonce and the last NACK. */
  status(): Record<string, AdsNodeStatus> {
    const out: Record<string, AdsNodeStatus> = {};
    for (const [node, record] of [...this.nodes.entries()].sort(([a], [b]) => compareStrings(a, b))) {
      const primary = this.primaryStream(record)?.types ?? record.lastClosed;
      const types: Partial<Record<ResourceTypeUrl, AdsTypeStatus>> = {};
      for (const url of PUSH_ORDER) {
        const st = primary?.get(url);
        const lastNack = record.lastNack.get(url);
        if (!st && !lastNack) continue;
        const entry: AdsTypeStatus = { subscribed: st ? [...st.names] : [] };
        if (st?.versionSent !== undefined) entry.versionSent = st.versionSent;
        if (st?.versionAcked !== undefined) entry.versionAcked = st.versionAcked;
        if (st?.nonce !== undefined) entry.nonce = st.nonce;
        if (lastNack) entry.lastNack = { ...lastNack };
        types[url] = entry;
      }
      const status: AdsNodeStatus = { sidecar: record.sidecar, connected: record.streams.size, types };
      const encoded = this.snapshots.get(record.sidecar);
      if (encoded) status.snapshot = { ...encoded.versions };
      out[node] = status;
    }
    return out;
  }

  /** Ends every open stream (status UNAVAILABLE) so Envoys reconnect elsewhere or later. */
  closeStreams(): void {
    const all = [...this.anonymous];
    for (const record of this.nodes.values()) all.push(...record.streams);
    for (const stream of all) stream.end(grpc.status.UNAVAILABLE, 'mvproxy control plane shutting down');
  }

  // ---- streams ----

  private record(node: string): NodeRecord {
    let record = this.nodes.get(node);
    if (!record) {
      record = { sidecar: node, streams: new Set(), lastNack: new Map(), nackLogged: new Map() };
      this.nodes.set(node, record);
    }
    return record;
  }

  private primaryStream(record: NodeRecord): AdsStream | undefined {
    let newest: AdsStream | undefined;
    for (const stream of record.streams) if (!newest || stream.id > newest.id) newest = stream;
    return newest;
  }

  private openStream(call: AdsCall): void {
    const id = ++this.streamCounter;
    const log = this.log.child({ stream: id, peer: call.getPeer() });
    const stream = new AdsStream({ id, call, host: this.host, log, identifier: this.identifier, orderingTimeoutMs: this.orderingTimeoutMs });
    this.anonymous.add(stream);
    stream.log.debug('ADS stream opened');
  }

  private onIdentified(stream: AdsStream): void {
    const id = stream.node ?? '';
    this.anonymous.delete(stream);
    const record = this.record(id);
    record.sidecar = stream.sidecar ?? id;
    record.streams.add(stream);
    stream.log.debug('ADS stream identified');
    this.safe(() => this.metrics.streamOpened?.(id));
    this.emit('connect', { node: id, streamId: stream.id });
  }

  private onClosed(stream: AdsStream): void {
    this.anonymous.delete(stream);
    this.budget.forget(stream);
    const node = stream.node;
    if (node === undefined) return;
    const record = this.nodes.get(node);
    if (record?.streams.delete(stream)) record.lastClosed = stream.types;
    stream.log.debug('ADS stream closed');
    this.safe(() => this.metrics.streamClosed?.(node));
    this.emit('disconnect', { node, streamId: stream.id });
  }

  private onNack(stream: AdsStream, url: ResourceTypeUrl, nack: StreamNack): void {
    const node = stream.node ?? '';
    const { version, message } = nack;
    const record = this.record(node);
    record.lastNack.set(url, { version, message, at: this.now() });
    if (record.nackLogged.get(url) !== version) {
      record.nackLogged.set(url, version);
      stream.log.warn({ typeUrl: url, version, keptVersion: nack.keptVersion, error: message }, 'Envoy rejected xDS config');
    }
    this.safe(() => this.metrics.nack?.(node, url, version, message));
    this.emit('nack', { node, typeUrl: url, version, nonce: nack.nonce, message });
  }

  private safe(hook: () => void): void {
    try {
      hook();
    } catch (err) {
      this.log.debug({ err }, 'ADS metrics hook threw');
    }
  }
}
