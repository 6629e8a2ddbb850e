// ADS, state of the world: one gRPC stream per Envoy carries CDS, EDS, LDS and
// RDS. Per stream and type URL we keep the subscribed names, the last nonce,
// version and names sent, and the last version ACKed. Flow control follows
// go-control-plane: at most one response per type is in flight; the next one
// waits for Envoy's ACK or NACK, so every NACK is seen with its reason.
import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { envoyGrpc } from '../xds/protos.js';
import { PUSH_ORDER, TYPE_URL, WILDCARD_TYPES, isResourceTypeUrl, type ResourceTypeUrl, type Snapshot } from '../xds/snapshot.js';
import { SnapshotStore, encodedResources, type EncodedSnapshot } from './snapshotStore.js';
import type { DiscoveryRequest__Output } from '../generated/envoy/service/discovery/v3/DiscoveryRequest.js';
import type { DiscoveryResponse } from '../generated/envoy/service/discovery/v3/DiscoveryResponse.js';
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
}

export interface AdsServerOptions {
  logger: Logger;
  metrics?: AdsMetrics;
  /** Identifier Envoy shows as control_plane in its config dump. */
  identifier?: string;
  /**
   * How long LDS/RDS may wait for CDS/EDS of the same change to be ACKed
   * before they are sent anyway (so a misbehaving client cannot stall routes).
   */
  orderingTimeoutMs?: number;
  /** Clock for NACK timestamps (epoch ms). */
  now?: () => number;
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
  /** Open streams of this node (normally 0 or 1). */
  connected: number;
  /** Versions of the node's snapshot, when it has one. */
  snapshot?: Record<ResourceTypeUrl, string>;
  /** From the newest open stream, else from the last one that closed. */
  types: Partial<Record<ResourceTypeUrl, AdsTypeStatus>>;
}

interface StreamTypeState {
  /** Requested names, sorted; empty means all. */
  names: string[];
  nonce?: string;
  /** A response was sent and neither ACKed nor NACKed yet. */
  inFlight: boolean;
  versionSent?: string;
  namesSent?: string;
  versionAcked?: string;
}

interface AdsStream {
  id: number;
  call: grpc.ServerDuplexStream<DiscoveryRequest__Output, DiscoveryResponse>;
  node?: string;
  types: Map<ResourceTypeUrl, StreamTypeState>;
  openedAt: number;
  closed: boolean;
  orderingTimer?: NodeJS.Timeout;
  /** Set when the ordering timer fired: send LDS/RDS without waiting. */
  orderingExpired: boolean;
  warnedTypes: Set<string>;
  log: Logger;
}

interface NodeRecord {
  streams: Set<AdsStream>;
  /** Type state of the last stream that closed, for status() while none is open. */
  lastClosed?: Map<ResourceTypeUrl, StreamTypeState>;
  lastNack: Map<ResourceTypeUrl, NackRecord>;
  /** Version whose NACK was logged, per type: log once, count always. */
  nackLogged: Map<ResourceTypeUrl, string>;
}

function grpcError(code: grpc.status, details: string): grpc.ServerErrorResponse {
  return { name: 'AdsError', message: details, code, details };
}

function namesKey(url: ResourceTypeUrl, names: readonly string[]): string {
  return WILDCARD_TYPES.has(url) || names.length === 0 || names.includes('*') ? '*' : names.join('\n');
}

export class AdsServer extends EventEmitter<AdsServerEvents> {
  private readonly log: Logger;
  private readonly metrics: AdsMetrics;
  private readonly identifier: string;
  private readonly orderingTimeoutMs: number;
  private readonly now: () => number;
  private readonly snapshots = new SnapshotStore();
  private readonly nodes = new Map<string, NodeRecord>();
  /** Streams whose first request (with the node id) has not arrived yet. */
  private readonly anonymous = new Set<AdsStream>();
  private readonly noncePrefix = randomBytes(4).toString('hex');
  private nonceCounter = 0;
  private streamCounter = 0;

  constructor(opts: AdsServerOptions) {
    super();
    this.log = opts.logger.child({ component: 'ads' });
    this.metrics = opts.metrics ?? {};
    this.identifier = opts.identifier ?? 'mvproxy';
    this.orderingTimeoutMs = opts.orderingTimeoutMs ?? 2000;
    this.now = opts.now ?? Date.now;
  }

  /** Registers the ADS service on a gRPC server (which may host other services too). */
  addToServer(server: grpc.Server): void {
    const handlers: AggregatedDiscoveryServiceHandlers = {
      StreamAggregatedResources: (call) => this.openStream(call),
      DeltaAggregatedResources: (call) => {
        call.emit('error', grpcError(grpc.status.UNIMPLEMENTED, 'mvproxy serves state-of-the-world ADS only'));
      },
    };
    server.addService(envoyGrpc().envoy.service.discovery.v3.AggregatedDiscoveryService.service, handlers);
  }

  /**
   * Sets what a node should have and pushes the changed types to its open
   * streams, CDS then EDS then LDS then RDS. Throws if a resource cannot be
   * encoded (a translator bug), leaving the previous snapshot in place.
   */
  setSnapshot(node: string, snapshot: Snapshot): void {
    this.snapshots.set(node, snapshot);
    for (const stream of this.record(node).streams) this.flush(stream);
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
      const status: AdsNodeStatus = { connected: record.streams.size, types };
      const encoded = this.snapshots.get(node);
      if (encoded) status.snapshot = { ...encoded.versions };
      out[node] = status;
    }
    return out;
  }

  /** Ends every open stream (status UNAVAILABLE) so Envoys reconnect elsewhere or later. */
  closeStreams(): void {
    const all = [...this.anonymous];
    for (const record of this.nodes.values()) all.push(...record.streams);
    for (const stream of all) {
      if (!stream.call.cancelled && !stream.call.writableEnded) {
        stream.call.emit('error', grpcError(grpc.status.UNAVAILABLE, 'mvproxy control plane shutting down'));
      }
      this.closeStream(stream);
    }
  }

  // ---- streams ----

  private record(node: string): NodeRecord {
    let record = this.nodes.get(node);
    if (!record) {
      record = { streams: new Set(), lastNack: new Map(), nackLogged: new Map() };
      this.nodes.set(node, record);
    }
    return record;
  }

  private primaryStream(record: NodeRecord): AdsStream | undefined {
    let newest: AdsStream | undefined;
    for (const stream of record.streams) if (!newest || stream.id > newest.id) newest = stream;
    return newest;
  }

  private openStream(call: grpc.ServerDuplexStream<DiscoveryRequest__Output, DiscoveryResponse>): void {
    const id = ++this.streamCounter;
    const stream: AdsStream = {
      id,
      call,
      types: new Map(),
      openedAt: this.now(),
      closed: false,
      orderingExpired: false,
      warnedTypes: new Set(),
      log: this.log.child({ stream: id, peer: call.getPeer() }),
    };
    this.anonymous.add(stream);
    stream.log.debug('ADS stream opened');
    call.on('data', (request: DiscoveryRequest__Output) => {
      try {
        this.onRequest(stream, request);
      } catch (err) {
        // A bug or an odd request must cost one stream, never the server.
        stream.log.debug({ err }, 'ADS request failed; dropping stream');
        if (!call.cancelled && !call.writableEnded) call.emit('error', grpcError(grpc.status.INTERNAL, 'internal error'));
        this.closeStream(stream);
      }
    });
    call.on('error', (err: Error) => {
      stream.log.debug({ err }, 'ADS stream error');
      this.closeStream(stream);
    });
    call.on('cancelled', () => this.closeStream(stream));
    call.on('end', () => {
      // Envoy half-closed: finish our side too.
      if (!call.writableEnded) call.end();
      this.closeStream(stream);
    });
    call.on('close', () => this.closeStream(stream));
  }

  private closeStream(stream: AdsStream): void {
    if (stream.closed) return;
    stream.closed = true;
    if (stream.orderingTimer) clearTimeout(stream.orderingTimer);
    this.anonymous.delete(stream);
    const node = stream.node;
    if (node === undefined) return;
    const record = this.nodes.get(node);
    if (record?.streams.delete(stream)) record.lastClosed = stream.types;
    stream.log.debug('ADS stream closed');
    this.safe(() => this.metrics.streamClosed?.(node));
    this.emit('disconnect', { node, streamId: stream.id });
  }

  private fail(stream: AdsStream, code: grpc.status, details: string): void {
    stream.log.debug({ details }, 'rejecting ADS stream');
    if (!stream.call.cancelled && !stream.call.writableEnded) stream.call.emit('error', grpcError(code, details));
    this.closeStream(stream);
  }

  private onRequest(stream: AdsStream, request: DiscoveryRequest__Output): void {
    if (stream.closed) return;
    if (stream.node === undefined) {
      const id = request.node?.id ?? '';
      if (id === '') {
        this.fail(stream, grpc.status.INVALID_ARGUMENT, 'the first DiscoveryRequest on an ADS stream must carry node.id');
        return;
      }
      stream.node = id;
      stream.log = stream.log.child({ node: id });
      this.anonymous.delete(stream);
      this.record(id).streams.add(stream);
      stream.log.debug('ADS stream identified');
      this.safe(() => this.metrics.streamOpened?.(id));
      this.emit('connect', { node: id, streamId: stream.id });
    }
    const node = stream.node;
    const url = request.type_url ?? '';
    if (url === '') {
      this.fail(stream, grpc.status.INVALID_ARGUMENT, 'type_url is required on an ADS stream');
      return;
    }
    if (!isResourceTypeUrl(url)) {
      // Nothing will ever answer it; say so once instead of letting Envoy wait silently.
      if (!stream.warnedTypes.has(url)) {
        stream.warnedTypes.add(url);
        stream.log.warn({ typeUrl: url }, 'Envoy asked for a resource type mvproxy does not serve');
      }
      return;
    }
    const names = [...new Set(request.resource_names ?? [])].sort();
    let st = stream.types.get(url);
    if (st?.nonce !== undefined) {
      const nonce = request.response_nonce ?? '';
      if (nonce !== st.nonce) {
        // An answer to a response that has since been superseded.
        stream.log.debug({ typeUrl: url, nonce, latest: st.nonce }, 'ignoring stale request');
        this.safe(() => this.metrics.staleRequest?.(node, url));
        return;
      }
      const answering = st.inFlight;
      st.inFlight = false;
      if (request.error_detail) {
        this.onNack(stream, node, url, st, request);
      } else {
        st.versionAcked = request.version_info ?? '';
        // A repeat of the last nonce with other names is a subscription change, not a new ACK.
        if (answering) this.onAck(stream, node, url, st.versionAcked, st.nonce);
      }
    } else if (!st) {
      // First request for this type on this stream; a version_info from a
      // previous connection is ignored: a new stream always gets the current set.
      st = { names: [], inFlight: false };
      stream.types.set(url, st);
      stream.log.debug({ typeUrl: url, versionInfo: request.version_info ?? '' }, 'subscribed');
    }
    st.names = names;
    this.flush(stream);
  }

  private onAck(stream: AdsStream, node: string, url: ResourceTypeUrl, version: string, nonce: string): void {
    stream.log.debug({ typeUrl: url, version }, 'ACK');
    this.safe(() => this.metrics.ack?.(node, url, version));
    this.emit('ack', { node, typeUrl: url, version, nonce });
  }

  private onNack(stream: AdsStream, node: string, url: ResourceTypeUrl, st: StreamTypeState, request: DiscoveryRequest__Output): void {
    const version = st.versionSent ?? '';
    const message = request.error_detail?.message ?? '';
    // The NACK's version_info is what Envoy still runs: the last accepted version.
    st.versionAcked = request.version_info ?? '';
    const record = this.record(node);
    record.lastNack.set(url, { version, message, at: this.now() });
    if (record.nackLogged.get(url) !== version) {
      record.nackLogged.set(url, version);
      stream.log.warn({ typeUrl: url, version, keptVersion: st.versionAcked, error: message }, 'Envoy rejected xDS config');
    }
    this.safe(() => this.metrics.nack?.(node, url, version, message));
    this.emit('nack', { node, typeUrl: url, version, nonce: st.nonce ?? '', message });
  }

  /** True when a type's current content (and names) went out and was answered. */
  private settled(stream: AdsStream, encoded: EncodedSnapshot, url: ResourceTypeUrl): boolean {
    const st = stream.types.get(url);
    if (!st) return true;
    return !st.inFlight && !this.needsSend(encoded, url, st);
  }

  /**
   * LDS/RDS go out only after the CDS and EDS of the same change were
   * answered, and after Envoy asked for (and got) the endpoints of clusters
   * it just accepted, so a route never points at a cluster still warming.
   */
  private routesMayGo(stream: AdsStream, encoded: EncodedSnapshot): boolean {
    if (stream.orderingExpired) return true;
    if (!this.settled(stream, encoded, TYPE_URL.cluster) || !this.settled(stream, encoded, TYPE_URL.endpoint)) return false;
    const cds = stream.types.get(TYPE_URL.cluster);
    if (cds && cds.versionAcked === encoded.versions[TYPE_URL.cluster] && encoded.edsNames.length > 0) {
      const eds = stream.types.get(TYPE_URL.endpoint);
      if (!eds) return false;
      if (eds.names.length > 0 && !eds.names.includes('*')) {
        const wanted = new Set(eds.names);
        if (!encoded.edsNames.every((name) => wanted.has(name))) return false;
      }
    }
    return true;
  }

  private needsSend(encoded: EncodedSnapshot, url: ResourceTypeUrl, st: StreamTypeState): boolean {
    // A NACKed version was sent, so it is not sent again until the content changes.
    return st.versionSent !== encoded.versions[url] || st.namesSent !== namesKey(url, st.names);
  }

  private flush(stream: AdsStream): void {
    if (stream.closed || stream.node === undefined) return;
    const encoded = this.snapshots.get(stream.node);
    if (!encoded) return; // no snapshot yet: the node waits until one arrives
    let routesHeld = false;
    for (const url of PUSH_ORDER) {
      const st = stream.types.get(url);
      if (!st || st.inFlight || !this.needsSend(encoded, url, st)) continue;
      if ((url === TYPE_URL.listener || url === TYPE_URL.route) && !this.routesMayGo(stream, encoded)) {
        routesHeld = true;
        continue;
      }
      this.send(stream, stream.node, encoded, url, st);
      if (stream.closed) return;
    }
    if (routesHeld && !stream.orderingTimer) {
      stream.orderingTimer = setTimeout(() => {
        delete stream.orderingTimer;
        stream.log.debug('CDS/EDS not settled in time; sending LDS/RDS anyway');
        stream.orderingExpired = true;
        this.flush(stream);
        stream.orderingExpired = false;
      }, this.orderingTimeoutMs);
      stream.orderingTimer.unref();
    } else if (!routesHeld && stream.orderingTimer) {
      clearTimeout(stream.orderingTimer);
      delete stream.orderingTimer;
    }
  }

  private send(stream: AdsStream, node: string, encoded: EncodedSnapshot, url: ResourceTypeUrl, st: StreamTypeState): void {
    const version = encoded.versions[url];
    const resources = encodedResources(encoded, url, st.names);
    const nonce = `${this.noncePrefix}-${++this.nonceCounter}`;
    const response: DiscoveryResponse = {
      version_info: version,
      resources,
      type_url: url,
      nonce,
      control_plane: { identifier: this.identifier },
    };
    if (stream.call.cancelled || stream.call.writableEnded || stream.call.destroyed) {
      this.closeStream(stream);
      return;
    }
    st.nonce = nonce;
    st.inFlight = true;
    st.versionSent = version;
    st.namesSent = namesKey(url, st.names);
    stream.call.write(response);
    stream.log.debug({ typeUrl: url, version, nonce, resources: resources.length }, 'sent');
    this.safe(() => this.metrics.responseSent?.(node, url, version, resources.length));
  }

  private safe(hook: () => void): void {
    try {
      hook();
    } catch (err) {
      this.log.debug({ err }, 'ADS metrics hook threw');
    }
  }
}
