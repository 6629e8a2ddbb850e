// Group-versions every apiserver serves from shared state (docs/request-rules.md, shared-state-local):
// each served version of a CustomResourceDefinition, and each APIService with
// a service (aggregated). They are never proxied to a peer. One that
// disappears stays listed with `excludedUntil` for a grace period, so a peer's
// stale discovery cannot bring it back meanwhile (upstream: 5 minutes).
import type { Logger } from '../util/log.js';
import type { LocalOnlyGroupVersion } from '../model/cluster.js';
import { Reflector, type ListWatchClient } from './listWatch.js';
import { systemClock, systemTimers, type Clock, type TimerHandle, type Timers } from './runtime.js';
import { isRecord } from '../util/json.js';

export const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
export const APISERVICE_PATH = '/apis/apiregistration.k8s.io/v1/apiservices';

/** The fields of an apiextensions.k8s.io/v1 CustomResourceDefinition this watcher reads. */
export interface CrdGroupVersions {
  group: string;
  /** Names of the served versions. */
  servedVersions: string[];
}

/** The fields of an apiregistration.k8s.io/v1 APIService with spec.service set. */
export interface AggregatedApiService {
  group: string;
  version: string;
}

export interface LocalOnlyWatcherOptions {
  client: ListWatchClient;
  onChange: (groupVersions: LocalOnlyGroupVersion[]) => void;
  logger: Logger;
  clock?: Clock;
  timers?: Timers;
  /** How long a group-version stays excluded after its CRD or APIService went away (the serve config's localOnlyGraceSeconds). */
  localOnlyGraceMs: number;
}

type Source = LocalOnlyGroupVersion['source'];

export class LocalOnlyWatcher {
  private readonly crds: Reflector<CrdGroupVersions>;
  private readonly apiServices: Reflector<AggregatedApiService>;
  private readonly onChange: (groupVersions: LocalOnlyGroupVersion[]) => void;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly localOnlyGraceMs: number;
  private crdStore: ReadonlyMap<string, CrdGroupVersions> = new Map();
  private apiServiceStore: ReadonlyMap<string, AggregatedApiService> = new Map();
  /** Keyed by source/group/version. */
  private active = new Map<string, LocalOnlyGroupVersion>();
  private excluded = new Map<string, LocalOnlyGroupVersion & { excludedUntil: number }>();
  private lastEmitted = '[]';
  private current: LocalOnlyGroupVersion[] = [];
  private dropTimer: TimerHandle | undefined;
  private stopped = false;

  constructor(options: LocalOnlyWatcherOptions) {
    this.onChange = options.onChange;
    this.logger = options.logger;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.localOnlyGraceMs = options.localOnlyGraceMs;
    const common = { client: options.client, logger: options.logger, clock: this.clock, timers: this.timers };
    this.crds = new Reflector<CrdGroupVersions>({
      ...common,
      name: 'customresourcedefinitions',
      path: CRD_PATH,
      decode: decodeCrd,
      onChange: (store) => {
        this.crdStore = store;
        this.reconcile();
      },
    });
    this.apiServices = new Reflector<AggregatedApiService>({
      ...common,
      name: 'apiservices',
      path: APISERVICE_PATH,
      decode: decodeAggregatedApiService,
      onChange: (store) => {
        this.apiServiceStore = store;
        this.reconcile();
      },
    });
  }

  /** Resolves once both first list attempts finished. */
  async start(): Promise<void> {
    await Promise.all([this.crds.start(), this.apiServices.start()]);
  }

  stop(): void {
    this.stopped = true;
    this.crds.stop();
    this.apiServices.stop();
    this.clearDropTimer();
  }

  /** Current list, sorted by group, version, source. */
  groupVersions(): LocalOnlyGroupVersion[] {
    return this.current.map((gv) => ({ ...gv }));
  }

  private reconcile(): void {
    if (this.stopped) return;
    const now = this.clock();
    const present = new Map<string, LocalOnlyGroupVersion>();
    const add = (source: Source, group: string, version: string): void => {
      present.set(keyOf(source, group, version), { group, version, source });
    };
    for (const crd of this.crdStore.values()) for (const version of crd.servedVersions) add('CustomResourceDefinition', crd.group, version);
    for (const svc of this.apiServiceStore.values()) add('APIService', svc.group, svc.version);

    for (const [key, gv] of present) {
      this.active.set(key, gv);
      this.excluded.delete(key);
    }
    for (const [key, gv] of this.active) {
      if (present.has(key)) continue;
      this.active.delete(key);
      this.excluded.set(key, { ...gv, excludedUntil: now + this.localOnlyGraceMs });
      this.logger.info({ group: gv.group, version: gv.version, source: gv.source }, 'local-only group-version removed; excluded for the grace period');
    }
    for (const [key, gv] of this.excluded) {
      if (gv.excludedUntil <= now) this.excluded.delete(key);
    }

    this.scheduleDrop(now);
    const list = [...this.active.values(), ...this.excluded.values()].sort(compareGroupVersions);
    const serialized = JSON.stringify(list);
    if (serialized === this.lastEmitted) return;
    this.lastEmitted = serialized;
    this.current = list;
    try {
      this.onChange(this.groupVersions());
    } catch (err) {
      this.logger.error({ err: err instanceof Error ? err.message : String(err) }, 'local-only listener threw');
    }
  }

  /** Wake up when the earliest exclusion ends, to drop it. */
  private scheduleDrop(now: number): void {
    this.clearDropTimer();
    let earliest = Number.POSITIVE_INFINITY;
    for (const gv of this.excluded.values()) earliest = Math.min(earliest, gv.excludedUntil);
    if (earliest === Number.POSITIVE_INFINITY) return;
    this.dropTimer = this.timers.setTimeout(
      () => {
        this.dropTimer = undefined;
        this.reconcile();
      },
      Math.max(0, earliest - now),
    );
  }

  private clearDropTimer(): void {
    if (this.dropTimer !== undefined) this.timers.clearTimeout(this.dropTimer);
    this.dropTimer = undefined;
  }
}

function keyOf(source: Source, group: string, version: string): string {
  return `${source}/${group}/${version}`;
}

function compareGroupVersions(a: LocalOnlyGroupVersion, b: LocalOnlyGroupVersion): number {
  const cmp = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0);
  return cmp(a.group, b.group) || cmp(a.version, b.version) || cmp(a.source, b.source);
}

function decodeCrd(raw: unknown): CrdGroupVersions | undefined {
  if (!isRecord(raw) || !isRecord(raw['spec'])) return undefined;
  const spec = raw['spec'];
  if (typeof spec['group'] !== 'string' || spec['group'] === '' || !Array.isArray(spec['versions'])) return undefined;
  const servedVersions: string[] = [];
  for (const v of spec['versions']) {
    if (isRecord(v) && typeof v['name'] === 'string' && v['served'] === true) servedVersions.push(v['name']);
  }
  return { group: spec['group'], servedVersions: servedVersions.sort() };
}

/** Undefined for local APIServices (no spec.service: built-in groups served by the apiserver itself). */
function decodeAggregatedApiService(raw: unknown): AggregatedApiService | undefined {
  if (!isRecord(raw) || !isRecord(raw['spec'])) return undefined;
  const spec = raw['spec'];
  if (!isRecord(spec['service'])) return undefined;
  if (typeof spec['group'] !== 'string' || typeof spec['version'] !== 'string' || spec['version'] === '') return undefined;
  return { group: spec['group'], version: spec['version'] };
}
