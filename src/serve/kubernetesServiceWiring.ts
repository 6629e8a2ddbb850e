// The `kubernetes` Service's publisher (kubernetesServicePublisher.ts) over
// the real sources: readyz probes, the liveness record, the objects client,
// Kubernetes Events and the metrics.
import { performance } from 'node:perf_hooks';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../util/log.js';
import type { ClusterEvent } from '../model/events.js';
import type { PublisherMetrics } from '../metrics.js';
import type { ListWatchClient } from '../sources/listWatch.js';
import type { ServeConfig } from './config.js';
import type { KubernetesServiceConfig } from './configPublish.js';
import { KubernetesServicePublisher } from './kubernetesServicePublisher.js';

export interface PublisherWiring {
  config: ServeConfig & { kubernetesService: KubernetesServiceConfig };
  kubeConfig: KubeConfig;
  client: ListWatchClient;
  logger: Logger;
  record: (events: ClusterEvent[]) => void;
  metrics?: PublisherMetrics;
}

/** The publisher over the real sources (probes, liveness record, objects writer); `start` starts both it and the record's watch. */
export async function makeKubernetesServicePublisher(
  w: PublisherWiring,
): Promise<{ publisher: KubernetesServicePublisher; start: () => void; stop: () => void }> {
  const [{ readyzProbe }, { LivenessWatcher, kubeLivenessWriter }, { kubeServiceObjectsClient }, { kubeServiceEventSink }] = await Promise.all([
    import('../sources/readyzProbe.js'),
    import('../sources/livenessRecord.js'),
    import('../sources/kubernetesServiceObjects.js'),
    import('../sources/serviceEvents.js'),
  ]);
  const { plan, livenessRecord, clusterIp } = w.config.kubernetesService;
  // Verified as a pod verifies it: against the Service's ClusterIP, which pods dial.
  const probes = new Map<string, () => Promise<boolean>>();
  for (const t of plan.targets) {
    probes.set(`sidecar ${t.name}`, readyzProbe(w.kubeConfig, { host: t.sidecarIp, port: plan.sidecarPort }, clusterIp));
    if (t.apiserverIp !== undefined && plan.apiserverPort !== undefined)
      probes.set(`apiserver ${t.name}`, readyzProbe(w.kubeConfig, { host: t.apiserverIp, port: plan.apiserverPort }, clusterIp));
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
    emit: kubeServiceEventSink(w.kubeConfig, w.config.replicaName, w.logger),
    ...(w.metrics ? { metrics: w.metrics } : {}),
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
