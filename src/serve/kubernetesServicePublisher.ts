// The `kubernetes` Service's endpoints, published by every replica alike
// (issue 21; docs/operating.md, "The kubernetes Service"). With the apiservers on
// `--endpoint-reconciler-type=none`, nobody else writes them: every
// PROBE_INTERVAL_MS this replica probes every sidecar and apiserver, writes
// what passed into its entry of the liveness record, merges every replica's
// entries (planner/publicationLiveness.ts), and brings the Endpoints and
// EndpointSlices to what that makes (planner/publishedEndpoints.ts): written
// only when their content differs, re-read on a conflict. Never worse than
// no proxy: a node whose sidecar is not live but whose apiserver is ready is
// listed at the apiserver; when nothing is live, or this replica's view is
// not complete, nothing is written (what is there is kept, never emptied);
// when someone else keeps rewriting the objects (an apiserver still on the
// lease reconciler) this replica stops writing and says so.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../util/log.js';
import type { ClusterEvent } from '../model/events.js';
import type { LivenessReport, PublishPlan } from '../model/publication.js';
import { KubeApiError } from '../model/status.js';
import {
  describePublication,
  desiredObjects,
  desiredPublication,
  ForeignWriteGuard,
  FOREIGN_WRITE_WINDOW_MS,
  FOREIGN_WRITES_TO_STOP,
  judgeObserved,
  publishedNow,
  SERVICE_NAME,
  SERVICE_NAMESPACE,
  type Liveness,
  type Publication,
} from '../planner/publishedEndpoints.js';
import { LivenessLedger, PROBE_INTERVAL_MS, type ProbeKind } from '../planner/publicationLiveness.js';
import type { ServiceObjectsClient } from '../sources/kubernetesServiceObjects.js';
import type { LivenessWriter } from '../sources/livenessRecord.js';
import type { ListWatchClient } from '../sources/listWatch.js';
import { errorMessage, systemTimers, type TimerHandle, type Timers } from '../sources/runtime.js';
import type { KubernetesServiceStatus } from '../generated/mvproxy/admin/v1/KubernetesServiceStatus.js';
import type { ServeConfig } from './config.js';
import type { KubernetesServiceConfig } from './configPublish.js';

export type PublisherState = 'starting' | 'publishing' | 'holding' | 'stopped' | 'failing';

export interface PublisherOptions {
  plan: PublishPlan;
  /** This replica's name: its key in the liveness record. */
  replica: string;
  /** Default: random. */
  incarnation?: string;
  /** One probe (TLS, then GET /readyz: 200) of a sidecar or of an apiserver itself; never rejects. */
  probe: (kind: ProbeKind, name: string) => Promise<boolean>;
  writeReport: LivenessWriter;
  objects: ServiceObjectsClient;
  /** Monotonic milliseconds: every expiry is judged on it. */
  monotonic: () => number;
  /** Epoch milliseconds, for events and status. */
  clock: () => number;
  logger: Logger;
  /** The journal (serve/events.ts). */
  record: (events: ClusterEvent[]) => void;
  timers?: Timers;
  intervalMs?: number;
  expiryMs?: number;
}

const SUBJECT = `${SERVICE_NAMESPACE}/${SERVICE_NAME}`;
/** Tries of one object per round when other replicas keep changing it under us (409). */
const CONFLICT_TRIES = 4;

export class KubernetesServicePublisher {
  private readonly ledger: LivenessLedger;
  private readonly guard = new ForeignWriteGuard();
  private readonly incarnation: string;
  private readonly timers: Timers;
  private readonly lastPass: Record<ProbeKind, Record<string, number>> = { sidecar: {}, apiserver: {} };
  private round = 0;
  private state: PublisherState = 'starting';
  private message = 'no probe round yet';
  private stoppedWhy?: string;
  /** Objects (kind/name) this replica has seen carrying mvproxy's content: their disappearance is someone else's doing. */
  private readonly known = new Set<string>();
  /** The Endpoints as last read or written (canonical). */
  private endpoints?: string;
  private publishedLine?: string;
  private confirmedAt?: number;
  private recordFailing = false;
  private timer?: TimerHandle;
  private running = false;

  constructor(private readonly options: PublisherOptions) {
    this.incarnation = options.incarnation ?? randomBytes(8).toString('hex');
    this.ledger = new LivenessLedger(options.replica, this.incarnation, options.expiryMs);
    this.timers = options.timers ?? systemTimers;
  }

  /** Every version of the liveness record (sources/livenessRecord.ts). */
  observeRecord(reports: ReadonlyMap<string, LivenessReport>): void {
    this.ledger.observeRecord(reports, this.options.monotonic());
  }

  /** A round now, then one every interval (start to start). */
  start(): void {
    if (this.running) return;
    this.running = true;
    const tick = async (): Promise<void> => {
      const began = this.options.monotonic();
      await this.runRound();
      if (!this.running) return;
      const interval = this.options.intervalMs ?? PROBE_INTERVAL_MS;
      this.timer = this.timers.setTimeout(() => void tick(), Math.max(0, interval - (this.options.monotonic() - began)));
    };
    void tick();
  }

  stop(): void {
    this.running = false;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
  }

  /** One round: probe, tell the others, decide, write. Never rejects. */
  async runRound(): Promise<void> {
    const { plan, monotonic } = this.options;
    const round = ++this.round;
    const probes = plan.targets.flatMap(
      (t): Array<[ProbeKind, string]> => [['sidecar', t.name], ...(t.apiserverIp ? [['apiserver', t.name] as [ProbeKind, string]] : [])],
    );
    await Promise.all(
      probes.map(async ([kind, name]) => {
        if (!(await this.options.probe(kind, name))) return;
        this.ledger.ownSuccess(kind, name, monotonic());
        this.lastPass[kind][name] = round;
      }),
    );
    await this.writeReport(round);
    const now = monotonic();
    if (this.stoppedWhy) return this.observeOnly('stopped', this.stoppedWhy);
    const view = this.ledger.viewReadiness(now);
    if (!view.ready) return this.observeOnly(this.state === 'starting' ? 'starting' : 'holding', `${view.why}: nothing is written meanwhile`);
    const publication = desiredPublication(plan, this.liveness(now));
    if (!publication) return this.observeOnly('holding', 'no replica observed any sidecar or apiserver live: what is published is kept (never emptied)');
    await this.sync(publication, now);
  }

  private liveness(now: number): Liveness {
    return this.ledger.live(
      this.options.plan.targets.map((t) => t.name),
      now,
    );
  }

  private async writeReport(round: number): Promise<void> {
    const report: LivenessReport = {
      replica: this.options.replica,
      incarnation: this.incarnation,
      round,
      sidecars: { ...this.lastPass.sidecar },
      apiservers: { ...this.lastPass.apiserver },
    };
    try {
      await this.options.writeReport(report);
      if (this.recordFailing) this.options.logger.info('liveness record written again');
      this.recordFailing = false;
    } catch (err) {
      if (!this.recordFailing)
        this.options.logger.warn({ err: errorMessage(err) }, 'could not write the liveness record: other replicas do not see what this one observes');
      this.recordFailing = true;
    }
  }

  /** Brings every object to what the publication makes, stopping when someone else keeps rewriting them. */
  private async sync(publication: Publication, now: number): Promise<void> {
    const { objects } = this.options;
    let foreignFound = false;
    try {
      for (const desired of desiredObjects(this.options.plan, publication)) {
        const id = `${desired.ref.kind}/${desired.ref.name}`;
        for (let attempt = 1; ; attempt++) {
          const observed = await objects.read(desired.ref);
          if (desired.ref.kind === 'Endpoints') this.endpoints = observed?.canonical;
          let verdict = judgeObserved(desired, observed);
          if (verdict === 'absent' && this.known.has(id)) verdict = 'foreign';
          if (verdict === 'foreign' && !foreignFound) {
            foreignFound = true;
            this.options.logger.warn({ object: id }, 'the published object was rewritten or deleted by someone else');
            if (this.guard.record(now)) return this.stopWriting(desired.ref.kind, desired.ref.name);
          }
          if (verdict === 'as-desired') {
            this.known.add(id);
            break;
          }
          try {
            if (observed)
              await objects.replace(desired.ref, { ...desired.body, metadata: { ...desired.body.metadata, resourceVersion: observed.resourceVersion } });
            else await objects.create(desired.ref, desired.body);
            this.known.add(id);
            if (desired.ref.kind === 'Endpoints') this.endpoints = desired.canonical;
            break;
          } catch (err) {
            const retry = err instanceof KubeApiError && (err.statusCode === 409 || err.statusCode === 404);
            if (!retry || attempt >= CONFLICT_TRIES) throw err;
          }
        }
      }
    } catch (err) {
      return this.setState('failing', `reading or writing ${SUBJECT}'s objects failed (retried next round): ${errorMessage(err)}`);
    }
    this.confirmedAt = this.options.clock();
    this.setState('publishing', `lists ${describePublication(publication)}`);
  }

  private stopWriting(kind: string, name: string): void {
    this.stoppedWhy =
      `${kind} ${SERVICE_NAMESPACE}/${name} was rewritten or deleted by someone else in ` +
      `${FOREIGN_WRITES_TO_STOP} rounds within ${FOREIGN_WRITE_WINDOW_MS / 1000} s (an apiserver still on --endpoint-reconciler-type=lease?): ` +
      'this replica stopped writing; restart it once every apiserver runs --endpoint-reconciler-type=none';
    this.setState('stopped', this.stoppedWhy);
    this.notePublished();
  }

  /** A round that writes nothing: reads the Endpoints for status and events only. */
  private async observeOnly(state: PublisherState, message: string): Promise<void> {
    try {
      this.endpoints = (await this.options.objects.read({ kind: 'Endpoints', name: SERVICE_NAME }))?.canonical;
    } catch (err) {
      this.options.logger.debug({ err: errorMessage(err) }, 'could not read the published Endpoints');
    }
    this.setState(state, message);
  }

  private setState(state: PublisherState, message: string): void {
    const changed = state !== this.state || message !== this.message;
    this.state = state;
    this.message = message;
    if (changed) {
      const level = state === 'stopped' ? 'error' : state === 'publishing' ? 'info' : state === 'starting' ? 'debug' : 'warn';
      this.options.logger[level]({ state }, `kubernetes Service: ${message}`);
      if (state !== 'starting' && state !== 'publishing')
        this.options.record([
          {
            at: this.options.clock(),
            kind: state === 'stopped' ? 'kubernetes-service-stopped' : 'kubernetes-service',
            subject: SUBJECT,
            message: `${state}: ${message}`,
          },
        ]);
    }
    this.notePublished();
  }

  /** One event whenever what the Endpoints list changes (whoever wrote it). */
  private notePublished(): void {
    if (this.endpoints === undefined) return;
    const { byName, unknown } = publishedNow(this.options.plan, this.endpoints);
    const pick = (how: string): string[] => [...byName].filter(([, h]) => h === how).map(([n]) => n);
    const listed = describePublication({ viaSidecar: pick('sidecar'), direct: pick('apiserver') });
    const line =
      [listed, unknown.length > 0 ? `addresses no config entry publishes: ${unknown.join(', ')}` : ''].filter((s) => s !== '').join('; ') || 'nothing';
    if (line === this.publishedLine) return;
    this.publishedLine = line;
    this.options.record([{ at: this.options.clock(), kind: 'kubernetes-service', subject: SUBJECT, message: `lists ${line}` }]);
  }

  /** For `mvproxy admin status`. */
  status(): KubernetesServiceStatus {
    const now = this.options.monotonic();
    const { byName, unknown } =
      this.endpoints === undefined ? { byName: new Map<string, string>(), unknown: [] } : publishedNow(this.options.plan, this.endpoints);
    return {
      enabled: true,
      state: this.state,
      message: this.message,
      nodes: this.options.plan.targets.map((t) => {
        const seenBy = this.ledger.witnesses('sidecar', t.name, now);
        return {
          apiserver: t.name,
          published: byName.get(t.name) ?? '',
          sidecar_live: seenBy.length > 0,
          apiserver_ready: this.ledger.witnesses('apiserver', t.name, now).length > 0,
          sidecar_seen_by: seenBy,
        };
      }),
      other_addresses: unknown,
      foreign_writes: this.guard.count(now),
      confirmed_at: this.confirmedAt === undefined ? '' : new Date(this.confirmedAt).toISOString(),
    };
  }
}

export interface PublisherWiring {
  config: ServeConfig & { kubernetesService: KubernetesServiceConfig };
  kubeConfig: KubeConfig;
  client: ListWatchClient;
  logger: Logger;
  record: (events: ClusterEvent[]) => void;
}

/** The publisher over the real sources (probes, liveness record, objects writer); `start` starts both it and the record's watch. */
export async function makeKubernetesServicePublisher(
  w: PublisherWiring,
): Promise<{ publisher: KubernetesServicePublisher; start: () => void; stop: () => void }> {
  const [{ readyzProbe }, { LivenessWatcher, kubeLivenessWriter }, { kubeServiceObjectsClient }] = await Promise.all([
    import('../sources/readyzProbe.js'),
    import('../sources/livenessRecord.js'),
    import('../sources/kubernetesServiceObjects.js'),
  ]);
  const { plan, livenessRecord } = w.config.kubernetesService;
  const server = w.config.tls.peerServerName;
  const probes = new Map<string, () => Promise<boolean>>();
  for (const t of plan.targets) {
    probes.set(`sidecar ${t.name}`, readyzProbe(w.kubeConfig, { host: t.sidecarIp, port: plan.sidecarPort }, server));
    if (t.apiserverIp !== undefined && plan.apiserverPort !== undefined)
      probes.set(`apiserver ${t.name}`, readyzProbe(w.kubeConfig, { host: t.apiserverIp, port: plan.apiserverPort }, server));
  }
  const publisher = new KubernetesServicePublisher({
    plan,
    replica: w.config.replicaName,
    probe: (kind, name) => probes.get(`${kind} ${name}`)?.() ?? Promise.resolve(false),
    writeReport: kubeLivenessWriter(w.kubeConfig, livenessRecord),
    objects: kubeServiceObjectsClient(w.kubeConfig),
    monotonic: () => performance.now(),
    clock: () => Date.now(),
    logger: w.logger,
    record: w.record,
  });
  const watcher = new LivenessWatcher({ client: w.client, ref: livenessRecord, onChange: (reports) => publisher.observeRecord(reports), logger: w.logger });
  return {
    publisher,
    start: () => {
      void watcher.start();
      publisher.start();
    },
    stop: () => {
      watcher.stop();
      publisher.stop();
    },
  };
}
