// A DiscoveryFetcher on a fake transport and fake time, for apiserver "a";
// and the sync-error counter its tests read.
import { pino, type Logger } from 'pino';

import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { ApiserverEndpoint } from '../../src/model/cluster.js';
import type { HttpTransport } from '../../src/sources/apiserverHttp.js';
import { DiscoveryFetcher, type DiscoveryUpdate } from '../../src/sources/discoveryFetcher.js';
import type { FakeTime } from './fakeTime.js';

/** apiserver_peer_discovery_sync_errors_total{type} so far. */
export async function syncErrors(metrics: Metrics, type: string): Promise<number> {
  const data = await metrics.peerDiscoverySyncErrors.get();
  return data.values.find((v) => v.labels.type === type)?.value ?? 0;
}

/** The configured apiservers: newFetcher polls a; the cluster observer tests watch both. */
export const ENDPOINT_A: ApiserverEndpoint = { name: 'a', hostname: 'host-a', address: { host: '127.0.0.1', port: 6443 } };
export const ENDPOINT_B: ApiserverEndpoint = { name: 'b', hostname: 'host-b', address: { host: '127.0.0.2', port: 6443 } };

/** A fetcher of apiserver a polling every second on `time`; its updates are collected in order. */
export function newFetcher(transport: HttpTransport, time: FakeTime, options: { logger?: Logger; metrics?: Metrics } = {}) {
  const updates: DiscoveryUpdate[] = [];
  const metrics = options.metrics ?? createMetrics();
  const fetcher = new DiscoveryFetcher({
    endpoint: ENDPOINT_A,
    transport,
    onUpdate: (u) => updates.push(u),
    logger: options.logger ?? pino({ level: 'silent' }),
    metrics,
    timers: time,
    discoveryPollMs: 1000,
  });
  return { fetcher, updates, metrics };
}
