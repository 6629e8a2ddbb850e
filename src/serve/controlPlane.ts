// The running control plane, a thin runner: it wires the sources (the cluster
// observer and the drain and sync records, made in sources.ts) to the servers
// (ADS, ext_proc, access log, admin; the xDS listeners are bound in
// listen.ts) and, whenever the observed model or the drains change, runs the
// pure reconcile step (reconcile.ts) and hands its results to ADS and to the
// ext_proc responder (merged documents over the push budget).
import type * as grpc from '@grpc/grpc-js';
import type { Server as HttpServer } from 'node:http';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../util/log.js';
import type { ServeConfig } from './config.js';
import { unobservedModel, type ApiserverEndpoint, type ClusterModel } from '../model/cluster.js';
import { type Metrics, metricsText, recordReadiness, xdsMetricHooks } from '../metrics.js';
import type { ClusterObserver } from '../sources/clusterObserver.js';
import type { DrainWatcher, DrainWriter } from '../sources/drainRecord.js';
import type { ReplicaSyncRecord } from './syncReporter.js';
import { makeSources, type ControlPlaneSources } from './sources.js';
import type { Clock } from '../sources/runtime.js';
import type { SidecarPlan } from '../planner/plan.js';
import { snapshotVersions, type ResourceTypeUrl } from '../xds/snapshot.js';
import { sidecarConfig } from '../servers/adminConfig.js';
import type { SidecarConfig } from '../generated/mvproxy/admin/v1/SidecarConfig.js';
import { readFilterModules, type FilterModules } from '../xds/filterModule.js';
import { AdsServer } from '../servers/ads.js';
import { SnapshotStore } from '../servers/snapshotStore.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../servers/grpcListen.js';
import { listenXds } from './listen.js';
import { ExtProcServer, type DiscoveryAnswer, type DiscoveryRequest, type LocalAnswer } from '../servers/extProc.js';
import { AccessLogServer } from '../servers/accessLog.js';
import { startAdminHttp, statusDump, stopAdminHttp, type AdminHttpRoutes } from '../servers/adminHttp.js';
import { HealthImplementation } from 'grpc-health-check';
import { addAdminService, adminStatus, NotPlannedYetError, UnknownApiserverError, type AdminBackend, type AdminStatus } from '../servers/admin.js';
import { explainRequest, type RequestExplanation } from '../planner/explain.js';
import { alignWarmModel, readWarmStart, WarmStartKeeper } from './warmStart.js';
import { discoveryResponse } from '../discovery/index.js';
import { documentSetDigest } from '../xds/documentSet.js';
import { peerParts } from '../discovery/peerPart.js';
import { reconcile, reconcileSettings, type Reconciled, type ReconcileSettings } from './reconcile.js';
import { CertificateFiles } from '../sources/certificateFiles.js';
import { LatestThrottle } from './throttle.js';
import { ControlPlaneJournal } from './events.js';
import type { JournalEntry } from '../model/events.js';
import { statusPageData, type StatusPageData } from '../servers/statusPage.js';

export interface ControlPlaneDeps {
  logger: Logger;
  metrics: Metrics;
  /** Defaults to loading config.kubeconfig. */
  kubeConfig?: KubeConfig;
  /** Defaults to the modules `npm run build` compiled (dist/envoy/identity.wasm, dist/envoy/documents.wasm). */
  filterModules?: FilterModules;
  /** Epoch milliseconds for the observer's model and NACK times; defaults to the system clock. */
  clock?: Clock;
}

export class ControlPlane implements AdminBackend {
  readonly ads: AdsServer;
  readonly extProc: ExtProcServer;
  readonly accessLog: AccessLogServer;
  /** Made in start(), once the sidecars can connect (the Kubernetes client takes long to load). */
  private observer?: ClusterObserver;
  private drainWatcher?: DrainWatcher;
  /** What this replica's sidecars ACKed, for the others, and what theirs did (syncReporter.ts). */
  private syncRecord?: ReplicaSyncRecord;
  /** The `kubernetes` Service's publisher, when the config turns it on. */
  private publisher?: ControlPlaneSources['publisher'];
  private readonly grpcServer: grpc.Server;
  private readonly health: HealthImplementation;
  private adminServer?: HttpServer;
  /** Recent events (what changed and why), for `admin events` and the status page. */
  private readonly journal: ControlPlaneJournal;
  /** The operator API, on its own socket: being able to reach xDS must not mean being able to drain. */
  private adminGrpcServer?: grpc.Server;
  /** Apiservers an operator is draining: the drain record in the Kubernetes API (drainRecord.ts), as last read or written. */
  private draining: ReadonlySet<string> = new Set<string>();
  /** Writes the drain record; made with the sources, in start(). */
  private drainWriter?: DrainWriter;
  /** The last reconcile: plans, and each sidecar's snapshot and merged discovery (documents rendered lazily and memoized). */
  private reconciled?: Reconciled;
  private lastModel?: ClusterModel;
  /** Translator settings per sidecar and the departed grace, from the config and the client CA bundle's digest. */
  private settings: ReconcileSettings;
  /** The sidecars' certificate files on this host: rotation (certificateFiles.ts). */
  private readonly certificateFiles: CertificateFiles;
  private readonly filterModules: FilterModules;
  /** Reconciles the models the observer reports, at most every 100 ms (throttle.ts). */
  private readonly reconciles = new LatestThrottle<ClusterModel>((model) => this.update(model), 100);
  /** Writes warmStartFile, when set. */
  private readonly warmStartKeeper?: WarmStartKeeper;

  constructor(
    private readonly config: ServeConfig,
    private readonly deps: ControlPlaneDeps,
  ) {
    this.filterModules = deps.filterModules ?? readFilterModules();
    const { tls } = config;
    this.certificateFiles = new CertificateFiles({
      files: [
        tls.clientCa,
        tls.frontProxyClientCert,
        tls.frontProxyClientKey,
        tls.peerCa,
        ...config.apiservers.flatMap((a) => [a.sidecar.servingCert, a.sidecar.servingKey]),
      ],
      clientCa: tls.clientCa,
      certificatePollMs: config.certificatePollMs,
      onClientCaChange: () => this.clientCaChanged(),
      logger: deps.logger.child({ component: 'certificates' }),
    });
    this.settings = reconcileSettings(config, this.filterModules, this.certificateFiles.clientCaSha256);
    this.ads = new AdsServer(
      { current: new SnapshotStore(), startup: new SnapshotStore() },
      {
        logger: deps.logger.child({ component: 'ads' }),
        metrics: xdsMetricHooks(deps.metrics),
        ...(deps.clock ? { now: deps.clock } : {}),
        // A warm start's snapshots go only to sidecars that hold nothing until the first read of the cluster (markSynced).
        awaitSync: true,
      },
    );
    this.grpcServer = createGrpcServer();
    this.ads.addToServer(this.grpcServer);
    // ext_proc (merged documents over the push budget only): same gRPC server, socket and mTLS as ADS.
    this.extProc = new ExtProcServer({
      logger: deps.logger,
      metrics: deps.metrics,
      discovery: (node, request, local) => this.answerDiscovery(node, request, local),
    });
    this.extProc.addToServer(this.grpcServer);
    // Access log of rerouted and unavailable-route requests: the upstream MVP counters.
    this.accessLog = new AccessLogServer({ logger: deps.logger, metrics: deps.metrics });
    this.accessLog.addToServer(this.grpcServer);
    // Sidecars with failover replicas health-check each one (gRPC health): a
    // replica serves from the moment its listeners are up, warm or cold.
    this.health = new HealthImplementation({ '': 'NOT_SERVING' });
    this.health.addToServer(this.grpcServer);
    this.journal = new ControlPlaneJournal(deps.clock ?? Date.now);
    if (config.warmStartFile) {
      const current = () => (this.lastModel ? { model: this.lastModel, draining: [...this.draining].sort() } : undefined);
      this.warmStartKeeper = new WarmStartKeeper({ file: config.warmStartFile, current, logger: deps.logger });
    }
    this.journal.attach(this.ads);
  }

  /** The sources (sources.ts), started; made only now, after the xDS listeners are bound. */
  private async startObserver(): Promise<ClusterObserver> {
    const { config, deps } = this;
    const sources = await makeSources({
      config,
      deps,
      ads: this.ads,
      endpoints: this.declaredEndpoints(),
      onModel: (model) => this.reconciles.offer(model),
      onDrains: (names, notes) => this.drainsObserved(names, notes),
      onEvents: (events) => this.journal.journal.record(events),
    });
    const { observer } = sources;
    this.observer = observer;
    this.drainWriter = sources.drainWriter;
    this.drainWatcher = sources.drainWatcher;
    this.syncRecord = sources.syncRecord;
    this.syncRecord.start();
    this.publisher = sources.publisher;
    this.publisher?.start();
    await Promise.all([observer.start(), this.drainWatcher.start()]);
    return observer;
  }

  private declaredEndpoints(): ApiserverEndpoint[] {
    return this.config.apiservers.map(({ name, hostname, address }) => ({ name, hostname, address: { ...address } }));
  }

  async start(): Promise<{ xds: string[]; admin?: string; adminSocket?: string }> {
    for (const a of this.config.apiservers) this.deps.metrics.apiserverDraining.set({ apiserver: a.name }, 0);
    // Before any sidecar can connect: what it gets until this replica has synced.
    this.serveBeforeSync();
    this.certificateFiles.start();
    const xds = await listenXds(this.grpcServer, this.config.xds);
    this.health.setStatus('', 'SERVING');
    let admin: string | undefined;
    if (this.config.admin?.listen) {
      const routes: AdminHttpRoutes = {
        metrics: async () => ({ type: this.deps.metrics.registry.contentType, body: await metricsText(this.deps.metrics, this.status().sidecars ?? []) }),
        status: () => statusDump(this.statusInput()),
        page: () => this.statusPage(),
        ready: () => this.publisher?.publisher.readiness() ?? { ready: true, why: 'ok' },
      };
      const started = await startAdminHttp(this.config.admin.listen.host, this.config.admin.listen.port, routes);
      this.adminServer = started.server;
      admin = started.url;
    }
    let adminSocket: string | undefined;
    if (this.config.admin?.socket) {
      this.adminGrpcServer = createGrpcServer();
      addAdminService(this.adminGrpcServer, this, this.deps.logger.child({ component: 'admin' }));
      // Whoever can open the socket can drain apiservers: owner only, from the moment it exists.
      adminSocket = await listenUnix(this.adminGrpcServer, this.config.admin.socket, 0o600);
    }
    const observer = await this.startObserver();
    this.reconciles.supersede(); // the observer's own state is newer than any model it offered
    this.update(observer.snapshot());
    this.ads.markSynced();
    return { xds, ...(admin ? { admin } : {}), ...(adminSocket ? { adminSocket } : {}) };
  }

  /** Every plan of the last reconcile (none before the first). */
  private get plans(): SidecarPlan[] {
    return this.reconciled?.plans ?? [];
  }

  /**
   * Startup snapshots (every request to the sidecar's own apiserver) for
   * sidecars that run nothing yet, and the model kept in warmStartFile, if
   * any, as the current state (warmStart.ts says why both).
   */
  private serveBeforeSync(): void {
    const kept = this.config.warmStartFile ? readWarmStart(this.config.warmStartFile) : { absent: true as const };
    // The kept drains apply to the startup plans too: a drained apiserver stays drained through a restart.
    if ('model' in kept) this.draining = new Set(kept.draining.filter((n) => this.apiserverNames().includes(n)));
    this.setStartupSnapshots();
    const file = this.config.warmStartFile;
    if ('unusable' in kept) {
      this.deps.logger.warn({ warmStartFile: file, problem: kept.unusable }, 'warm-start file unusable: starting from nothing known');
    } else if ('model' in kept) {
      this.update(alignWarmModel(kept.model, this.config.apiservers), { persist: false });
      this.deps.logger.info(
        { warmStartFile: file, savedAt: new Date(kept.savedAt).toISOString(), draining: [...this.draining] },
        'serving the last kept state until synced',
      );
    }
  }

  private setStartupSnapshots(): void {
    const unknown = reconcile(unobservedModel(this.declaredEndpoints(), (this.deps.clock ?? Date.now)()), this.draining, this.settings);
    for (const [node, sidecar] of unknown.sidecars) this.ads.setStartupSnapshot(node, sidecar.snapshot);
  }

  /** A new client CA bundle: new listeners, so connections made under the old one drain (listener.ts). */
  private clientCaChanged(): void {
    this.settings = reconcileSettings(this.config, this.filterModules, this.certificateFiles.clientCaSha256);
    this.setStartupSnapshots();
    this.replan();
  }

  /** Plans again after this replica's own change (drains, client CA) on the newest model: the one waiting, offered once, if any. */
  private replan(): void {
    this.reconciles.runNow(this.lastModel);
  }

  /** Runs the reconcile step and hands every sidecar its snapshot; ADS pushes only what changed. */
  private update(model: ClusterModel, { persist } = { persist: true }): void {
    const changed = model !== this.lastModel;
    this.lastModel = model;
    if (persist && changed) this.warmStartKeeper?.keep();
    recordReadiness(
      this.deps.metrics,
      model.apiservers.map((a) => ({ name: a.endpoint.name, ...(a.ready === undefined ? {} : { ready: a.ready }) })),
    );
    const next = reconcile(model, this.draining, this.settings, this.reconciled);
    const planChanged: string[] = [];
    for (const [node, sidecar] of next.sidecars) {
      this.ads.setSnapshot(node, sidecar.snapshot);
      const previous = this.reconciled?.sidecars.get(node)?.plan;
      if (JSON.stringify(previous?.entries) !== JSON.stringify(sidecar.plan.entries)) {
        planChanged.push(node);
        this.deps.logger.debug({ node, entries: sidecar.plan.entries.length, versions: snapshotVersions(sidecar.snapshot) }, 'plan changed');
      }
    }
    // One line per change, however many sidecars (the first few named).
    if (planChanged.length > 0) this.deps.logger.info({ nodes: planChanged.length, first: planChanged.slice(0, 5) }, 'plans changed');
    this.reconciled = next;
    this.journal.reconciled(model, next.plans, next.standings);
  }

  /** The local apiserver's answer merged with the sidecar's peer part, or undefined to let the local answer through. */
  private answerDiscovery(node: string, request: DiscoveryRequest, local: LocalAnswer): DiscoveryAnswer | undefined {
    const merged = this.reconciled?.sidecars.get(node)?.discovery();
    if (!merged) return undefined;
    const part = peerParts(merged).find((p) => p.document === request.document);
    const answer = discoveryResponse(request, local, part, part ? documentSetDigest(part) : '');
    if ('passThrough' in answer) return undefined;
    // Upstream's cache counters are about aggregated discovery only; every ext_proc answer is merged afresh.
    if (answer.document !== 'openapi-index') this.deps.metrics.peerAggregatedCacheMisses.inc();
    return answer;
  }

  /** Admin API: the GetStatus answer. */
  status(): AdminStatus {
    return adminStatus(this.statusInput());
  }

  /** What the status page draws: the same inputs as status(), and the recent events. */
  statusPage(): StatusPageData {
    return statusPageData({ ...this.statusInput(), events: this.journal.journal.recent() });
  }

  recentEvents(limit?: number): JournalEntry[] {
    return this.journal.journal.recent(limit);
  }

  followEvents(listener: (entry: JournalEntry) => void): () => void {
    return this.journal.journal.follow(listener);
  }

  private statusInput(): Parameters<typeof adminStatus>[0] {
    return {
      model: this.lastModel ?? { now: 0, apiservers: [], localOnly: [] },
      plans: this.plans,
      ads: this.ads.status(),
      draining: this.draining,
      standings: this.reconciled?.standings ?? new Map(),
      replica: this.config.replicaName,
      reports: this.syncRecord?.reports ?? new Map(),
      ...(this.publisher ? { kubernetesService: this.publisher.publisher.status() } : {}),
    };
  }

  /** Admin API: where a request sent to this sidecar goes now, and why. */
  explain(sidecar: string, path: string, peerProxied: boolean): RequestExplanation {
    if (!this.config.apiservers.some((a) => a.name === sidecar)) throw new UnknownApiserverError(sidecar, this.apiserverNames());
    const plan = this.plans.find((p) => p.node === sidecar);
    if (!plan || !this.lastModel) throw new NotPlannedYetError();
    return explainRequest({ plan, model: this.lastModel, draining: this.draining }, path, { peerProxied });
  }

  /** Admin API: what is pushed to the sidecar. */
  pushedConfig(sidecar: string, only?: ResourceTypeUrl): SidecarConfig {
    if (!this.config.apiservers.some((a) => a.name === sidecar)) throw new UnknownApiserverError(sidecar, this.apiserverNames());
    const snapshot = this.reconciled?.sidecars.get(sidecar)?.snapshot;
    if (!snapshot) throw new NotPlannedYetError();
    return sidecarConfig(sidecar, snapshot, this.ads.status()[sidecar], only);
  }

  drain(apiserver: string): Promise<string[]> {
    return this.setDraining(apiserver, true);
  }

  undrain(apiserver: string): Promise<string[]> {
    return this.setDraining(apiserver, false);
  }

  /**
   * Writes the drain record first (every replica, this one included, follows
   * it), then applies the change here at once, so `drain --wait` on this
   * replica needs no round trip through the watch.
   */
  private async setDraining(apiserver: string, draining: boolean): Promise<string[]> {
    if (!this.config.apiservers.some((a) => a.name === apiserver)) throw new UnknownApiserverError(apiserver, this.apiserverNames());
    if (!this.drainWriter) throw new NotPlannedYetError();
    await this.drainWriter.set(apiserver, draining, `drained through mvproxy admin on ${hostname()} at ${new Date().toISOString()}`);
    const next = new Set(this.draining);
    if (draining) next.add(apiserver);
    else next.delete(apiserver);
    this.applyDrains(next, `asked through mvproxy admin on ${hostname()}`);
    return [...this.draining].sort();
  }

  /** The drain record changed (any replica, or kubectl): names not declared here are ignored, with a warning. */
  private drainsObserved(names: readonly string[], notes: Readonly<Record<string, string>>): void {
    const declared = new Set(this.apiserverNames());
    const unknown = names.filter((n) => !declared.has(n));
    if (unknown.length > 0)
      this.deps.logger.warn({ drainRecord: this.config.drainRecord, unknown }, 'the drain record names apiservers not declared here: ignored');
    this.applyDrains(
      new Set(names.filter((n) => declared.has(n))),
      `seen in the drain record ${this.config.drainRecord.namespace}/${this.config.drainRecord.name}`,
      notes,
    );
  }

  private applyDrains(next: ReadonlySet<string>, how: string, notes: Readonly<Record<string, string>> = {}): void {
    const same = next.size === this.draining.size && [...next].every((n) => this.draining.has(n));
    for (const a of this.config.apiservers) this.deps.metrics.apiserverDraining.set({ apiserver: a.name }, next.has(a.name) ? 1 : 0);
    if (same) return;
    this.deps.logger.info({ draining: [...next].sort() }, 'drains changed');
    this.journal.drains(this.draining, next, how, notes);
    this.draining = next;
    this.replan();
    this.warmStartKeeper?.keep();
  }

  private apiserverNames(): string[] {
    return this.config.apiservers.map((a) => a.name);
  }

  async stop(): Promise<void> {
    this.health.setStatus('', 'NOT_SERVING');
    this.observer?.stop();
    this.certificateFiles.stop();
    this.drainWatcher?.stop();
    this.syncRecord?.stop();
    this.publisher?.stop();
    this.warmStartKeeper?.flush();
    this.ads.closeStreams();
    await shutdownGrpcServer(this.grpcServer, 1000);
    if (this.adminGrpcServer) await shutdownGrpcServer(this.adminGrpcServer, 1000);
    if (this.adminServer) await stopAdminHttp(this.adminServer);
  }
}
