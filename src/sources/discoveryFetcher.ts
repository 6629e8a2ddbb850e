// Polls one apiserver's own aggregated discovery (`/api` and `/apis`) with
// If-None-Match, so an unchanged document costs a 304. A failed poll keeps the
// last good document: a restarting apiserver must not lose its served set
// (docs/request-rules.md, unavailable-503); the planner reads `reachable` instead.
//
// Reachability is about the network: an apiserver that answered (any HTTP
// status, any body) is reachable; only a connection, TLS or timeout failure
// makes it unreachable. What it answered is data: a malformed entry drops that
// entry (src/model/discoveryDocument.ts and routableDiscovery.ts), logged
// once per apiserver and entry and counted once per document that carries it
// (discoveryProblemLog.ts); a body that is not an APIGroupDiscoveryList at
// all, a body over the transport's size limit, or an error status, keeps the
// last good document of that path (if any), and the apiserver stays reachable.
//
// The same poll reads its OpenAPI v3 index (`/openapi/v3`, a few kB; it has
// no ETag), for the merged index kubectl explain reads; a failure there keeps
// the last good index and does not make the apiserver unreachable. Its
// malformed entries are dropped one by one (src/model/openapi.ts), reported
// as discovery's are. It also
// reads /readyz, which an apiserver fails while it starts and during its
// shutdown delay: the planner then moves traffic off it while it still serves.
// A /readyz body over the size limit is refused like a document: the last
// readiness is kept, one too_large sync error counted and one warning logged
// until /readyz reads well again.
//
// A timeout is weak evidence: a control plane starved of CPU times out its own
// polls of every apiserver at once, while they serve. A reachable apiserver is
// marked unreachable only after TIMEOUTS_BEFORE_UNREACHABLE polls in a row
// timed out; a refused connection or a TLS failure marks it at once.
// Each read, with its ETag and 304 handling: discoveryReads.ts.
import type { Logger } from '../util/log.js';
import type { Metrics } from '../metrics.js';
import { formatHost, type ApiserverEndpoint } from '../model/cluster.js';
import type { ApiserverDiscovery } from '../model/discovery.js';
import type { DiscoveryDocument } from '../model/discoveryDocument.js';
import { HttpTransportError, type HttpTransport } from './apiserverHttp.js';
import { DiscoveryProblemLog } from './discoveryProblemLog.js';
import {
  answered,
  DiscoverySyncError,
  readDiscoveryDocument,
  readOpenApiIndex,
  type DiscoveryDocumentState,
  type OpenApiIndexState,
} from './discoveryReads.js';
import { errorMessage, systemTimers, type TimerHandle, type Timers } from './runtime.js';

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
  /** Whether the latest attempt read both documents (200 or 304): `discovery` is what the apiserver serves now. */
  current: boolean;
  /** Whether /readyz answered 200 in the latest attempt; absent until a reachable poll read it. */
  ready?: boolean;
  /** /version's gitVersion as last read (read again whenever anything else changed); absent until read. */
  version?: string;
}

export interface DiscoveryFetcherOptions {
  endpoint: ApiserverEndpoint;
  transport: HttpTransport;
  /** Called after an attempt changed the discovery or the reachability (and after the first attempt). */
  onUpdate: (update: DiscoveryUpdate) => void;
  logger: Logger;
  metrics: Pick<Metrics, 'peerDiscoverySyncErrors'>;
  timers?: Timers;
  /** How often the apiserver is read (the serve config's discoveryPollMillis). */
  discoveryPollMs: number;
}

const DISCOVERY_PATHS = { core: '/api', groups: '/apis' } as const satisfies Record<string, DiscoveryDocument>;
const READYZ_PATH = '/readyz';
const VERSION_PATH = '/version';
/** A /version body is a few hundred bytes; anything much larger is not one. */
const MAX_VERSION_LENGTH = 64;
const NOT_READY_MIN_INTERVAL_MS = 100;
/** Polls in a row that must time out before a reachable apiserver counts as unreachable (about 3 poll intervals plus 3 timeouts). */
export const TIMEOUTS_BEFORE_UNREACHABLE = 3;

export class DiscoveryFetcher {
  private readonly endpoint: ApiserverEndpoint;
  private readonly transport: HttpTransport;
  private readonly onUpdate: (update: DiscoveryUpdate) => void;
  private readonly logger: Logger;
  private readonly timers: Timers;
  private readonly discoveryPollMs: number;
  private readonly problems: DiscoveryProblemLog;

  private core: DiscoveryDocumentState | undefined;
  private groups: DiscoveryDocumentState | undefined;
  private openapi: OpenApiIndexState | undefined;
  private ready: boolean | undefined;
  /** Whether the last answered poll read both documents (200 or 304). */
  private documentsRead = false;
  private version: string | undefined;
  /** Whether the last /readyz read was refused as too large (reported once until it reads well). */
  private readyzTooLarge = false;
  /** Same object until a document changes, so consumers can compare by identity. */
  private discovery: ApiserverDiscovery | undefined;
  /** Network: did the latest attempt get answers? Undefined before the first attempt. */
  private reachable: boolean | undefined;
  /** Polls in a row that timed out while the apiserver still counts as reachable. */
  private timeoutsInARow = 0;
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
    this.timers = options.timers ?? systemTimers;
    this.discoveryPollMs = options.discoveryPollMs;
    this.problems = new DiscoveryProblemLog(this.logger, options.metrics);
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
      const delay = this.ready === false ? Math.max(NOT_READY_MIN_INTERVAL_MS, this.discoveryPollMs / 4) : this.discoveryPollMs;
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
    let results: [PromiseSettledResult<DiscoveryDocumentState>, PromiseSettledResult<DiscoveryDocumentState>];
    let openapi: OpenApiIndexState | undefined;
    let ready: boolean | undefined;
    try {
      results = await Promise.allSettled([
        readDiscoveryDocument(this.transport, DISCOVERY_PATHS.core, this.core, controller.signal),
        readDiscoveryDocument(this.transport, DISCOVERY_PATHS.groups, this.groups, controller.signal),
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
    this.timeoutsInARow = 0;
    if (openapi && openapi !== this.openapi) this.problems.openApiIndexDropped(openapi);
    const [coreResult, groupsResult] = results;
    const core = this.settleDocument(DISCOVERY_PATHS.core, coreResult, this.core);
    const groups = this.settleDocument(DISCOVERY_PATHS.groups, groupsResult, this.groups);
    const readinessChanged = ready !== this.ready;
    this.ready = ready;
    const wasDocumentsRead = this.documentsRead;
    this.documentsRead = coreResult.status === 'fulfilled' && groupsResult.status === 'fulfilled';
    const changed = core !== this.core || groups !== this.groups || openapi !== this.openapi;
    this.core = core;
    this.groups = groups;
    this.openapi = openapi;
    if (core && groups && (changed || !this.discovery)) {
      const dropped = [...core.dropped, ...groups.dropped];
      const etags = { ...(core.sentEtag ? { core: core.sentEtag } : {}), ...(groups.sentEtag ? { groups: groups.sentEtag } : {}) };
      this.discovery = {
        core: core.list,
        groups: groups.list,
        ...(openapi ? { openapi: openapi.index } : {}),
        ...(dropped.length > 0 ? { dropped } : {}),
        ...(etags.core || etags.groups ? { etags } : {}),
      };
    }
    const wasReachable = this.reachable;
    // A restart (at another version, maybe) always changes something above: read /version again then only.
    let versionChanged = false;
    if (changed || readinessChanged || wasReachable !== true || this.version === undefined) {
      const version = await this.fetchVersion(controller.signal);
      if (this.stopped) return;
      versionChanged = version !== undefined && version !== this.version;
      if (version !== undefined) this.version = version;
    }
    this.reachable = true;
    if (wasReachable === false) this.logger.info('discovery fetch recovered: apiserver reachable again');
    else if (wasReachable === undefined) this.logger.debug('discovery fetched');
    if (readinessChanged) this.logger.info({ ready }, ready ? 'apiserver ready' : 'apiserver not ready (starting, or in its shutdown delay)');
    if (changed || readinessChanged || versionChanged || wasReachable !== true || this.documentsRead !== wasDocumentsRead) this.emit();
  }

  /**
   * The state of one path after an answered request: the new document, or
   * after a status error or an unreadable body the last good one (maybe
   * none). Reports, once per change, what failed or was dropped.
   */
  private settleDocument(
    path: string,
    result: PromiseSettledResult<DiscoveryDocumentState>,
    previous: DiscoveryDocumentState | undefined,
  ): DiscoveryDocumentState | undefined {
    if (result.status === 'rejected') {
      this.problems.documentFailed(path, result.reason, previous !== undefined);
      return previous;
    }
    this.problems.documentRead(path);
    if (result.value !== previous) this.problems.dropped(path, result.value.dropped);
    return result.value;
  }

  /** The index (`this.openapi` itself when unchanged), or the last good one (maybe none) when this read failed. */
  private async fetchOpenApiIndex(signal: AbortSignal): Promise<OpenApiIndexState | undefined> {
    const previous = this.openapi;
    try {
      const state = await readOpenApiIndex(this.transport, previous, signal);
      this.problems.openApiIndexRead();
      return state;
    } catch (err) {
      // Aborted with its sibling discovery requests: that failure is the one to report.
      if (signal.aborted || this.stopped) return previous;
      this.problems.openApiIndexFailed(err, previous !== undefined);
      return previous;
    }
  }

  /** /readyz answered 200; a failure to ask keeps the last answer (reachability is discovery's to judge). */
  private async fetchReady(signal: AbortSignal): Promise<boolean | undefined> {
    let status: number;
    try {
      status = (await this.transport.get(READYZ_PATH, { Accept: 'text/plain' }, signal)).status;
    } catch (err) {
      if (err instanceof HttpTransportError && err.kind === 'too_large' && !signal.aborted && !this.readyzTooLarge) {
        this.readyzTooLarge = true;
        this.problems.countSyncError(new DiscoverySyncError('too_large', err.message));
        this.logger.warn(
          { path: READYZ_PATH, errorType: 'too_large', err: err.message, keepingLastAnswer: this.ready ?? null },
          '/readyz body over the size limit refused; keeping the last readiness (the apiserver answered: it stays reachable)',
        );
      }
      return this.ready;
    }
    if (this.readyzTooLarge) {
      this.readyzTooLarge = false;
      this.logger.info({ path: READYZ_PATH }, '/readyz readable again');
    }
    return status === 200;
  }

  /** /version's gitVersion, or undefined when it could not be read (the version is only shown, never routed on). */
  private async fetchVersion(signal: AbortSignal): Promise<string | undefined> {
    try {
      const response = await this.transport.get(VERSION_PATH, { Accept: 'application/json' }, signal);
      if (response.status !== 200) return undefined;
      const parsed: unknown = JSON.parse(response.body);
      const version = typeof parsed === 'object' && parsed !== null && 'gitVersion' in parsed ? parsed.gitVersion : undefined;
      return typeof version === 'string' && version.length <= MAX_VERSION_LENGTH ? version : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * A connection, TLS or timeout failure: the apiserver is unreachable (its
   * last good discovery is kept), unless it is a timeout of a reachable
   * apiserver not yet repeated TIMEOUTS_BEFORE_UNREACHABLE times in a row.
   */
  private recordUnreachable(err: unknown): void {
    const type = this.problems.countSyncError(err);
    if (type === 'timeout' && this.reachable === true && ++this.timeoutsInARow < TIMEOUTS_BEFORE_UNREACHABLE) {
      this.logger.debug({ err: errorMessage(err), timeoutsInARow: this.timeoutsInARow }, 'discovery poll timed out; still counted reachable');
      return;
    }
    this.timeoutsInARow = 0;
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

  private update(): DiscoveryUpdate {
    const update: DiscoveryUpdate = { reachable: this.reachable === true, current: this.reachable === true && this.documentsRead };
    if (this.ready !== undefined) update.ready = this.ready;
    if (this.version !== undefined) update.version = this.version;
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
