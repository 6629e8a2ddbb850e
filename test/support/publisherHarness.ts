// Replicas of the `kubernetes` Service's publisher (src/serve/kubernetesServicePublisher.ts)
// over an in-memory API (the objects, with resourceVersions and 409s) and an
// in-memory liveness record that every replica sees at once, on a clock the
// test moves.
import type { ClusterEvent } from '../../src/model/events.js';
import type { ListedSlice, LivenessReport, PublishPlan, ServiceObjectRef } from '../../src/model/publication.js';
import { operatorObjects } from '../../src/planner/publishedEndpoints.js';
import { KubeApiError } from '../../src/model/status.js';
import { KubernetesServicePublisher } from '../../src/serve/kubernetesServicePublisher.js';
import { decodeObserved, decodeSliceList, type ServiceObjectsClient } from '../../src/sources/kubernetesServiceObjects.js';
import type { ServiceEvent } from '../../src/sources/serviceEvents.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { captureLogger, type LogLine } from './logCapture.js';

export const PLAN: PublishPlan = {
  family: 'IPv4',
  sidecarPort: 6443,
  apiserverPort: 6444,
  targets: [
    { name: 'kas-a', sidecarIp: '192.0.2.1', apiserverIp: '192.0.2.11' },
    { name: 'kas-b', sidecarIp: '192.0.2.2', apiserverIp: '192.0.2.12' },
  ],
};

const key = (ref: ServiceObjectRef): string => `${ref.kind}/${ref.name}`;

/** The Endpoints a lease-reconciler apiserver writes: its own address and secure port, one subset. */
export function upstreamEndpoints(ips: string[], port = 6444): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name: 'kubernetes', namespace: 'default', labels: { 'endpointslice.kubernetes.io/skip-mirror': 'true' } },
    subsets: [{ addresses: ips.map((ip) => ({ ip })), ports: [{ name: 'https', port, protocol: 'TCP' }] }],
  };
}

export class FakeApi implements ServiceObjectsClient {
  readonly objects = new Map<string, Record<string, unknown> & { metadata: Record<string, unknown> }>();
  /** Every successful replace, as "replace Endpoints/kubernetes" (the publisher never creates). */
  readonly writes: string[] = [];
  /** Called before each replace is checked (to change the object under a replica's feet). */
  beforeReplace?: (ref: ServiceObjectRef) => void;
  failing = false;
  private version = 100;

  /** Someone else's write (an apiserver, kubectl): replaces the object whole, keeping nothing. */
  put(ref: ServiceObjectRef, raw: Record<string, unknown>): void {
    const copy = structuredClone(raw) as Record<string, unknown> & { metadata: Record<string, unknown> };
    copy.metadata = { ...copy.metadata, resourceVersion: String(++this.version) };
    this.objects.set(key(ref), copy);
  }

  delete(ref: ServiceObjectRef): void {
    this.objects.delete(key(ref));
  }

  get(ref: ServiceObjectRef): (Record<string, unknown> & { metadata: Record<string, unknown> }) | undefined {
    return this.objects.get(key(ref));
  }

  async read(ref: ServiceObjectRef) {
    if (this.failing) throw new Error('connection refused');
    const found = this.objects.get(key(ref));
    return found ? decodeObserved(ref, structuredClone(found)) : undefined;
  }

  async listSlices(): Promise<ListedSlice[]> {
    if (this.failing) throw new Error('connection refused');
    const items = [...this.objects]
      .filter(
        ([k, o]) =>
          k.startsWith('EndpointSlice/') && (o.metadata['labels'] as Record<string, string> | undefined)?.['kubernetes.io/service-name'] === 'kubernetes',
      )
      .map(([, o]) => structuredClone(o));
    return decodeSliceList({ items });
  }

  async replace(ref: ServiceObjectRef, body: Record<string, unknown>): Promise<void> {
    this.beforeReplace?.(ref);
    const current = this.objects.get(key(ref));
    if (!current) throw new KubeApiError(404, `${key(ref)} not found`);
    const asked = (body['metadata'] as Record<string, unknown>)['resourceVersion'];
    if (current.metadata['resourceVersion'] !== asked) throw new KubeApiError(409, `${key(ref)}: the object has been modified`);
    this.put(ref, body);
    this.writes.push(`replace ${key(ref)}`);
  }
}

/** The liveness record: every write is seen by every replica at once. */
export class FakeRecord {
  readonly entries = new Map<string, LivenessReport>();
  private readonly readers: KubernetesServicePublisher[] = [];
  failingFor = new Set<string>();

  subscribe(publisher: KubernetesServicePublisher): void {
    this.readers.push(publisher);
    publisher.observeRecord(new Map(this.entries));
  }

  /** What a replica's writer does. */
  write(report: LivenessReport): Promise<void> {
    if (this.failingFor.has(report.replica)) return Promise.reject(new Error('forbidden'));
    this.entries.set(report.replica, report);
    for (const reader of this.readers) reader.observeRecord(new Map(this.entries));
    return Promise.resolve();
  }
}

export interface Replica {
  name: string;
  publisher: KubernetesServicePublisher;
  /** What its probes reach now (change them at will). */
  reach: { sidecar: Set<string>; apiserver: Set<string> };
  events: ClusterEvent[];
  /** Kubernetes Events it sent (after its rate limit). */
  kubeEvents: ServiceEvent[];
  metrics: Metrics;
  logs: LogLine[];
}

export class PublisherCluster {
  now = 1_000_000;
  readonly api = new FakeApi();
  readonly record = new FakeRecord();
  readonly replicas: Replica[] = [];

  /** The objects as the operator creates them (mvproxy never does); `create: false` leaves the API empty. */
  constructor(
    readonly plan: PublishPlan = PLAN,
    { create = true }: { create?: boolean } = {},
  ) {
    if (create) for (const o of operatorObjects(plan)) this.api.put(o.ref, o.body);
  }

  add(name: string, reach: { sidecar: string[]; apiserver: string[] }, plan: PublishPlan = this.plan): Replica {
    const { logger, lines } = captureLogger();
    const events: ClusterEvent[] = [];
    const kubeEvents: ServiceEvent[] = [];
    const metrics = createMetrics();
    const state = { sidecar: new Set(reach.sidecar), apiserver: new Set(reach.apiserver) };
    const publisher = new KubernetesServicePublisher({
      plan,
      replica: name,
      incarnation: `${name}-1`,
      probe: async (kind, target) => state[kind].has(target),
      writeReport: (report) => this.record.write(report),
      objects: this.api,
      monotonic: () => this.now,
      clock: () => this.now,
      logger,
      record: (e) => events.push(...e),
      emit: (e) => kubeEvents.push(e),
      metrics: metrics.kubernetesService,
    });
    this.record.subscribe(publisher);
    const replica = { name, publisher, reach: state, events, kubeEvents, metrics, logs: lines };
    this.replicas.push(replica);
    return replica;
  }

  /** `n` probe rounds of every replica (in order, one after the other), 10 s apart. */
  async rounds(n: number, replicas: Replica[] = this.replicas): Promise<void> {
    for (let i = 0; i < n; i++) {
      for (const r of replicas) await r.publisher.runRound();
      this.now += 10_000;
    }
  }

  /** One metric's value (a gauge or counter of the replica's registry), 0 when it has no such series. */
  async metric(r: Replica, name: string, labels: Record<string, string> = {}): Promise<number> {
    const found = (await r.metrics.registry.getSingleMetric(name)?.get())?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
    return found?.value ?? 0;
  }

  /** What the Endpoints list, as `ip:port`. */
  listed(): string[] {
    const endpoints = this.api.get({ kind: 'Endpoints', name: 'kubernetes' }) as {
      subsets?: Array<{ addresses: Array<{ ip: string }>; ports: Array<{ port: number }> }>;
    };
    return (endpoints?.subsets ?? []).flatMap((s) => s.addresses.flatMap((a) => s.ports.map((p) => `${a.ip}:${p.port}`))).sort();
  }
}
