// Composes the sources into one ClusterModel: per configured apiserver its
// discovery (polled), its identity lease (watched), plus the local-only
// group-versions. Apiservers and their addresses come only from the
// operator's configuration, never from the REST API (leases, Endpoints...):
// anyone who can write those could otherwise point mvproxy at an arbitrary
// address (SSRF; docs/operating.md, "Where peers are"). Leases are only matched to
// configured apiservers by hostname.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../util/log.js';
import type { Metrics } from '../metrics.js';
import type { ApiserverEndpoint, ApiserverObservation, ClusterModel, LocalOnlyGroupVersion } from '../model/cluster.js';
import { departedGraceEndsAt } from '../model/liveness.js';
import { servedSetFromDiscovery } from '../model/servedSet.js';
import { createApiserverHttpsTransport } from './apiserverHttp.js';
import { DiscoveryFetcher, type DiscoveryUpdate } from './discoveryFetcher.js';
import { LeaseWatcher, type LeaseEvent } from './leaseWatcher.js';
import { createKubeListWatchClient, type ListWatchClient } from './listWatch.js';
import { LocalOnlyWatcher } from './localOnlyWatcher.js';
import { errorMessage, systemClock, systemTimers, type Clock, type TimerHandle, type Timers } from './runtime.js';

export interface DiscoverySource {
  /** Resolves after the first attempt. */
  start(): Promise<void>;
  stop(): void;
  refreshNow(): Promise<void>;
}

export interface WatchSource {
  /** Resolves after the first list attempt. */
  start(): Promise<void>;
  stop(): void;
}

/** How the observer builds its sources; every one is replaceable (tests, alternative transports). */
export interface ClusterObserverSources {
  discovery(endpoint: ApiserverEndpoint, onUpdate: (update: DiscoveryUpdate) => void): DiscoverySource;
  leases(onEvent: (event: LeaseEvent) => void): WatchSource;
  localOnly(onChange: (groupVersions: LocalOnlyGroupVersion[]) => void): WatchSource;
}

export interface ClusterObserverOptions {
  /** CA and client credentials for every apiserver; its current cluster's server is used for watches. */
  kubeConfig: KubeConfig;
  /** The apiservers, from the operator's configuration. Order is kept in the model. */
  endpoints: ApiserverEndpoint[];
  logger: Logger;
  metrics: Metrics;
  clock?: Clock;
  timers?: Timers;
  /** How often each apiserver's discovery is read (the serve config's discoveryPollMillis). */
  discoveryPollMs: number;
  /** Discovery request deadline (default 2000 ms). */
  discoveryTimeoutMs?: number;
  /** Larger discovery, OpenAPI index and /readyz bodies are refused, that document only. */
  discoveryMaxBodyBytes: number;
  /** Name to verify apiserver serving certificates against; default: kubeconfig tls-server-name, else the address. */
  tlsServerName?: string;
  /** The departed grace (liveness.ts): the observer wakes its listeners when it ends. */
  departedGraceMs: number;
  /** A deleted CRD/APIService group-version stays local-only this long. */
  localOnlyGraceMs: number;
  /** Listener notifications are coalesced over this window (default 50 ms). */
  debounceMs?: number;
  sources?: Partial<ClusterObserverSources>;
}

export type ClusterModelListener = (model: ClusterModel) => void;

const DEFAULT_DEBOUNCE_MS = 50;

/** The observer's own, mutable copy of each apiserver's observation. */
type ApiserverState = ApiserverObservation;

export class ClusterObserver {
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly departedGraceMs: number;
  private readonly debounceMs: number;
  private readonly states: ApiserverState[];
  private readonly byHostname = new Map<string, ApiserverState>();
  private readonly fetchers = new Map<string, DiscoverySource>();
  private readonly leaseSource: WatchSource;
  private readonly localOnlySource: WatchSource;
  private readonly listeners = new Set<ClusterModelListener>();
  private readonly unknownHostnames = new Set<string>();
  private localOnly: LocalOnlyGroupVersion[] = [];
  private debounceTimer: TimerHandle | undefined;
  private graceTimer: TimerHandle | undefined;
  private started = false;
  /** Until every source made its first attempt, changes are held back so the first plan sees a complete model. */
  private initialAttemptsDone = false;
  private changedDuringStart = false;
  private stopped = false;

  constructor(options: ClusterObserverOptions) {
    validateEndpoints(options.endpoints);
    this.logger = options.logger;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.departedGraceMs = options.departedGraceMs;
    this.debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
    const sources = { ...defaultSources(options, this.clock, this.timers), ...options.sources };

    this.states = options.endpoints.map((endpoint) => ({ endpoint: { ...endpoint, address: { ...endpoint.address } }, servedSet: [], reachable: false }));
    for (const state of this.states) {
      this.byHostname.set(state.endpoint.hostname, state);
      this.fetchers.set(
        state.endpoint.name,
        sources.discovery(state.endpoint, (update) => this.onDiscovery(state, update)),
      );
    }
    this.leaseSource = sources.leases((event) => this.onLease(event));
    this.localOnlySource = sources.localOnly((groupVersions) => this.onLocalOnly(groupVersions));
  }

  /**
   * Start every source; resolves when each made its first attempt (the model
   * is then as complete as it can be). Listeners hear nothing before that.
   */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await Promise.all([this.leaseSource.start(), this.localOnlySource.start(), ...[...this.fetchers.values()].map((f) => f.start())]);
    this.initialAttemptsDone = true;
    if (this.changedDuringStart) this.notify();
  }

  /** Stop every watch, poll, timer and connection. Idempotent. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.leaseSource.stop();
    this.localOnlySource.stop();
    for (const fetcher of this.fetchers.values()) fetcher.stop();
    if (this.debounceTimer !== undefined) this.timers.clearTimeout(this.debounceTimer);
    if (this.graceTimer !== undefined) this.timers.clearTimeout(this.graceTimer);
    this.debounceTimer = undefined;
    this.graceTimer = undefined;
  }

  /**
   * Called (debounced) with a fresh snapshot after the model changed. Lease
   * renewals alone do not count as a change. Returns an unsubscribe function.
   */
  onChange(listener: ClusterModelListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * The current model as plain data. Arrays and records are fresh copies; the
   * discovery documents are shared (they are replaced, never mutated) and must
   * be treated as read-only.
   */
  snapshot(): ClusterModel {
    const now = this.clock();
    // Whether a departed apiserver still counts is the liveness model's call (peerStanding), not ours.
    const apiservers = this.states.map((s): ApiserverObservation => {
      const observation: ApiserverObservation = {
        endpoint: { ...s.endpoint, address: { ...s.endpoint.address } },
        servedSet: s.servedSet.map((r) => ({ ...r, verbs: [...r.verbs], subresources: [...r.subresources] })),
        reachable: s.reachable,
      };
      if (s.lease) observation.lease = { ...s.lease };
      if (s.leaseGoneAt !== undefined) observation.leaseGoneAt = s.leaseGoneAt;
      if (s.discoveryCurrentSince !== undefined) observation.discoveryCurrentSince = s.discoveryCurrentSince;
      if (s.discovery) observation.discovery = s.discovery;
      if (s.discoveryEtag !== undefined) observation.discoveryEtag = s.discoveryEtag;
      if (s.ready !== undefined) observation.ready = s.ready;
      if (s.version !== undefined) observation.version = s.version;
      return observation;
    });
    const localOnly = this.localOnly.filter((gv) => gv.excludedUntil === undefined || gv.excludedUntil > now).map((gv) => ({ ...gv }));
    return { now, apiservers, localOnly };
  }

  private onDiscovery(state: ApiserverState, update: DiscoveryUpdate): void {
    if (this.stopped) return;
    if (update.discovery !== state.discovery) {
      state.servedSet = update.discovery ? servedSetFromDiscovery(update.discovery) : [];
      if (update.discovery) state.discovery = update.discovery;
      else delete state.discovery;
    }
    if (update.etag !== undefined) state.discoveryEtag = update.etag;
    else delete state.discoveryEtag;
    if (!update.current) delete state.discoveryCurrentSince;
    else if (state.discoveryCurrentSince === undefined) state.discoveryCurrentSince = this.clock();
    state.reachable = update.reachable;
    if (update.ready !== undefined) state.ready = update.ready;
    else delete state.ready;
    if (update.version !== undefined) state.version = update.version;
    this.notify();
  }

  private onLease(event: LeaseEvent): void {
    if (this.stopped) return;
    const state = this.byHostname.get(event.hostname);
    if (!state) {
      if (!this.unknownHostnames.has(event.hostname)) {
        this.unknownHostnames.add(event.hostname);
        this.logger.info({ leaseHostname: event.hostname }, 'identity lease of an apiserver not in the configuration; ignored');
      }
      return;
    }
    const fetcher = this.fetchers.get(state.endpoint.name);
    if (event.type === 'present') {
      const previous = state.lease;
      const wasGone = state.leaseGoneAt !== undefined;
      state.lease = { ...event.lease };
      delete state.leaseGoneAt;
      const restarted = previous !== undefined && (previous.holderIdentity !== event.lease.holderIdentity || previous.name !== event.lease.name);
      if (restarted || wasGone || (previous === undefined && !state.reachable)) {
        // A restarted or returning apiserver may serve a different set (its upgrade): look now, not at the next poll.
        void fetcher?.refreshNow();
      }
      if (previous === undefined || restarted || wasGone) {
        this.scheduleGraceWakeup();
        this.notify();
      }
      return;
    }
    delete state.lease;
    state.leaseGoneAt = event.goneAt;
    void fetcher?.refreshNow();
    this.scheduleGraceWakeup();
    this.notify();
  }

  private onLocalOnly(groupVersions: LocalOnlyGroupVersion[]): void {
    if (this.stopped) return;
    this.localOnly = groupVersions.map((gv) => ({ ...gv }));
    this.notify();
  }

  /** Wake listeners when the earliest departed grace ends (the apiserver stops counting then: a new plan). */
  private scheduleGraceWakeup(): void {
    if (this.graceTimer !== undefined) this.timers.clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
    const now = this.clock();
    let earliest = Number.POSITIVE_INFINITY;
    for (const s of this.states) {
      if (s.leaseGoneAt === undefined) continue;
      const dropAt = departedGraceEndsAt(s.leaseGoneAt, this.departedGraceMs);
      if (dropAt > now) earliest = Math.min(earliest, dropAt);
    }
    if (earliest === Number.POSITIVE_INFINITY || this.stopped) return;
    this.graceTimer = this.timers.setTimeout(() => {
      this.graceTimer = undefined;
      this.logger.info('departed grace ended for an apiserver whose lease is gone: it no longer counts');
      this.notify();
      this.scheduleGraceWakeup();
    }, earliest - now);
  }

  /** Coalesce a burst of events into one notification, at most debounceMs after the first. */
  private notify(): void {
    if (!this.initialAttemptsDone) {
      this.changedDuringStart = true;
      return;
    }
    if (this.stopped || this.debounceTimer !== undefined) return;
    this.debounceTimer = this.timers.setTimeout(() => {
      this.debounceTimer = undefined;
      if (this.stopped) return;
      const model = this.snapshot();
      for (const listener of [...this.listeners]) {
        try {
          listener(model);
        } catch (err) {
          this.logger.error({ err: errorMessage(err) }, 'cluster model listener threw');
        }
      }
    }, this.debounceMs);
  }
}

function defaultSources(options: ClusterObserverOptions, clock: Clock, timers: Timers): ClusterObserverSources {
  let listWatch: ListWatchClient | undefined;
  const listWatchClient = (): ListWatchClient => (listWatch ??= createKubeListWatchClient(options.kubeConfig));
  return {
    discovery: (endpoint, onUpdate) =>
      new DiscoveryFetcher({
        endpoint,
        transport: createApiserverHttpsTransport(options.kubeConfig, endpoint.address, {
          ...(options.discoveryTimeoutMs !== undefined ? { timeoutMs: options.discoveryTimeoutMs } : {}),
          maxBodyBytes: options.discoveryMaxBodyBytes,
          ...(options.tlsServerName !== undefined ? { tlsServerName: options.tlsServerName } : {}),
        }),
        onUpdate,
        logger: options.logger,
        metrics: options.metrics,
        timers,
        discoveryPollMs: options.discoveryPollMs,
      }),
    leases: (onEvent) => new LeaseWatcher({ client: listWatchClient(), onEvent, logger: options.logger, clock, timers }),
    localOnly: (onChange) =>
      new LocalOnlyWatcher({
        client: listWatchClient(),
        onChange,
        logger: options.logger,
        clock,
        timers,
        localOnlyGraceMs: options.localOnlyGraceMs,
      }),
  };
}

function validateEndpoints(endpoints: ApiserverEndpoint[]): void {
  const names = new Set<string>();
  const hostnames = new Set<string>();
  for (const ep of endpoints) {
    if (!ep.name) throw new Error('apiserver endpoint without a name');
    if (names.has(ep.name)) throw new Error(`duplicate apiserver name ${JSON.stringify(ep.name)}`);
    if (!ep.hostname) throw new Error(`apiserver ${ep.name}: hostname (its identity lease's kubernetes.io/hostname) is required`);
    if (hostnames.has(ep.hostname)) throw new Error(`apiservers share hostname ${JSON.stringify(ep.hostname)}: leases could not tell them apart`);
    if (!ep.address.host) throw new Error(`apiserver ${ep.name}: address host is required`);
    if (!Number.isInteger(ep.address.port) || ep.address.port < 1 || ep.address.port > 65535) {
      throw new Error(`apiserver ${ep.name}: invalid port ${ep.address.port}`);
    }
    names.add(ep.name);
    hostnames.add(ep.hostname);
  }
}
