// The `kubernetes` Service's endpoints, published by every replica alike
// (issues 21 and 29; docs/operating.md, "The kubernetes Service"). With the
// apiservers on `--endpoint-reconciler-type=none`, nobody else writes them:
// every PROBE_INTERVAL_MS this replica probes every sidecar and apiserver,
// writes what passed (and its plan's digest) into its entry of the liveness
// record, merges every replica's entries (planner/publicationLiveness.ts),
// and brings the Endpoints and EndpointSlices to what that makes
// (planner/publishedEndpoints.ts): written only when their content differs,
// re-read on a conflict, never created (the operator creates them). Never
// worse than no proxy: when nothing is live, this replica's view is not
// complete, or live replicas' configurations differ, nothing is written
// (what is there is kept, never emptied). Never worse than upstream's
// reconciler: someone else's content naming an address outside the
// configuration is replaced every round; an apiserver still on the lease
// reconciler is held, not fought, and retried (planner/publisherDecision.ts).
import { randomBytes } from 'node:crypto';
import type { Logger } from '../util/log.js';
import type { ClusterEvent } from '../model/events.js';
import { planDigest, type LivenessReport, type PublishPlan } from '../model/publication.js';
import { KubeApiError } from '../model/status.js';
import type { PublisherMetrics } from '../metrics.js';
import { PUBLISHER_STATES } from '../metrics.js';
import {
  describePublication,
  desiredObjects,
  desiredPublication,
  SERVICE_NAME,
  SERVICE_NAMESPACE,
  sharedWithApiservers,
  type DesiredObject,
  type Liveness,
  type Publication,
} from '../planner/publishedEndpoints.js';
import { judgeContent, serviceView, type ContentVerdict, type ServiceView } from '../planner/publishedContent.js';
import { EventLimiter, LeaseHold, publisherReadiness } from '../planner/publisherDecision.js';
import { LivenessLedger, PROBE_INTERVAL_MS, type ProbeKind } from '../planner/publicationLiveness.js';
import type { ServiceObjectsClient } from '../sources/kubernetesServiceObjects.js';
import type { LivenessWriter } from '../sources/livenessRecord.js';
import type { ServiceEvent, ServiceEventSink } from '../sources/serviceEvents.js';
import { errorMessage, systemTimers, type TimerHandle, type Timers } from '../sources/runtime.js';
import type { KubernetesServiceStatus } from '../generated/mvproxy/admin/v1/KubernetesServiceStatus.js';

export type PublisherState = (typeof PUBLISHER_STATES)[number];

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
  /** Kubernetes Events about Service default/kubernetes (rate-limited here). */
  emit?: ServiceEventSink;
  metrics?: PublisherMetrics;
  timers?: Timers;
  intervalMs?: number;
  expiryMs?: number;
}

const SUBJECT = `${SERVICE_NAMESPACE}/${SERVICE_NAME}`;
/** Tries of one object per round when other replicas keep changing it under us (409). */
const CONFLICT_TRIES = 4;
/** The window of the status's foreign_writes count. */
const FOREIGN_WINDOW_MS = 120_000;
const NEVER_CREATED = 'mvproxy never creates it: the operator does (docs/operating.md, "The kubernetes Service")';

const id = (d: DesiredObject): string => `${d.ref.kind} ${SERVICE_NAMESPACE}/${d.ref.name}`;

export class KubernetesServicePublisher {
  private readonly ledger: LivenessLedger;
  private readonly leaseHold = new LeaseHold();
  private readonly limiter = new EventLimiter();
  private readonly incarnation: string;
  private readonly digest: string;
  private readonly timers: Timers;
  private readonly lastPass: Record<ProbeKind, Record<string, number>> = { sidecar: {}, apiserver: {} };
  private readonly foreignAt: number[] = [];
  private round = 0;
  private state: PublisherState = 'starting';
  private message = 'no probe round yet';
  private notPublishingSince: number;
  private mismatches: string[] = [];
  private leaseApiservers: string[] = [];
  /** What kube-proxy is given, as last read (slices and Endpoints). */
  private view?: ServiceView;
  private publishedLine?: string;
  private confirmedAt?: number;
  private recordFailing = false;
  private timer?: TimerHandle;
  private running = false;

  constructor(private readonly options: PublisherOptions) {
    this.incarnation = options.incarnation ?? randomBytes(8).toString('hex');
    this.digest = planDigest(options.plan);
    this.ledger = new LivenessLedger(options.replica, this.incarnation, options.expiryMs);
    this.timers = options.timers ?? systemTimers;
    this.notPublishingSince = options.monotonic();
    this.exportState();
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
    await this.readView();
    this.leaseApiservers = [];
    this.mismatches = [];
    const view = this.ledger.viewReadiness(now);
    if (!view.ready) return this.setState(this.state === 'starting' ? 'starting' : 'holding', `${view.why}: nothing is written meanwhile`);
    this.mismatches = this.ledger.planDisagreements(this.digest, now).map((d) => `${d.replica}: ${d.plan}`);
    if (this.mismatches.length > 0) {
      const message =
        `live replicas' kubernetesService configurations differ (this one's plan ${this.digest}; ${this.mismatches.join(', ')}): ` +
        'nobody writes until every live replica has the same apiserver addresses; what is published is kept';
      this.event({ reason: 'ConfigMismatch', type: 'Warning', note: message });
      return this.setState('holding', message);
    }
    const publication = desiredPublication(plan, this.liveness(now));
    if (!publication) return this.setState('holding', 'no replica observed any sidecar or apiserver live: what is published is kept (never emptied)');
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
      plan: this.digest,
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

  /** Reads what kube-proxy is given: every slice of the Service, and the Endpoints. */
  private async readView(): Promise<void> {
    const { objects, plan } = this.options;
    try {
      const [slices, endpoints] = await Promise.all([objects.listSlices(), objects.read({ kind: 'Endpoints', name: SERVICE_NAME })]);
      this.view = serviceView(plan, slices, endpoints?.canonical);
    } catch (err) {
      this.options.logger.debug({ err: errorMessage(err) }, "could not list the kubernetes Service's EndpointSlices");
    }
  }

  /** Brings every existing object to what the publication makes; holds for an apiserver on the lease reconciler. */
  private async sync(publication: Publication, now: number): Promise<void> {
    const { objects, plan } = this.options;
    const absent: string[] = [];
    let wrote = false;
    let retry = false;
    try {
      const desired = desiredObjects(plan, publication);
      const observed = await Promise.all(desired.map((d) => objects.read(d.ref)));
      const verdicts = desired.map((d, i) => judgeContent(plan, d, observed[i]));
      const lease = verdicts.flatMap((v) => (v.kind === 'lease' ? v.apiservers : []));
      let holdUntil: number | undefined;
      if (lease.length > 0) {
        const action = this.leaseHold.leaseFound(now);
        if (action.act === 'hold') {
          // Counted once per hold: the rewrite that started it.
          if (action.began) for (const [i, d] of desired.entries()) if (verdicts[i]?.kind === 'lease') this.foreignWrite(d, verdicts[i], now, 'held');
          holdUntil = action.until;
        } else {
          retry = action.retry;
          this.options.logger.info({ retry }, "writing over the content of an apiserver's lease reconciler");
        }
      } else this.leaseHold.clear(now);
      for (const [i, d] of desired.entries()) {
        // A hold leaves upstream's objects to the lease reconciler; mvproxy's own slices still follow liveness.
        if (holdUntil !== undefined && sharedWithApiservers(d.ref)) continue;
        const verdict = verdicts[i] ?? { kind: 'absent' };
        // Lease content written over is the takeover's leftovers or this replica's retry: no foreign write.
        if (verdict.kind === 'foreign') this.foreignWrite(d, verdict, now, 'replaced');
        const outcome = await this.bring(d, observed[i], verdict);
        if (outcome === 'absent') absent.push(id(d));
        if (outcome === 'written') wrote = true;
      }
      if (holdUntil !== undefined) return this.holdForLease([...new Set(lease)].sort(), holdUntil - now);
    } catch (err) {
      return this.setState('failing', `reading or writing ${SUBJECT}'s objects failed (retried next round): ${errorMessage(err)}`);
    }
    if (wrote) this.leaseHold.wrote();
    const confirmed = wrote || this.leaseHold.confirmed(now);
    if (wrote) await this.readView();
    if (absent.length > 0) return this.setState('failing', `${absent.join(' and ')} does not exist: ${NEVER_CREATED}`);
    // Publishing once the retry's content has stayed 20 s: a reconciler still running would have rewritten it.
    if (retry || !confirmed)
      return this.setState('holding', `retrying: wrote ${describePublication(publication)} once, to see whether the lease reconciler stopped`);
    this.confirmedAt = this.options.clock();
    this.options.metrics?.lastWriteSuccess.set(this.confirmedAt / 1000);
    this.setState('publishing', `lists ${describePublication(publication)}`);
  }

  /** One object to its desired content: replaced with the resourceVersion read, read again on a conflict. */
  private async bring(
    d: DesiredObject,
    first: Awaited<ReturnType<ServiceObjectsClient['read']>>,
    verdict: ContentVerdict,
  ): Promise<'absent' | 'kept' | 'written'> {
    let observed = first;
    let kind = verdict.kind;
    for (let attempt = 1; ; attempt++) {
      if (kind === 'absent' || !observed) return 'absent';
      if (kind === 'as-desired') return 'kept';
      try {
        await this.options.objects.replace(d.ref, { ...d.body, metadata: { ...d.body.metadata, resourceVersion: observed.resourceVersion } });
        return 'written';
      } catch (err) {
        const retry = err instanceof KubeApiError && (err.statusCode === 409 || err.statusCode === 404);
        if (!retry || attempt >= CONFLICT_TRIES) throw err;
      }
      observed = await this.options.objects.read(d.ref);
      kind = judgeContent(this.options.plan, d, observed).kind;
    }
  }

  private foreignWrite(d: DesiredObject, verdict: ContentVerdict, now: number, outcome: 'replaced' | 'held'): void {
    this.foreignAt.push(now);
    this.options.metrics?.foreignWrites.inc();
    const what =
      verdict.kind === 'foreign' && verdict.outside.length > 0
        ? `listing ${verdict.outside.join(', ')}, which the configuration does not publish`
        : verdict.kind === 'lease'
          ? `listing the apiservers ${verdict.apiservers.join(', ')} at their own address (a lease reconciler's content)`
          : 'with content no mvproxy replica wrote';
    const note = `${id(d)} was rewritten by someone else, ${what}: ${outcome}`;
    this.options.logger.warn({ object: id(d) }, note);
    this.event({ reason: 'ForeignWrite', type: 'Warning', note });
  }

  private holdForLease(apiservers: string[], forMs: number): void {
    this.leaseApiservers = apiservers;
    const message =
      `apiserver ${apiservers.join(', ')} still on the lease reconciler (its content came back over this replica's): ` +
      `held, not fought (the no-proxy state); this replica writes again in ${Math.round(forMs / 1000)} s to see whether it stopped. ` +
      'Run every apiserver with --endpoint-reconciler-type=none';
    this.event({ reason: 'PublisherHolding', type: 'Warning', note: message });
    this.setState('holding', message);
  }

  private event(e: ServiceEvent): void {
    if (this.options.emit && this.limiter.allow(e.reason, e.note, this.options.monotonic())) this.options.emit(e);
  }

  private setState(state: PublisherState, message: string): void {
    const changed = state !== this.state || message !== this.message;
    const wasPublishing = this.state === 'publishing';
    this.state = state;
    this.message = message;
    if (state === 'publishing') this.notPublishingSince = this.options.monotonic();
    else if (wasPublishing) this.notPublishingSince = this.options.monotonic();
    this.exportState();
    if (changed) {
      const level = state === 'failing' ? 'error' : state === 'publishing' ? 'info' : state === 'starting' ? 'debug' : 'warn';
      this.options.logger[level]({ state }, `kubernetes Service: ${message}`);
      if (state !== 'starting' && state !== 'publishing')
        this.options.record([{ at: this.options.clock(), kind: 'kubernetes-service', subject: SUBJECT, message: `${state}: ${message}` }]);
      if (state === 'failing') this.event({ reason: 'PublisherFailing', type: 'Warning', note: message });
      if (state === 'publishing' && wasPublishing === false && this.round > 1) this.event({ reason: 'PublisherPublishing', type: 'Normal', note: message });
    }
    this.notePublished();
  }

  private exportState(): void {
    const m = this.options.metrics;
    if (!m) return;
    for (const s of PUBLISHER_STATES) m.state.set({ state: s }, s === this.state ? 1 : 0);
    if (this.view) for (const [kind, n] of Object.entries(this.view.counts)) m.listedAddresses.set({ kind }, n);
  }

  /** One journal event whenever what the slices list changes (whoever wrote them). */
  private notePublished(): void {
    if (this.view === undefined) return;
    const { byName, unknown } = this.view;
    const pick = (how: string): string[] => [...byName].filter(([, h]) => h === how).map(([n]) => n);
    const listed = describePublication({ viaSidecar: pick('sidecar'), direct: pick('apiserver') });
    const line =
      [listed, unknown.length > 0 ? `addresses no config entry publishes: ${unknown.join(', ')}` : ''].filter((s) => s !== '').join('; ') || 'nothing';
    if (line === this.publishedLine) return;
    this.publishedLine = line;
    this.options.record([{ at: this.options.clock(), kind: 'kubernetes-service', subject: SUBJECT, message: `lists ${line}` }]);
  }

  /** The replica's readiness (/readyz): fails once this publisher has not been publishing for a while (planner/publisherDecision.ts). */
  readiness(): { ready: boolean; why: string } {
    return publisherReadiness(this.state, this.message, this.notPublishingSince, this.options.monotonic());
  }

  /** For `mvproxy admin status`. */
  status(): KubernetesServiceStatus {
    const now = this.options.monotonic();
    while (this.foreignAt.length > 0 && (this.foreignAt[0] ?? now) <= now - FOREIGN_WINDOW_MS) this.foreignAt.shift();
    const view = this.view;
    return {
      enabled: true,
      state: this.state,
      message: this.message,
      nodes: this.options.plan.targets.map((t) => {
        const seenBy = this.ledger.witnesses('sidecar', t.name, now);
        return {
          apiserver: t.name,
          published: view?.byName.get(t.name) ?? '',
          sidecar_live: seenBy.length > 0,
          apiserver_ready: this.ledger.witnesses('apiserver', t.name, now).length > 0,
          sidecar_seen_by: seenBy,
        };
      }),
      other_addresses: view?.unknown ?? [],
      foreign_writes: this.foreignAt.length,
      confirmed_at: this.confirmedAt === undefined ? '' : new Date(this.confirmedAt).toISOString(),
      slices: (view?.slices ?? []).map((s) => ({
        name: s.name,
        address_type: s.addressType,
        addresses: s.addresses,
        written_by_mvproxy: s.writtenByMvproxy,
        managed_by: s.managedBy,
      })),
      endpoints_mismatch: view?.endpointsMismatch ?? '',
      plan_digest: this.digest,
      config_mismatches: this.mismatches,
      lease_apiservers: this.leaseApiservers,
      ready: this.readiness().ready,
    };
  }
}
