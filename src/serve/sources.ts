// The sources the running control plane reads (controlPlane.ts starts them):
// the cluster observer (leases, discovery, local-only resources), the drain
// record and the sync record, all through the Kubernetes API. Loaded only
// when made, after the xDS listeners are bound: the Kubernetes client alone
// takes about half a second to load, and a sidecar starting with its replica
// should not wait for it (warmStart.ts).
import type { KubeConfig } from '@kubernetes/client-node';
import type { Metrics } from '../metrics.js';
import type { ApiserverEndpoint, ClusterModel } from '../model/cluster.js';
import type { AdsServer } from '../servers/ads.js';
import type { ClusterObserver } from '../sources/clusterObserver.js';
import type { DrainWatcher, DrainWriter } from '../sources/drainRecord.js';
import type { Clock } from '../sources/runtime.js';
import type { Logger } from '../util/log.js';
import type { ServeConfig } from './config.js';
import { ReplicaSyncRecord } from './syncReporter.js';
import type { ClusterEvent } from '../model/events.js';
import type { makeKubernetesServicePublisher } from './kubernetesServiceWiring.js';

export interface SourcesOptions {
  config: ServeConfig;
  /** As the control plane's (ControlPlaneDeps): kubeConfig defaults to loading config.kubeconfig. */
  deps: { logger: Logger; metrics: Metrics; kubeConfig?: KubeConfig; clock?: Clock };
  /** Whose ACKs go into the sync record. */
  ads: AdsServer;
  endpoints: ApiserverEndpoint[];
  /** Each new model the observer makes. */
  onModel: (model: ClusterModel) => void;
  /** Each version of the drain record: the names drained and what was noted with them. */
  onDrains: (names: readonly string[], notes: Readonly<Record<string, string>>) => void;
  /** Events for the journal (the `kubernetes` Service's publisher's). */
  onEvents: (events: ClusterEvent[]) => void;
}

export interface ControlPlaneSources {
  observer: ClusterObserver;
  drainWriter: DrainWriter;
  drainWatcher: DrainWatcher;
  syncRecord: ReplicaSyncRecord;
  /** The `kubernetes` Service's publisher, when the config turns it on (kubernetesServicePublisher.ts). */
  publisher?: Awaited<ReturnType<typeof makeKubernetesServicePublisher>>;
}

/** Loads and makes the sources, wired to the callbacks; starting them is the caller's. */
export async function makeSources(options: SourcesOptions): Promise<ControlPlaneSources> {
  const [{ ClusterObserver }, { KubeConfig }, { DrainWatcher, kubeDrainWriter }, { kubeSyncWriter }, { createKubeListWatchClient }] = await Promise.all([
    import('../sources/clusterObserver.js'),
    import('@kubernetes/client-node'),
    import('../sources/drainRecord.js'),
    import('../sources/syncRecord.js'),
    import('../sources/listWatch.js'),
  ]);
  const { config, deps } = options;
  let kubeConfig = deps.kubeConfig;
  if (!kubeConfig) {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(config.kubeconfig);
  }
  const observer = new ClusterObserver({
    kubeConfig,
    endpoints: options.endpoints,
    logger: deps.logger.child({ component: 'sources' }),
    metrics: deps.metrics,
    tlsServerName: config.tls.peerServerName,
    departedGraceMs: config.departedGraceMs,
    localOnlyGraceMs: config.localOnlyGraceMs,
    discoveryPollMs: config.discoveryPollMs,
    discoveryMaxBodyBytes: config.discoveryMaxBodyBytes,
    ...(deps.clock ? { clock: deps.clock } : {}),
  });
  observer.onChange(options.onModel);
  const drainRecord = config.drainRecord;
  const drainWriter = kubeDrainWriter(kubeConfig, drainRecord);
  const drainWatcher = new DrainWatcher({
    client: createKubeListWatchClient(kubeConfig),
    ref: drainRecord,
    onChange: options.onDrains,
    logger: deps.logger.child({ component: 'drains' }),
  });
  const syncRecord = new ReplicaSyncRecord({
    replica: config.replicaName,
    ads: options.ads,
    client: createKubeListWatchClient(kubeConfig),
    ref: config.syncRecord,
    write: kubeSyncWriter(kubeConfig, config.syncRecord),
    logger: deps.logger.child({ component: 'sync-record' }),
  });
  const { kubernetesService } = config;
  const publisher = kubernetesService
    ? await (await import('./kubernetesServiceWiring.js')).makeKubernetesServicePublisher({
        config: { ...config, kubernetesService },
        kubeConfig,
        client: createKubeListWatchClient(kubeConfig),
        logger: deps.logger.child({ component: 'kubernetes-service' }),
        record: options.onEvents,
        metrics: deps.metrics.kubernetesService,
      })
    : undefined;
  return { observer, drainWriter, drainWatcher, syncRecord, ...(publisher ? { publisher } : {}) };
}
