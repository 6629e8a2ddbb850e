// Prometheus metrics for mvproxy. Upstream MVP's metric names and labels are
// kept so dashboards built for upstream work unchanged; mvproxy's
// own metrics are prefixed mvproxy_. One registry per createMetrics() call:
// no global singleton, so each test and each process gets a fresh one.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  /** apiserver_rerouted_request_total{code,group,version,resource}: requests proxied to a peer. */
  reroutedRequests: Counter<'code' | 'group' | 'version' | 'resource'>;
  /** apiserver_peer_proxy_errors_total{type,group,version,resource}: failures proxying to a peer. */
  peerProxyErrors: Counter<'type' | 'group' | 'version' | 'resource'>;
  /**
   * apiserver_peer_discovery_sync_errors_total{type}: failed or partly unusable
   * reads of an apiserver's own discovery and OpenAPI v3 index: fetch, timeout
   * (no answer), status, parse (an unreadable body, or one with malformed
   * entries), too_large (a body over the size limit).
   */
  peerDiscoverySyncErrors: Counter<'type'>;
  /** aggregator_discovery_peer_aggregated_cache_hits_total: merged discovery served from cache. */
  peerAggregatedCacheHits: Counter;
  /** aggregator_discovery_peer_aggregated_cache_misses_total: merged discovery rebuilt. */
  peerAggregatedCacheMisses: Counter;
  /** mvproxy_xds_nacks_total{node,type_url}. */
  xdsNacks: Counter<'node' | 'type_url'>;
  xdsHeldBack: Counter<'node' | 'type_url'>;
  /** mvproxy_xds_pushes_total{node,type_url}. */
  xdsPushes: Counter<'node' | 'type_url'>;
  /** mvproxy_xds_acks_total{node,type_url}: xDS responses an Envoy accepted. */
  xdsAcks: Counter<'node' | 'type_url'>;
  /** mvproxy_xds_streams{node}: ADS streams open from each sidecar (0: disconnected). */
  xdsStreams: Gauge<'node'>;
  /** mvproxy_xds_in_sync{node}: 1 while the sidecar holds (ACKed) its whole current snapshot, else 0; set at each scrape. */
  xdsInSync: Gauge<'node'>;
  /** mvproxy_ext_proc_requests_total{result}: ext_proc answers (documents over the push budget): merged (discovery), local ones let through (pass), failures (error). */
  extProcRequests: Counter<'result'>;
  /** mvproxy_ext_proc_duration_seconds: time to answer the response headers of one merged-document request over ext_proc. */
  extProcDuration: Histogram;
  /** mvproxy_apiserver_draining{apiserver}: 1 while an operator drains it. */
  apiserverDraining: Gauge<'apiserver'>;
  /** mvproxy_apiserver_ready{apiserver}: its /readyz as last read (0: drained automatically); absent until read. */
  apiserverReady: Gauge<'apiserver'>;
  /** The `kubernetes` Service's publisher (serve/kubernetesServicePublisher.ts); no series while publishing is off. */
  kubernetesService: PublisherMetrics;
}

/** What the `kubernetes` Service's publisher exports (docs/operating.md, "The kubernetes Service"). */
export interface PublisherMetrics {
  /** mvproxy_kubernetes_service_state{state}: 1 for the publisher's current state, 0 for the others. */
  state: Gauge<'state'>;
  /** mvproxy_kubernetes_service_listed_addresses{kind}: ready addresses the Service's EndpointSlices give kube-proxy, by kind. */
  listedAddresses: Gauge<'kind'>;
  /** mvproxy_kubernetes_service_foreign_writes_total: rounds that found an object rewritten by someone else (not a replica). */
  foreignWrites: Counter;
  /** mvproxy_kubernetes_service_last_write_success_timestamp_seconds: when this replica last found or wrote every object as it wants it. */
  lastWriteSuccess: Gauge;
}

/** Every state the publisher reports (the state gauge has one series per state). */
export const PUBLISHER_STATES = ['starting', 'publishing', 'holding', 'failing'] as const;

export interface MetricsOptions {
  /** Also export Node.js process metrics (heap, event loop lag...). Off by default: tests do not need them. */
  processMetrics?: boolean;
}

// ext_proc answers merged documents within a 250 ms message timeout: resolve well below it.
const EXT_PROC_BUCKETS_SECONDS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5];

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    reroutedRequests: new Counter({
      name: 'apiserver_rerouted_request_total',
      help: 'Total number of requests that were proxied to a peer kube-apiserver because the local one does not serve the resource.',
      labelNames: ['code', 'group', 'version', 'resource'] as const,
      registers,
    }),
    peerProxyErrors: new Counter({
      name: 'apiserver_peer_proxy_errors_total',
      help: 'Total number of errors while proxying a request to a peer kube-apiserver.',
      labelNames: ['type', 'group', 'version', 'resource'] as const,
      registers,
    }),
    peerDiscoverySyncErrors: new Counter({
      name: 'apiserver_peer_discovery_sync_errors_total',
      help: "Total number of errors while syncing a kube-apiserver's own discovery (aggregated discovery and OpenAPI v3 index), by type: fetch, timeout, status, parse, too_large.",
      labelNames: ['type'] as const,
      registers,
    }),
    peerAggregatedCacheHits: new Counter({
      name: 'aggregator_discovery_peer_aggregated_cache_hits_total',
      help: 'Total number of peer-aggregated discovery requests served from the cached merged document.',
      registers,
    }),
    peerAggregatedCacheMisses: new Counter({
      name: 'aggregator_discovery_peer_aggregated_cache_misses_total',
      help: 'Total number of peer-aggregated discovery requests that rebuilt the merged document.',
      registers,
    }),
    xdsNacks: new Counter({
      name: 'mvproxy_xds_nacks_total',
      help: 'Total number of xDS responses an Envoy rejected (NACK).',
      labelNames: ['node', 'type_url'] as const,
      registers,
    }),
    xdsHeldBack: new Counter({
      name: 'mvproxy_xds_held_back_total',
      help: 'Total number of xDS updates held back past the ordering timeout because what they depend on was not ACKed.',
      labelNames: ['node', 'type_url'] as const,
      registers,
    }),
    xdsPushes: new Counter({
      name: 'mvproxy_xds_pushes_total',
      help: 'Total number of xDS responses sent to an Envoy.',
      labelNames: ['node', 'type_url'] as const,
      registers,
    }),
    xdsAcks: new Counter({
      name: 'mvproxy_xds_acks_total',
      help: 'Total number of xDS responses an Envoy accepted (ACK).',
      labelNames: ['node', 'type_url'] as const,
      registers,
    }),
    xdsStreams: new Gauge({
      name: 'mvproxy_xds_streams',
      help: 'ADS streams open from each sidecar (0 while it is disconnected).',
      labelNames: ['node'] as const,
      registers,
    }),
    xdsInSync: new Gauge({
      name: 'mvproxy_xds_in_sync',
      help: 'Per sidecar: 1 while it has ACKed every type of its current snapshot (documents included), 0 while it is behind (a NACK, no answer yet) or not connected.',
      labelNames: ['node'] as const,
      registers,
    }),
    extProcRequests: new Counter({
      name: 'mvproxy_ext_proc_requests_total',
      help: 'Total number of ext_proc requests by decision or error.',
      labelNames: ['result'] as const,
      registers,
    }),
    extProcDuration: new Histogram({
      name: 'mvproxy_ext_proc_duration_seconds',
      help: 'Time mvproxy took to answer one ext_proc request.',
      buckets: EXT_PROC_BUCKETS_SECONDS,
      registers,
    }),
    apiserverDraining: new Gauge({
      name: 'mvproxy_apiserver_draining',
      help: '1 while an operator drains the apiserver (admin API), else 0.',
      labelNames: ['apiserver'] as const,
      registers,
    }),
    apiserverReady: new Gauge({
      name: 'mvproxy_apiserver_ready',
      help: "1 while the apiserver's /readyz (read with each discovery poll) passes; 0 while it fails, when traffic moves off it as by a drain.",
      labelNames: ['apiserver'] as const,
      registers,
    }),
    kubernetesService: {
      state: new Gauge({
        name: 'mvproxy_kubernetes_service_state',
        help: "1 for the kubernetes Service publisher's current state (starting, publishing, holding, failing), 0 for the others.",
        labelNames: ['state'] as const,
        registers,
      }),
      listedAddresses: new Gauge({
        name: 'mvproxy_kubernetes_service_listed_addresses',
        help: "Ready addresses the kubernetes Service's EndpointSlices list, by kind: sidecar, apiserver (listed directly), other (no config entry publishes it).",
        labelNames: ['kind'] as const,
        registers,
      }),
      foreignWrites: new Counter({
        name: 'mvproxy_kubernetes_service_foreign_writes_total',
        help: "Total number of the kubernetes Service's objects found rewritten by someone other than an mvproxy replica (an apiserver on the lease reconciler included).",
        registers,
      }),
      lastWriteSuccess: new Gauge({
        name: 'mvproxy_kubernetes_service_last_write_success_timestamp_seconds',
        help: "When this replica last found or wrote every one of the kubernetes Service's objects as it wants them (Unix seconds).",
        registers,
      }),
    },
  };
}

/** Sets mvproxy_apiserver_ready from the apiservers' last /readyz; one never read yet has no series. */
export function recordReadiness(metrics: Pick<Metrics, 'apiserverReady'>, apiservers: ReadonlyArray<{ name: string; ready?: boolean }>): void {
  for (const a of apiservers) {
    if (a.ready === undefined) metrics.apiserverReady.remove({ apiserver: a.name });
    else metrics.apiserverReady.set({ apiserver: a.name }, a.ready ? 1 : 0);
  }
}

/** Sets mvproxy_xds_in_sync from the admin status's sidecars (in_sync), one series per planned sidecar; a sidecar no longer planned loses its series. */
export function recordSidecarSync(metrics: Pick<Metrics, 'xdsInSync'>, sidecars: ReadonlyArray<{ node?: string; in_sync?: boolean }>): void {
  metrics.xdsInSync.reset();
  for (const s of sidecars) if (s.node) metrics.xdsInSync.set({ node: s.node }, s.in_sync ? 1 : 0);
}

/** The /metrics text, mvproxy_xds_in_sync first set from `sidecars` (the admin status's, read at this scrape). */
export function metricsText(metrics: Pick<Metrics, 'registry' | 'xdsInSync'>, sidecars: ReadonlyArray<{ node?: string; in_sync?: boolean }>): Promise<string> {
  recordSidecarSync(metrics, sidecars);
  return metrics.registry.metrics();
}

/** The ADS server's counting hooks (src/servers/ads.ts AdsMetrics), fed into `metrics`. */
export interface XdsMetricHooks {
  streamOpened(node: string): void;
  streamClosed(node: string): void;
  responseSent(node: string, typeUrl: string): void;
  ack(node: string, typeUrl: string): void;
  nack(node: string, typeUrl: string): void;
  heldBack(node: string, typeUrl: string): void;
}

/**
 * Counts pushes, ACKs, NACKs and held-back updates per sidecar and type. The
 * first push of a type to a sidecar also makes its ACK, NACK and held-back
 * counters exist at 0, so a sidecar that never rejected anything shows 0
 * NACKs instead of no series at all.
 */
export function xdsMetricHooks(metrics: Pick<Metrics, 'xdsPushes' | 'xdsAcks' | 'xdsNacks' | 'xdsHeldBack' | 'xdsStreams'>): XdsMetricHooks {
  return {
    streamOpened: (node) => metrics.xdsStreams.inc({ node }),
    streamClosed: (node) => metrics.xdsStreams.dec({ node }),
    responseSent: (node, typeUrl) => {
      const labels = { node, type_url: typeUrl };
      metrics.xdsPushes.inc(labels);
      metrics.xdsAcks.inc(labels, 0);
      metrics.xdsNacks.inc(labels, 0);
      metrics.xdsHeldBack.inc(labels, 0);
    },
    ack: (node, typeUrl) => metrics.xdsAcks.inc({ node, type_url: typeUrl }),
    nack: (node, typeUrl) => metrics.xdsNacks.inc({ node, type_url: typeUrl }),
    heldBack: (node, typeUrl) => metrics.xdsHeldBack.inc({ node, type_url: typeUrl }),
  };
}
