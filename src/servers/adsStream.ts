// One state-of-the-world ADS stream (one Envoy), carrying CDS, EDS, SDS, LDS,
// RDS and ECDS. Per type URL it keeps the subscribed names, the last nonce,
// version and names sent, and the last version ACKed. Flow control follows
// go-control-plane: at most one response per type is in flight; the next one
// waits for Envoy's ACK or NACK, so every NACK is seen with its reason. A
// NACKed version is not sent again until the desired state changes; a request
// carrying a superseded nonce is ignored; clusters and endpoints go out (and
// are ACKed) before the listeners and routes that use them, and a cluster
// leaves only after the listeners and routes that no longer use it were
// ACKed (make before break, both ways). The filter configurations (the
// documents) go after the routes of a change that adds routes, and before
// them when the change only drops routes (xds/changeOrder.ts). Only an ACK
// settles a type: after a NACK, or while Envoy does not answer, what depends
// on it waits (Envoy keeps its previous routes and documents, consistent with
// each other); the wait is logged and counted past the ordering timeout, and
// a NACKed type is sent again with the next change.
//
// The server that hosts streams (ads.ts) keeps the registry of nodes, their
// NACK history, events and metrics; a stream tells it what happened through
// AdsStreamHost.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../util/log.js';
import { PUSH_ORDER, TYPE_URL, WILDCARD_TYPES, isResourceTypeUrl, type ResourceTypeUrl } from '../xds/snapshot.js';
import { encodeDiscoveryResponse, encodedResources, type AnyBytes, type EncodedSnapshot, type SharedResponse } from './snapshotStore.js';
import { nodeClaimRefusal, nodeSidecar } from './peerIdentity.js';
import { grpcError } from './grpcListen.js';
import type { DiscoveryRequest__Output } from '../generated/envoy/service/discovery/v3/DiscoveryRequest.js';
import { changeOrder } from '../xds/changeOrder.js';
import type { Snapshot } from '../xds/snapshot.js';
import type { AdsCall, AdsStreamHost, AdsStreamOptions, StreamTypeState } from './adsStreamTypes.js';

export type { AdsCall, AdsStreamHost, AdsStreamOptions, StreamNack, StreamTypeState } from './adsStreamTypes.js';

/** A response's version, and (CDS only) the dropped clusters it keeps: AdsStream.cdsTarget. */
type CdsTarget = { version: string; kept: Array<[string, AnyBytes]> };

/**
 * How long an unanswered response counts against the server's budget: an
 * Envoy that stops answering (hung, or its connection stalled) must not hold
 * back every other Envoy's config.
 */
export const BUDGET_HOLD_MS = 2000;

/** A snapshot's versions, all types: a change of any of them is a new change. */
function versionsKey(encoded: EncodedSnapshot): string {
  return PUSH_ORDER.map((url) => encoded.versions[url]).join(',');
}

function namesKey(url: ResourceTypeUrl, names: readonly string[]): string {
  return WILDCARD_TYPES.has(url) || names.length === 0 || names.includes('*') ? '*' : names.join('\n');
}

export class AdsStream {
  readonly id: number;
  /** The node id, from the first request; undefined until then. */
  node: string | undefined;
  /** Whose sidecar config the node runs (peerIdentity.ts), from the first request; undefined until then. */
  sidecar: string | undefined;
  /** The first request carried no version: this Envoy runs no config from any control plane yet. */
  startedEmpty = false;
  readonly types = new Map<ResourceTypeUrl, StreamTypeState>();
  closed = false;
  log: Logger;
  private readonly call: AdsCall;
  private readonly host: AdsStreamHost<AdsStream>;
  private readonly identifier: string;
  private readonly orderingTimeoutMs: number;
  private orderingTimer: NodeJS.Timeout | undefined;
  /** What was held back when the ordering timer last reported it: report a wait once. */
  private heldReported = '';
  /** The snapshot of the routes last sent, and of the routes Envoy last ACKed (what it runs): changeOrder's `held`. */
  private routesSent: Snapshot | undefined;
  private routesHeld: Snapshot | undefined;
  private readonly warnedTypes = new Set<string>();
  /** The clusters of the last CDS response sent: what Envoy runs, or will once it answers. */
  private clustersSent = new Map<string, AnyBytes>();

  constructor(opts: AdsStreamOptions<AdsStream>) {
    this.id = opts.id;
    this.call = opts.call;
    this.host = opts.host;
    this.log = opts.log;
    this.identifier = opts.identifier;
    this.orderingTimeoutMs = opts.orderingTimeoutMs;
    const call = opts.call;
    call.on('data', (request: DiscoveryRequest__Output) => {
      try {
        this.onRequest(request);
      } catch (err) {
        // A bug or an odd request must cost one stream, never the server.
        this.log.debug({ err }, 'ADS request failed; dropping stream');
        if (!call.cancelled && !call.writableEnded) call.emit('error', grpcError(grpc.status.INTERNAL, 'internal error'));
        this.close();
      }
    });
    call.on('error', (err: Error) => {
      this.log.debug({ err }, 'ADS stream error');
      this.close();
    });
    call.on('cancelled', () => this.close());
    call.on('end', () => {
      // Envoy half-closed: finish our side too.
      if (!call.writableEnded) call.end();
      this.close();
    });
    call.on('close', () => this.close());
  }

  /** Ends the stream with a gRPC status (when it is still open). */
  end(code: grpc.status, details: string): void {
    if (!this.call.cancelled && !this.call.writableEnded) this.call.emit('error', grpcError(code, details));
    this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.orderingTimer) clearTimeout(this.orderingTimer);
    for (const st of this.types.values()) this.answered(st);
    this.host.closed(this);
  }

  /** Sends, in push order, every type whose content or names changed and that may go now. */
  flush(): void {
    if (this.closed || this.sidecar === undefined) return;
    const encoded = this.host.snapshot(this.sidecar, this.startedEmpty);
    if (!encoded) return; // no snapshot yet: the node waits until one arrives
    const held: ResourceTypeUrl[] = [];
    for (const url of PUSH_ORDER) {
      const st = this.types.get(url);
      if (!st || st.inFlight || !this.needsSend(encoded, url, st)) continue;
      if (!this.mayGo(encoded, url)) {
        held.push(url);
        continue;
      }
      // Over the server's budget: the server flushes this stream again when there is room.
      if (!this.send(encoded, url, st)) return;
      if (this.closed) return;
    }
    if (held.length === 0) {
      clearTimeout(this.orderingTimer);
      this.orderingTimer = undefined;
    } else if (!this.orderingTimer) {
      this.orderingTimer = setTimeout(() => this.reportHeld(), this.orderingTimeoutMs);
      this.orderingTimer.unref();
    }
  }

  /** Past the ordering timeout: says once per change what still waits, and for what (it goes on waiting). */
  private reportHeld(): void {
    this.orderingTimer = undefined;
    const encoded = this.sidecar === undefined ? undefined : this.host.snapshot(this.sidecar, this.startedEmpty);
    if (this.closed || !encoded) return;
    const held = PUSH_ORDER.filter((url) => {
      const st = this.types.get(url);
      return st !== undefined && !st.inFlight && this.needsSend(encoded, url, st) && !this.mayGo(encoded, url);
    });
    const waitingFor = PUSH_ORDER.filter((url) => !held.includes(url) && !this.settled(encoded, url));
    const report = `${Object.values(encoded.versions).join(',')} ${held.join(',')}`;
    if (held.length === 0 || report === this.heldReported) return;
    this.heldReported = report;
    this.log.warn(
      { held, waitingFor, acked: waitingFor.map((url) => this.types.get(url)?.versionAcked ?? '') },
      'xDS update held back: what it depends on is not ACKed',
    );
    for (const url of held) this.host.heldBack(this, url, waitingFor);
  }

  private fail(code: grpc.status, details: string): void {
    this.log.debug({ details }, 'rejecting ADS stream');
    this.end(code, details);
  }

  private onRequest(request: DiscoveryRequest__Output): void {
    if (this.closed) return;
    if (this.node === undefined) {
      const id = request.node?.id ?? '';
      if (id === '') {
        this.fail(grpc.status.INVALID_ARGUMENT, 'the first DiscoveryRequest on an ADS stream must carry node.id');
        return;
      }
      const sidecar = nodeSidecar(id, request.node?.metadata);
      const refusal = nodeClaimRefusal(this.call.getAuthContext(), id, sidecar);
      if (refusal !== undefined) {
        this.log.warn({ claimed: id, sidecar, peer: this.call.getPeer() }, 'refused an ADS stream claiming a node its client certificate does not name');
        this.fail(grpc.status.PERMISSION_DENIED, refusal);
        return;
      }
      this.node = id;
      this.sidecar = sidecar;
      this.startedEmpty = (request.version_info ?? '') === '';
      this.log = this.log.child(sidecar === id ? { node: id } : { node: id, sidecar });
      this.host.identified(this);
    }
    const url = request.type_url ?? '';
    if (url === '') {
      this.fail(grpc.status.INVALID_ARGUMENT, 'type_url is required on an ADS stream');
      return;
    }
    if (!isResourceTypeUrl(url)) {
      // Nothing will ever answer it; say so once instead of letting Envoy wait silently.
      if (!this.warnedTypes.has(url)) {
        this.warnedTypes.add(url);
        this.log.warn({ typeUrl: url }, 'Envoy asked for a resource type mvproxy does not serve');
      }
      return;
    }
    const names = [...new Set(request.resource_names ?? [])].sort();
    let st = this.types.get(url);
    if (st?.nonce !== undefined) {
      const nonce = request.response_nonce ?? '';
      if (nonce !== st.nonce) {
        // An answer to a response that has since been superseded.
        this.log.debug({ typeUrl: url, nonce, latest: st.nonce }, 'ignoring stale request');
        this.host.staleRequest(this, url);
        return;
      }
      const answering = st.inFlight;
      st.inFlight = false;
      if (request.error_detail) {
        // The NACK's version_info is what Envoy still runs: the last accepted version.
        st.versionAcked = request.version_info ?? '';
        const current = this.sidecar === undefined ? undefined : this.host.snapshot(this.sidecar, this.startedEmpty);
        st.nackedAt = current ? versionsKey(current) : '';
        const nack = { version: st.versionSent ?? '', message: request.error_detail.message ?? '', keptVersion: st.versionAcked, nonce: st.nonce };
        this.host.nacked(this, url, nack);
      } else {
        st.versionAcked = request.version_info ?? '';
        // A repeat of the last nonce with other names is a subscription change, not a new ACK.
        if (answering) {
          if (url === TYPE_URL.route && st.versionAcked === st.versionSent) this.routesHeld = this.routesSent;
          this.log.debug({ typeUrl: url, version: st.versionAcked }, 'ACK');
          this.host.acked(this, url, st.versionAcked, st.nonce);
        }
      }
      // Room in the budget only once the answer is reported (other streams may take it at once).
      this.answered(st);
    } else if (!st) {
      // First request for this type on this stream; a version_info from a
      // previous connection is ignored: a new stream always gets the current set.
      st = { names: [], inFlight: false };
      this.types.set(url, st);
      this.log.debug({ typeUrl: url, versionInfo: request.version_info ?? '' }, 'subscribed');
    }
    st.names = names;
    this.flush();
  }

  /** True when Envoy ACKed a type's current content (and names): a NACK or no answer yet is not settled. */
  private settled(encoded: EncodedSnapshot, url: ResourceTypeUrl): boolean {
    const st = this.types.get(url);
    if (!st) return true;
    return !st.inFlight && !this.needsSend(encoded, url, st) && st.nackedAt === undefined && st.versionAcked === st.versionSent;
  }

  /**
   * Listeners and routes wait for their clusters (routesMayGo); the
   * documents go after the routes of the change, or before them when the
   * change only drops routes (xds/changeOrder.ts), and the routes then wait
   * for their ACK.
   */
  private mayGo(encoded: EncodedSnapshot, url: ResourceTypeUrl): boolean {
    const documentsFirst = changeOrder(this.routesHeld, encoded.snapshot) === 'documents-first';
    if (url === TYPE_URL.listener || url === TYPE_URL.route)
      return this.routesMayGo(encoded) && (!documentsFirst || this.settled(encoded, TYPE_URL.extensionConfig));
    if (url !== TYPE_URL.extensionConfig || documentsFirst) return true;
    return this.routesMayGo(encoded) && this.settled(encoded, TYPE_URL.listener) && this.settled(encoded, TYPE_URL.route);
  }

  /**
   * LDS/RDS go out only after the CDS and EDS of the same change were
   * answered, and after Envoy asked for (and got) the endpoints of clusters
   * it just accepted, so a route never points at a cluster still warming.
   */
  private routesMayGo(encoded: EncodedSnapshot): boolean {
    if (!this.settled(encoded, TYPE_URL.cluster) || !this.settled(encoded, TYPE_URL.endpoint)) return false;
    const cds = this.types.get(TYPE_URL.cluster);
    if (cds && cds.versionAcked === this.cdsTarget(encoded).version && encoded.edsNames.length > 0) {
      const eds = this.types.get(TYPE_URL.endpoint);
      if (!eds) return false;
      if (eds.names.length > 0 && !eds.names.includes('*')) {
        const wanted = new Set(eds.names);
        if (!encoded.edsNames.every((name) => wanted.has(name))) return false;
      }
    }
    return true;
  }

  private needsSend(encoded: EncodedSnapshot, url: ResourceTypeUrl, st: StreamTypeState): boolean {
    // A NACKed version is sent again with the next change of the snapshot (any type's), not before.
    if (st.nackedAt !== undefined && st.nackedAt !== versionsKey(encoded)) return true;
    const version = url === TYPE_URL.cluster ? this.cdsTarget(encoded).version : encoded.versions[url];
    return st.versionSent !== version || st.namesSent !== namesKey(url, st.names);
  }

  /**
   * The CDS response this snapshot calls for now. A cluster the snapshot
   * drops may still be named by the routes Envoy runs (the routes that stop
   * using it go out after CDS): removing it first would answer requests that
   * match those routes with 503 "cluster not found" (Envoy's NC flag, an empty
   * body, no Retry-After) until the new routes arrive. So while this
   * snapshot's listeners and routes are not yet answered, CDS keeps the
   * clusters last sent that it drops (with their endpoints, which Envoy keeps
   * because EDS names them no more), under a version of its own; once they
   * are answered, the snapshot's own CDS removes them.
   */
  private cdsTarget(encoded: EncodedSnapshot): CdsTarget {
    const version = encoded.versions[TYPE_URL.cluster];
    const current = encoded.anys.get(TYPE_URL.cluster);
    // Asked on every flush of every stream: no allocation unless a cluster is dropped.
    const dropped: CdsTarget['kept'] = [];
    for (const entry of this.clustersSent) if (!current?.has(entry[0])) dropped.push(entry);
    if (dropped.length === 0 || (this.settled(encoded, TYPE_URL.listener) && this.settled(encoded, TYPE_URL.route))) return { version, kept: [] };
    const names = dropped.map(([name]) => name).sort();
    return { version: `${version}+keeping:${names.join(',')}`, kept: dropped };
  }

  /** The type's response is no longer in flight. */
  private answered(st: StreamTypeState): void {
    st.inFlight = false;
    this.releaseBudget(st);
  }

  private releaseBudget(st: StreamTypeState): void {
    clearTimeout(st.budgetTimer);
    st.budgetTimer = undefined;
    if (st.bytesInFlight === undefined) return;
    const bytes = st.bytesInFlight;
    st.bytesInFlight = undefined;
    this.host.release(bytes);
  }

  /** Sends the type's response; false when the server's budget has no room for it now. */
  private send(encoded: EncodedSnapshot, url: ResourceTypeUrl, st: StreamTypeState): boolean {
    const target = url === TYPE_URL.cluster ? this.cdsTarget(encoded) : { version: encoded.versions[url], kept: [] };
    const version = target.version;
    if (this.call.cancelled || this.call.writableEnded || this.call.destroyed) {
      this.close();
      return true;
    }
    const names = namesKey(url, st.names);
    // Clusters kept for this stream alone make a response of its own.
    const shared = target.kept.length === 0 ? this.sharedResponse(encoded, url, st.names, names) : undefined;
    const response = shared ?? this.ownResponse(encoded, url, st.names, target);
    if (!this.host.reserve(this, response.bytes.length)) return false;
    shared?.recipients.add(this);
    st.nonce = response.nonce;
    st.inFlight = true;
    st.bytesInFlight = response.bytes.length;
    st.budgetTimer = setTimeout(() => this.releaseBudget(st), BUDGET_HOLD_MS);
    st.budgetTimer.unref();
    st.versionSent = version;
    st.namesSent = names;
    st.nackedAt = undefined;
    if (url === TYPE_URL.route) this.routesSent = encoded.snapshot;
    if (url === TYPE_URL.cluster) this.clustersSent = new Map([...(encoded.anys.get(url) ?? new Map<string, AnyBytes>()), ...target.kept]);
    this.call.write(response.bytes);
    this.log.debug({ typeUrl: url, version, nonce: response.nonce, resources: response.resources }, 'sent');
    this.host.sent(this, url, version, response.resources);
    return true;
  }

  /** The response every stream of this snapshot gets for these names, encoded once; undefined when this stream had it already. */
  private sharedResponse(encoded: EncodedSnapshot, url: ResourceTypeUrl, names: readonly string[], key: string): SharedResponse | undefined {
    const cacheKey = `${url}\n${key}`;
    let shared = encoded.responses.get(cacheKey);
    if (shared?.recipients.has(this)) return undefined;
    if (!shared) {
      shared = { ...this.ownResponse(encoded, url, names, { version: encoded.versions[url], kept: [] }), recipients: new WeakSet() };
      encoded.responses.set(cacheKey, shared);
    }
    return shared;
  }

  private ownResponse(encoded: EncodedSnapshot, url: ResourceTypeUrl, names: readonly string[], target: CdsTarget): Omit<SharedResponse, 'recipients'> {
    const resources = [...encodedResources(encoded, url, names), ...target.kept.map(([, any]) => any)];
    const nonce = this.host.nextNonce();
    const bytes = encodeDiscoveryResponse({ version_info: target.version, resources, type_url: url, nonce, control_plane: { identifier: this.identifier } });
    return { nonce, bytes, resources: resources.length };
  }
}
