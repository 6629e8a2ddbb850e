// Polls one apiserver's own aggregated discovery (`/api` and `/apis`) with
// If-None-Match, so an unchanged document costs a 304. A failed poll keeps the
// last good document: a restarting apiserver must not lose its served set
// (docs/request-rules.md, unavailable-503); the planner reads `reachable` instead.
//
// Reachability is about the network: an apiserver that answered (any HTTP
// status, any body) is reachable; only a connection, TLS or timeout failure
// makes it unreachable. What it answered is data: a malformed entry drops that
// entry (src/model/discoveryDocument.ts and routableDiscovery.ts), logged
// once per apiserver and entry and counted once per document that carries it;
// a body that is not an APIGroupDiscoveryList at all, a body over the
// transport's size limit, or an error status, keeps the last good document of
// that path (if any), and the apiserver stays reachable.
//
// The same poll reads its OpenAPI v3 index (`/openapi/v3`, a few kB; it has
// no ETag), for the merged index kubectl explain reads; a failure there keeps
// the last good index and does not make the apiserver unreachable. Its
// malformed entries are dropped one by one (src/model/openapi.ts), reported
// as discovery's are. It also
// reads /readyz, which an apiserver fails while it starts and during its
// shutdown delay: the planner then moves traffic off it while it still serves.
import { createHash } from 'node:crypto';
import type { Logger } from '../util/log.js';
import type { Metrics } from '../metrics.js';
import { formatHost, type ApiserverEndpoint } from '../model/cluster.js';
import type { APIGroupDiscoveryList, ApiserverDiscovery, DroppedDiscoveryEntry } from '../model/discovery.js';
import { parseAggregatedDiscovery, type DiscoveryDocument } from '../model/discoveryDocument.js';
import { routableDiscovery } from '../model/routableDiscovery.js';
import { parseOpenApiV3Index, routableOpenApiIndex, type DroppedOpenApiIndexEntry, type OpenApiV3Index } from '../model/openapi.js';
import { HttpTransportError, type HttpResponse, type HttpTransport } from './apiserverHttp.js';
import { errorMessage, systemTimers, type TimerHandle, type Timers } from './runtime.js';

/** Aggregated v2 with profile=nopeer first: a 1.36+ apiserver with upstream MVP on then answers with its local document. */
export const AGGREGATED_DISCOVERY_ACCEPT =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,' +
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

export const DEFAULT_DISCOVERY_INTERVAL_MS = 1000;

/**
 * The `type` label of apiserver_peer_discovery_sync_errors_total. Upstream
 * writes its values in snake_case (lease_list, hostport_resolution,
 * fetch_discovery); mvproxy's are finer: fetch and timeout (no answer: the
 * apiserver is unreachable), status (an error status), parse (an unreadable
 * body, or a document with malformed entries), too_large (a body over the
 * size limit).
 */
export type DiscoverySyncErrorType = 'fetch' | 'timeout' | 'status' | 'parse' | 'too_large';

/** Failures about a body the apiserver sent: counted once per change (per distinct body, or per transition into them), never per poll. */
const COUNTED_ONCE_PER_CHANGE: ReadonlySet<DiscoverySyncErrorType> = new Set(['parse', 'too_large']);

export interface DiscoveryUpdate {
  /** Last good discovery; undefined until one fetch succeeded. */
  discovery?: ApiserverDiscovery;
  /** Combined ETag of `/api` and `/apis` for `discovery`. */
  etag?: string;
  /**
   * Whether the latest attempt got an answer to both discovery requests (any
   * status, any body): false only after a connection, TLS or timeout failure.
   */
  reachable: boolean;
  /** Whether /readyz answered 200 in the latest attempt; absent until a reachable poll read it. */
  ready?: boolean;
}

export interface DiscoveryFetcherOptions {
  endpoint: ApiserverEndpoint;
  transport: HttpTransport;
  /** Called after an attempt changed the discovery or the reachability (and after the first attempt). */
  onUpdate: (update: DiscoveryUpdate) => void;
  logger: Logger;
  metrics: Pick<Metrics, 'peerDiscoverySyncErrors'>;
  timers?: Timers;
  intervalMs?: number;
}

export class DiscoverySyncError extends Error {
  constructor(
    readonly type: DiscoverySyncErrorType,
    message: string,
    /** For an unreadable body: its hash, so the same body is reported once. */
    readonly bodyHash?: string,
  ) {
    super(message);
    this.name = 'DiscoverySyncError';
  }
}

interface PathState {
  etag: string;
  list: APIGroupDiscoveryList;
  /** Entries of this document mvproxy does not route on. */
  dropped: DroppedDiscoveryEntry[];
}

const DISCOVERY_PATHS = { core: '/api', groups: '/apis' } as const satisfies Record<string, DiscoveryDocument>;
/** New dropped entries logged one by one per document change; the rest in one line. */
const MAX_DROPPED_LOGGED = 20;
const OPENAPI_V3_INDEX_PATH = '/openapi/v3';
const READYZ_PATH = '/readyz';
const NOT_READY_MIN_INTERVAL_MS = 100;

interface OpenApiState {
  /** Hash of the body: the index carries no ETag. */
  hash: string;
  index: OpenApiV3Index;
  /** Entries left out of `index` (parseOpenApiV3Index: not of the index's types). */
  dropped: DroppedOpenApiIndexEntry[];
  /** Entries of `index` never taken from this apiserver as a peer (routableOpenApiIndex); its own clients still get them. */
  notFromPeer: DroppedOpenApiIndexEntry[];
}

export class DiscoveryFetcher {
  private readonly endpoint: ApiserverEndpoint;
  private readonly transport: HttpTransport;
  private readonly onUpdate: (update: DiscoveryUpdate) => void;
  private readonly logger: Logger;
  private readonly metrics: Pick<Metrics, 'peerDiscoverySyncErrors'>;
  private readonly timers: Timers;
  private readonly intervalMs: number;

  private core: PathState | undefined;
  private groups: PathState | undefined;
  private openapi: OpenApiState | undefined;
  /** The last failure of the OpenAPI v3 index read reported (failureKey), undefined while it reads well: to warn and count once per change. */
  private openapiFailure: string | undefined;
  private ready: boolean | undefined;
  /** Same object until a document changes, so consumers can compare by identity. */
  private discovery: ApiserverDiscovery | undefined;
  /** Network: did the latest attempt get answers? Undefined before the first attempt. */
  private reachable: boolean | undefined;
  /** Content, per path: the last failure (status or unreadable body) reported, to warn and count once per change. */
  private readonly documentFailure = new Map<string, string>();
  /** Per path (`/api`, `/apis`, `/openapi/v3`), the dropped entries (by key) of its current document: each is logged once, when it first appears. */
  private readonly droppedLogged = new Map<string, Set<string>>();
  private started = false;
  private stopped = false;
  private running = false;
  private timer: TimerHandle | undefined;
  private inflight: AbortController | undefined;
  /** Callers of refreshNow() waiting for a poll that starts after their call. */
  private waitingForNextPoll: Array<() => void> = [];

  constructor(options: DiscoveryFetcherOptions) {
    this.endpoint = options.endpoint;
    this.transport = options.transport;
    this.onUpdate = options.onUpdate;
    this.logger = options.logger.child({ apiserver: options.endpoint.name, address: formatHost(options.endpoint.address) });
    this.metrics = options.metrics;
    this.timers = options.timers ?? systemTimers;
    this.intervalMs = options.intervalMs ?? DEFAULT_DISCOVERY_INTERVAL_MS;
  }

  /** Start polling; resolves when the first attempt finished (successful or not). */
  start(): Promise<void> {
    if (this.started) return Promise.resolve();
    this.started = true;
    return this.refreshNow();
  }

  /**
   * Poll now instead of waiting for the interval (lease events). Resolves when
   * a poll that started after this call finished; a poll already in flight may
   * predate the change, so another one follows it.
   */
  refreshNow(): Promise<void> {
    if (this.stopped || !this.started) return Promise.resolve();
    return new Promise((resolve) => {
      this.waitingForNextPoll.push(resolve);
      if (!this.running) {
        this.clearTimer();
        void this.runPoll();
      }
    });
  }

  /** Stop polling, abort a request in flight, close the connection pool. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.clearTimer();
    this.inflight?.abort();
    this.transport.close();
    this.releaseWaiters(this.waitingForNextPoll.splice(0));
  }

  /** Latest state, as last reported to onUpdate. */
  current(): DiscoveryUpdate {
    return this.update();
  }

  private async runPoll(): Promise<void> {
    this.running = true;
    const waiters = this.waitingForNextPoll.splice(0);
    try {
      await this.poll();
    } finally {
      this.running = false;
      this.releaseWaiters(waiters);
    }
    if (this.stopped) return;
    if (this.waitingForNextPoll.length > 0) {
      void this.runPoll();
    } else {
      // While it is not ready (starting, or about to stop), look again sooner:
      // traffic is kept off it until its /readyz passes.
      const delay = this.ready === false ? Math.max(NOT_READY_MIN_INTERVAL_MS, this.intervalMs / 4) : this.intervalMs;
      this.timer = this.timers.setTimeout(() => {
        this.timer = undefined;
        void this.runPoll();
      }, delay);
    }
  }

  private async poll(): Promise<void> {
    const controller = new AbortController();
    this.inflight = controller;
    // These two never reject (a failure keeps their last answer); all four stay abortable by stop().
    const openapiFetch = this.fetchOpenApiIndex(controller.signal);
    const readyFetch = this.fetchReady(controller.signal);
    let results: [PromiseSettledResult<PathState>, PromiseSettledResult<PathState>];
    let openapi: OpenApiState | undefined;
    let ready: boolean | undefined;
    try {
      results = await Promise.allSettled([
        this.fetchDocument(DISCOVERY_PATHS.core, this.core, controller.signal),
        this.fetchDocument(DISCOVERY_PATHS.groups, this.groups, controller.signal),
      ]);
      const network = results.find((r): r is PromiseRejectedResult => r.status === 'rejected' && !answered(r.reason));
      if (network) {
        controller.abort(); // the sibling requests, if still running
        await Promise.all([openapiFetch, readyFetch]);
        if (this.stopped) return;
        this.recordUnreachable(network.reason);
        return;
      }
      [openapi, ready] = await Promise.all([openapiFetch, readyFetch]);
    } finally {
      if (this.inflight === controller) this.inflight = undefined;
    }
    if (this.stopped) return;

    // The apiserver answered both: it is reachable, whatever it said.
    if (openapi && openapi !== this.openapi) this.reportOpenApiDropped(openapi);
    const [coreResult, groupsResult] = results;
    const core = this.settleDocument(DISCOVERY_PATHS.core, coreResult, this.core);
    const groups = this.settleDocument(DISCOVERY_PATHS.groups, groupsResult, this.groups);
    const readinessChanged = ready !== this.ready;
    this.ready = ready;
    const changed = core !== this.core || groups !== this.groups || openapi !== this.openapi;
    this.core = core;
    this.groups = groups;
    this.openapi = openapi;
    if (core && groups && (changed || !this.discovery)) {
      const dropped = [...core.dropped, ...groups.dropped];
      this.discovery = {
        core: core.list,
        groups: groups.list,
        ...(openapi ? { openapi: openapi.index } : {}),
        ...(dropped.length > 0 ? { dropped } : {}),
      };
    }
    const wasReachable = this.reachable;
    this.reachable = true;
    if (wasReachable === false) this.logger.info('discovery fetch recovered: apiserver reachable again');
    else if (wasReachable === undefined) this.logger.debug('discovery fetched');
    if (readinessChanged) this.logger.info({ ready }, ready ? 'apiserver ready' : 'apiserver not ready (starting, or in its shutdown delay)');
    if (changed || readinessChanged || wasReachable !== true) this.emit();
  }

  /**
   * The state of one path after an answered request: the new document, or
   * after a status error or an unreadable body the last good one (maybe
   * none). Reports, once per change, what failed or was dropped.
   */
  private settleDocument(path: string, result: PromiseSettledResult<PathState>, previous: PathState | undefined): PathState | undefined {
    if (result.status === 'rejected') {
      this.recordDocumentFailure(path, result.reason, previous !== undefined);
      return previous;
    }
    if (this.documentFailure.delete(path)) this.logger.info({ path }, 'discovery document readable again');
    if (result.value !== previous) this.reportDropped(path, result.value.dropped);
    return result.value;
  }

  /** Returns `previous` itself when the document did not change. */
  private async fetchDocument(path: DiscoveryDocument, previous: PathState | undefined, signal: AbortSignal): Promise<PathState> {
    const headers: Record<string, string> = { Accept: AGGREGATED_DISCOVERY_ACCEPT };
    if (previous) headers['If-None-Match'] = previous.etag;
    const response = await this.get(path, headers, signal);
    if (response.status === 304) {
      if (previous) return previous;
      throw new DiscoverySyncError('status', `GET ${path}: 304 Not Modified without a previous document`);
    }
    if (response.status < 200 || response.status > 299) {
      throw new DiscoverySyncError('status', `GET ${path}: HTTP ${response.status}${statusMessage(response.body)}`);
    }
    // Without an ETag (or if the server ignores If-None-Match) the body's hash tells change apart.
    const etag = response.etag ?? `"sha256:${createHash('sha256').update(response.body).digest('hex')}"`;
    if (previous && previous.etag === etag) return previous;
    const dropped: DroppedDiscoveryEntry[] = [];
    let list: APIGroupDiscoveryList;
    try {
      list = parseAggregatedDiscovery(JSON.parse(response.body), dropped, path);
    } catch (err) {
      throw new DiscoverySyncError('parse', `GET ${path}: ${errorMessage(err)}`, `sha256:${createHash('sha256').update(response.body).digest('hex')}`);
    }
    dropped.push(...routableDiscovery(list, path).dropped);
    return { etag, list, dropped };
  }

  /** The index (`this.openapi` itself when unchanged), or the last good one (maybe none) when this read failed. */
  private async fetchOpenApiIndex(signal: AbortSignal): Promise<OpenApiState | undefined> {
    const previous = this.openapi;
    try {
      const state = await this.readOpenApiIndex(previous, signal);
      if (this.openapiFailure !== undefined) this.logger.info('OpenAPI v3 index fetch recovered');
      this.openapiFailure = undefined;
      return state;
    } catch (err) {
      // Aborted with its sibling discovery requests: that failure is the one to report.
      if (signal.aborted || this.stopped) return previous;
      const type = syncErrorType(err);
      const key = failureKey(err);
      const repeated = this.openapiFailure === key;
      if (!COUNTED_ONCE_PER_CHANGE.has(type) || !repeated) this.metrics.peerDiscoverySyncErrors.inc({ type });
      if (!repeated) this.logger.warn({ errorType: type, err: errorMessage(err), keepingLastGood: previous !== undefined }, 'OpenAPI v3 index fetch failing');
      this.openapiFailure = key;
      return previous;
    }
  }

  private async readOpenApiIndex(previous: OpenApiState | undefined, signal: AbortSignal): Promise<OpenApiState> {
    const response = await this.get(OPENAPI_V3_INDEX_PATH, { Accept: 'application/json' }, signal);
    if (response.status !== 200) throw new DiscoverySyncError('status', `GET ${OPENAPI_V3_INDEX_PATH}: HTTP ${response.status}${statusMessage(response.body)}`);
    const hash = createHash('sha256').update(response.body).digest('hex');
    if (previous?.hash === hash) return previous;
    const dropped: DroppedOpenApiIndexEntry[] = [];
    let index: OpenApiV3Index;
    try {
      index = parseOpenApiV3Index(JSON.parse(response.body), dropped);
    } catch (err) {
      throw new DiscoverySyncError('parse', `GET ${OPENAPI_V3_INDEX_PATH}: ${errorMessage(err)}`, `sha256:${hash}`);
    }
    return { hash, index, dropped, notFromPeer: routableOpenApiIndex(index).dropped };
  }

  /** /readyz answered 200; a failure to ask keeps the last answer (reachability is discovery's to judge). */
  private async fetchReady(signal: AbortSignal): Promise<boolean | undefined> {
    try {
      return (await this.transport.get(READYZ_PATH, { Accept: 'text/plain' }, signal)).status === 200;
    } catch {
      return this.ready;
    }
  }

  /** A GET whose transport failures are sync errors of their kind. */
  private async get(path: string, headers: Record<string, string>, signal: AbortSignal): Promise<HttpResponse> {
    try {
      return await this.transport.get(path, headers, signal);
    } catch (err) {
      throw new DiscoverySyncError(err instanceof HttpTransportError ? err.kind : 'fetch', errorMessage(err));
    }
  }

  /** Counts apiserver_peer_discovery_sync_errors_total by the failure's type, and returns the type. */
  private countSyncError(err: unknown): DiscoverySyncErrorType {
    const type = syncErrorType(err);
    this.metrics.peerDiscoverySyncErrors.inc({ type });
    return type;
  }

  /** A connection, TLS or timeout failure: the apiserver is unreachable (its last good discovery is kept). */
  private recordUnreachable(err: unknown): void {
    const type = this.countSyncError(err);
    const previous = this.reachable;
    this.reachable = false;
    if (previous !== false) {
      this.logger.warn(
        { errorType: type, err: errorMessage(err), keepingLastGood: this.discovery !== undefined },
        'discovery fetch failing; apiserver marked unreachable',
      );
      this.emit();
    }
  }

  /**
   * An answered request whose answer is not a usable document (an error
   * status, a body that is not an APIGroupDiscoveryList, or one over the size
   * limit). A status error counts at every poll, as a failed sync; an
   * unreadable body once per distinct body; a body too large once until the
   * path reads well again. Warned once per change.
   */
  private recordDocumentFailure(path: string, err: unknown, keepingLastGood: boolean): void {
    const type = syncErrorType(err);
    const key = failureKey(err);
    const repeated = this.documentFailure.get(path) === key;
    if (!COUNTED_ONCE_PER_CHANGE.has(type) || !repeated) this.metrics.peerDiscoverySyncErrors.inc({ type });
    if (repeated) return;
    this.documentFailure.set(path, key);
    this.logger.warn(
      { path, errorType: type, err: errorMessage(err), keepingLastGood },
      keepingLastGood
        ? 'discovery document unusable; keeping the last good one (the apiserver answered: it stays reachable)'
        : 'discovery document unusable and none read before: its routes stay local (the apiserver answered: it stays reachable)',
    );
  }

  /**
   * Logs each dropped entry once, when it first appears in the document of
   * `path` (warn for malformed ones, info for valid names too long to route),
   * and counts one parse sync error for a new document that has malformed
   * entries: once per document change, never per poll.
   */
  private reportDropped(path: string, dropped: readonly DroppedDiscoveryEntry[]): void {
    const fresh = this.freshlyDropped(path, dropped, droppedKey);
    if (dropped.some((d) => d.kind === 'malformed')) this.metrics.peerDiscoverySyncErrors.inc({ type: 'parse' });
    for (const entry of fresh.slice(0, MAX_DROPPED_LOGGED)) {
      const fields = { path, entry: describeEntry(entry), at: entry.path, reason: entry.reason };
      if (entry.kind === 'malformed') this.logger.warn(fields, 'malformed discovery entry dropped: mvproxy does not route on it; the rest of the document is used');
      else this.logger.info(fields, 'discovery entry not routable (names too long for a route matcher): requests for it stay on the local apiserver');
    }
    if (fresh.length > MAX_DROPPED_LOGGED) {
      this.logger.warn({ path, more: fresh.length - MAX_DROPPED_LOGGED }, 'more discovery entries dropped (not logged one by one)');
    }
  }

  /**
   * The same for a new OpenAPI v3 index: each malformed entry warned about
   * once, when it first appears; one parse sync error for a new index that
   * has any, never per poll.
   */
  private reportOpenApiDropped(state: OpenApiState): void {
    const entries = [...state.dropped.map((entry) => ({ entry, listed: false })), ...state.notFromPeer.map((entry) => ({ entry, listed: true }))];
    const fresh = this.freshlyDropped(OPENAPI_V3_INDEX_PATH, entries, ({ entry }) => JSON.stringify([entry.key, entry.reason]));
    if (entries.length > 0) this.metrics.peerDiscoverySyncErrors.inc({ type: 'parse' });
    for (const { entry, listed } of fresh.slice(0, MAX_DROPPED_LOGGED)) {
      const fields = { path: OPENAPI_V3_INDEX_PATH, entry: truncated(entry.key), reason: entry.reason };
      if (listed) this.logger.warn(fields, 'malformed OpenAPI v3 index entry: never offered from this apiserver through other sidecars (its own clients get it as listed); the rest of the index is used');
      else this.logger.warn(fields, 'malformed OpenAPI v3 index entry dropped: the rest of the index is used');
    }
    if (fresh.length > MAX_DROPPED_LOGGED) {
      this.logger.warn({ path: OPENAPI_V3_INDEX_PATH, more: fresh.length - MAX_DROPPED_LOGGED }, 'more OpenAPI v3 index entries dropped (not logged one by one)');
    }
  }

  /**
   * The entries of `dropped` (what the new document of `path` dropped) that
   * its previous document had not dropped; remembers them all for the next
   * change, so an entry that was fixed and comes back is reported again.
   */
  private freshlyDropped<T>(path: string, dropped: readonly T[], keyOf: (entry: T) => string): T[] {
    const before = this.droppedLogged.get(path) ?? new Set<string>();
    const now = new Set<string>();
    const fresh: T[] = [];
    for (const entry of dropped) {
      const key = keyOf(entry);
      if (!before.has(key) && !now.has(key)) fresh.push(entry);
      now.add(key);
    }
    this.droppedLogged.set(path, now);
    return fresh;
  }

  private update(): DiscoveryUpdate {
    const update: DiscoveryUpdate = { reachable: this.reachable === true };
    if (this.ready !== undefined) update.ready = this.ready;
    if (this.discovery && this.core && this.groups) {
      update.discovery = this.discovery;
      update.etag = `${this.core.etag},${this.groups.etag}`;
    }
    return update;
  }

  private emit(): void {
    if (this.stopped) return;
    try {
      this.onUpdate(this.update());
    } catch (err) {
      this.logger.error({ err: errorMessage(err) }, 'discovery update listener threw');
    }
  }

  private clearTimer(): void {
    if (this.timer !== undefined) {
      this.timers.clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private releaseWaiters(waiters: Array<() => void>): void {
    for (const resolve of waiters) resolve();
  }
}

function syncErrorType(err: unknown): DiscoverySyncErrorType {
  return err instanceof DiscoverySyncError ? err.type : 'fetch';
}

/**
 * What tells one failure from the next, to report each once: the type alone
 * for a network failure (its message varies from one attempt to the next),
 * else the type and the body's hash or the message.
 */
function failureKey(err: unknown): string {
  const type = syncErrorType(err);
  if (type === 'fetch' || type === 'timeout') return type;
  return err instanceof DiscoverySyncError && err.bodyHash !== undefined ? `${type} ${err.bodyHash}` : `${type} ${errorMessage(err)}`;
}

/** Whether a failed discovery request got an answer (a status, a body, a body too large) rather than failing on the network. */
function answered(err: unknown): boolean {
  return err instanceof DiscoverySyncError && (err.type === 'status' || err.type === 'parse' || err.type === 'too_large');
}

function truncated(value: string): string {
  return value.length > 80 ? `${value.slice(0, 80)}...` : value;
}

function droppedKey(entry: DroppedDiscoveryEntry): string {
  return JSON.stringify([entry.kind, entry.document, entry.group, entry.version, entry.resource, entry.subresource, entry.reason]);
}

/** `group "apps" version "v1" resource "deployments"`, as far as the names are known. */
function describeEntry(entry: DroppedDiscoveryEntry): string {
  const parts: string[] = [];
  for (const field of ['group', 'version', 'resource', 'subresource'] as const) {
    const value = entry[field];
    if (value !== undefined) parts.push(`${field} ${JSON.stringify(truncated(value))}`);
  }
  return parts.length > 0 ? parts.join(' ') : 'an entry whose names cannot be read';
}

/** The message of a metav1.Status body, if that is what the apiserver sent (never the request's headers). */
function statusMessage(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null && 'message' in parsed && typeof parsed.message === 'string') {
      return `: ${parsed.message.slice(0, 200)}`;
    }
  } catch {
    // not JSON: no detail
  }
  return '';
}
