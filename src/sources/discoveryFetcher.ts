// Polls one apiserver's own aggregated discovery (`/api` and `/apis`) with
// If-None-Match, so an unchanged document costs a 304. A failed poll keeps the
// last good document: a restarting apiserver must not lose its served set
// (DESIGN.md rule 4); the planner reads `reachable` instead.
// The same poll reads its OpenAPI v3 index (`/openapi/v3`, a few kB; it has
// no ETag), for the merged index kubectl explain reads; a failure there keeps
// the last good index and does not make the apiserver unreachable. It also
// reads /readyz, which an apiserver fails while it starts and during its
// shutdown delay: the planner then moves traffic off it while it still serves.
import { createHash } from 'node:crypto';
import type { Logger } from '../util/log.js';
import type { Metrics } from '../metrics.js';
import { formatHost, type ApiserverEndpoint } from '../model/cluster.js';
import type { APIGroupDiscoveryList, ApiserverDiscovery } from '../model/discovery.js';
import { parseAggregatedDiscovery } from '../model/servedSet.js';
import { parseOpenApiV3Index, type OpenApiV3Index } from '../model/openapi.js';
import { HttpTransportError, type HttpResponse, type HttpTransport } from './apiserverHttp.js';
import { errorMessage, systemTimers, type TimerHandle, type Timers } from './runtime.js';

/** Aggregated v2 with profile=nopeer first: a 1.36+ apiserver with upstream MVP on then answers with its local document. */
export const AGGREGATED_DISCOVERY_ACCEPT =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,' +
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

export const DEFAULT_DISCOVERY_INTERVAL_MS = 1000;

export type DiscoverySyncErrorType = 'fetch' | 'timeout' | 'status' | 'parse';

export interface DiscoveryUpdate {
  /** Last good discovery; undefined until one fetch succeeded. */
  discovery?: ApiserverDiscovery;
  /** Combined ETag of `/api` and `/apis` for `discovery`. */
  etag?: string;
  /** Whether the latest attempt succeeded. */
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
  ) {
    super(message);
    this.name = 'DiscoverySyncError';
  }
}

interface PathState {
  etag: string;
  list: APIGroupDiscoveryList;
}

type Health = 'unknown' | 'ok' | 'failing';

const DISCOVERY_PATHS = { core: '/api', groups: '/apis' } as const;
const OPENAPI_V3_INDEX_PATH = '/openapi/v3';
const READYZ_PATH = '/readyz';
const NOT_READY_MIN_INTERVAL_MS = 100;

interface OpenApiState {
  /** Hash of the body: the index carries no ETag. */
  hash: string;
  index: OpenApiV3Index;
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
  private openapiHealth: Health = 'unknown';
  private ready: boolean | undefined;
  /** Same object until a document changes, so consumers can compare by identity. */
  private discovery: ApiserverDiscovery | undefined;
  private health: Health = 'unknown';
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
    let core: PathState;
    let groups: PathState;
    let openapi: OpenApiState | undefined;
    let ready: boolean | undefined;
    // These two never reject (a failure keeps their last answer); all four stay abortable by stop().
    const openapiFetch = this.fetchOpenApiIndex(controller.signal);
    const readyFetch = this.fetchReady(controller.signal);
    try {
      [core, groups] = await Promise.all([
        this.fetchDocument(DISCOVERY_PATHS.core, this.core, controller.signal),
        this.fetchDocument(DISCOVERY_PATHS.groups, this.groups, controller.signal),
      ]);
      [openapi, ready] = await Promise.all([openapiFetch, readyFetch]);
    } catch (err) {
      controller.abort(); // the sibling requests, if still running
      await Promise.all([openapiFetch, readyFetch]);
      if (this.stopped) return;
      this.recordFailure(err);
      return;
    } finally {
      if (this.inflight === controller) this.inflight = undefined;
    }
    if (this.stopped) return;
    const readinessChanged = ready !== this.ready;
    this.ready = ready;
    const changed = core !== this.core || groups !== this.groups || openapi !== this.openapi;
    this.core = core;
    this.groups = groups;
    this.openapi = openapi;
    if (changed || !this.discovery) this.discovery = { core: core.list, groups: groups.list, ...(openapi ? { openapi: openapi.index } : {}) };
    const previous = this.health;
    this.health = 'ok';
    if (previous === 'failing') this.logger.info('discovery fetch recovered');
    else if (previous === 'unknown') this.logger.debug('discovery fetched');
    if (readinessChanged) this.logger.info({ ready }, ready ? 'apiserver ready' : 'apiserver not ready (starting, or in its shutdown delay)');
    if (changed || readinessChanged || previous !== 'ok') this.emit();
  }

  /** Returns `previous` itself when the document did not change. */
  private async fetchDocument(path: string, previous: PathState | undefined, signal: AbortSignal): Promise<PathState> {
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
    let list: APIGroupDiscoveryList;
    try {
      list = parseAggregatedDiscovery(JSON.parse(response.body));
    } catch (err) {
      throw new DiscoverySyncError('parse', `GET ${path}: ${errorMessage(err)}`);
    }
    // Without an ETag (or if the server ignores If-None-Match) the body's hash tells change apart.
    const etag = response.etag ?? `"sha256:${createHash('sha256').update(response.body).digest('hex')}"`;
    if (previous && previous.etag === etag) return previous;
    return { etag, list };
  }

  /** The index (`this.openapi` itself when unchanged), or the last good one (maybe none) when this read failed. */
  private async fetchOpenApiIndex(signal: AbortSignal): Promise<OpenApiState | undefined> {
    const previous = this.openapi;
    try {
      const state = await this.readOpenApiIndex(previous, signal);
      if (this.openapiHealth === 'failing') this.logger.info('OpenAPI v3 index fetch recovered');
      this.openapiHealth = 'ok';
      return state;
    } catch (err) {
      // Aborted with its sibling discovery requests: that failure is the one to report.
      if (signal.aborted || this.stopped) return previous;
      const type = this.countSyncError(err);
      if (this.openapiHealth !== 'failing') this.logger.warn({ errorType: type, err: errorMessage(err), keepingLastGood: previous !== undefined }, 'OpenAPI v3 index fetch failing');
      this.openapiHealth = 'failing';
      return previous;
    }
  }

  private async readOpenApiIndex(previous: OpenApiState | undefined, signal: AbortSignal): Promise<OpenApiState> {
    const response = await this.get(OPENAPI_V3_INDEX_PATH, { Accept: 'application/json' }, signal);
    if (response.status !== 200) throw new DiscoverySyncError('status', `GET ${OPENAPI_V3_INDEX_PATH}: HTTP ${response.status}${statusMessage(response.body)}`);
    const hash = createHash('sha256').update(response.body).digest('hex');
    if (previous?.hash === hash) return previous;
    try {
      return { hash, index: parseOpenApiV3Index(JSON.parse(response.body)) };
    } catch (err) {
      throw new DiscoverySyncError('parse', `GET ${OPENAPI_V3_INDEX_PATH}: ${errorMessage(err)}`);
    }
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
    const type: DiscoverySyncErrorType = err instanceof DiscoverySyncError ? err.type : 'fetch';
    this.metrics.peerDiscoverySyncErrors.inc({ type });
    return type;
  }

  private recordFailure(err: unknown): void {
    const type = this.countSyncError(err);
    const previous = this.health;
    this.health = 'failing';
    if (previous !== 'failing') {
      this.logger.warn(
        { errorType: type, err: errorMessage(err), keepingLastGood: this.core !== undefined },
        'discovery fetch failing; apiserver marked unreachable',
      );
      this.emit();
    }
  }

  private update(): DiscoveryUpdate {
    const update: DiscoveryUpdate = { reachable: this.health === 'ok' };
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
