// What the Grafana dashboard (deploy/grafana/mvproxy-dashboard.json) shows:
// one row per concern, each panel one or more PromQL queries. Pure data; the
// JSON is rendered from it (grafana.ts) and the dashboard test evaluates every
// query against a real Prometheus scraping the sandbox.
//
// Two kinds of targets are scraped: the control plane's `/metrics` (its admin
// HTTP address; upstream MVP's names, and mvproxy_*), and every sidecar's
// Envoy statistics (`/stats/prometheus` on its loopback stats listener,
// src/xds/bootstrap.ts). Envoy series tell sidecars apart by `instance`.

/** Grafana's window for rate(): at least four scrape intervals (it substitutes it per query). */
export const RATE_WINDOW = '$__rate_interval';

export interface PanelTarget {
  expr: string;
  /** Grafana legend template, e.g. `{{node}}`. */
  legend: string;
}

export interface PanelSpec {
  title: string;
  description: string;
  /** Grafana unit id: reqps, s, short, none... */
  unit: string;
  targets: PanelTarget[];
}

export interface RowSpec {
  title: string;
  panels: PanelSpec[];
}

/** The sidecar's client-facing connection manager (src/translator): Envoy's `http.apiserver.*` stats. */
const CLIENT_HCM = 'envoy_http_conn_manager_prefix="apiserver"';
/** Envoy's clusters without the one the stats listener itself uses. */
const APISERVER_CLUSTERS = 'envoy_cluster_name!="envoy_admin"';
/**
 * Counters the document filters (WASM) define, one line per sidecar and
 * counter, legend "<instance> <label>": `wasmcustom.NAME` in Envoy's stats,
 * exported to Prometheus as NAME (a custom stat namespace loses its prefix,
 * and gets no `envoy_`).
 */
const wasmCounters = (labels: Partial<Record<(typeof DOCUMENT_FILTER_COUNTERS)[number], string>>): PanelTarget[] =>
  Object.entries(labels).map(([name, label]) => ({ expr: `sum by (instance) (rate(${name}[${RATE_WINDOW}]))`, legend: `{{instance}} ${label}` }));

/** The document filters' counters (envoy/filters/assembly/metrics.ts): metrics of the sidecars, not of the control plane. */
export const DOCUMENT_FILTER_COUNTERS = [
  'mvproxy_document_answers_merged',
  'mvproxy_document_answers_not_modified',
  'mvproxy_document_answers_local',
  'mvproxy_document_merged_spliced',
  'mvproxy_document_merged_cached',
  'mvproxy_document_failed_open',
] as const;

/** Stats of the ext_proc filter (stat prefix `mvproxy`: documents over the push budget) on the client listener. */
const extProc = (stat: string): string => `sum by (instance) (rate(envoy_http_ext_proc_mvproxy_${stat}{${CLIENT_HCM}}[${RATE_WINDOW}]))`;
const rate = (metric: string, by: string, selector = ''): string => `sum by (${by}) (rate(${metric}${selector}[${RATE_WINDOW}]))`;
const increase = (metric: string, by: string): string => `sum by (${by}) (increase(${metric}[${RATE_WINDOW}]))`;

/** The row of the kubernetes Service's publisher: its series exist only on replicas with kubernetesService.publish. */
export const PUBLISHER_ROW = 'kubernetes Service publication';

export const DASHBOARD_ROWS: readonly RowSpec[] = [
  {
    title: 'Rerouting and 503s',
    panels: [
      {
        title: 'Rerouted requests by resource and code',
        description:
          "Requests a sidecar sent to a peer apiserver because its own does not serve the resource (apiserver_rerouted_request_total, from the sidecars' access-log stream).",
        unit: 'reqps',
        targets: [{ expr: rate('apiserver_rerouted_request_total', 'group, version, resource, code'), legend: '{{group}}/{{version}} {{resource}} {{code}}' }],
      },
      {
        title: '503s by reason',
        description:
          'Requests answered 503: unavailable = the resource is served only by apiservers that are unreachable or left recently (the sidecar answers with a Status and Retry-After); no_healthy_peer, connect, overflow, reset = Envoy could not get an answer from a peer. Timeouts are 504s (next panel).',
        unit: 'reqps',
        targets: [{ expr: rate('apiserver_peer_proxy_errors_total', 'type', '{type!="timeout"}'), legend: '{{type}}' }],
      },
      {
        title: 'Peer proxy errors by resource',
        description: 'apiserver_peer_proxy_errors_total by type and resource: which resources fail on their way to a peer, and how.',
        unit: 'reqps',
        targets: [{ expr: rate('apiserver_peer_proxy_errors_total', 'type, group, version, resource'), legend: '{{type}} {{group}}/{{version}} {{resource}}' }],
      },
    ],
  },
  {
    title: 'Apiservers and discovery',
    panels: [
      {
        title: 'Apiservers draining',
        description:
          '1 while an apiserver is drained: by an operator (mvproxy admin drain, or the drain record ConfigMap), or automatically while its /readyz fails (starting, or in its shutdown delay). Sidecars send what a peer also serves to that peer.',
        unit: 'none',
        targets: [
          { expr: 'max by (apiserver) (mvproxy_apiserver_draining)', legend: '{{apiserver}} drained by an operator' },
          { expr: 'max by (apiserver) (1 - mvproxy_apiserver_ready)', legend: '{{apiserver}} not ready (drained automatically)' },
        ],
      },
      {
        title: 'Discovery sync errors by type',
        description:
          "Failed or partly unusable reads of an apiserver's own discovery and OpenAPI index: fetch, timeout, status, parse, too_large. A stopped apiserver shows as fetch errors until it is back.",
        unit: 'short',
        targets: [{ expr: increase('apiserver_peer_discovery_sync_errors_total', 'type'), legend: '{{type}}' }],
      },
      {
        title: 'Merged discovery: cache hits and rebuilds',
        description: 'Peer-aggregated discovery documents answered from the cached merge, and merges rebuilt (after a served set changed).',
        unit: 'reqps',
        targets: [
          { expr: `sum(rate(aggregator_discovery_peer_aggregated_cache_hits_total[${RATE_WINDOW}]))`, legend: 'hits' },
          { expr: `sum(rate(aggregator_discovery_peer_aggregated_cache_misses_total[${RATE_WINDOW}]))`, legend: 'misses' },
        ],
      },
    ],
  },
  {
    title: PUBLISHER_ROW,
    panels: [
      {
        title: 'Publisher state',
        description:
          "Each replica's publisher of the kubernetes Service's endpoints (kubernetesService.publish), by state: starting, publishing, holding (what is published is kept: nothing observed live, or an apiserver still on the lease reconciler) or failing (a read or write of the objects failed, or one is missing). Replicas without publishing export nothing here.",
        unit: 'none',
        targets: [{ expr: 'max by (instance, state) (mvproxy_kubernetes_service_state) == 1', legend: '{{instance}} {{state}}' }],
      },
      {
        title: 'Published addresses by kind',
        description: "Addresses the kubernetes Service's Endpoints list, as each replica last read them: its sidecars', apiservers' own, or others.",
        unit: 'short',
        targets: [{ expr: 'max by (instance, kind) (mvproxy_kubernetes_service_listed_addresses)', legend: '{{instance}} {{kind}}' }],
      },
      {
        title: 'Foreign writes',
        description:
          'Rewrites or deletions of the objects by someone else (an apiserver still on --endpoint-reconciler-type=lease, say), as each replica found them. Above 0 needs a look: an apiserver still on the lease reconciler, say.',
        unit: 'short',
        targets: [{ expr: increase('mvproxy_kubernetes_service_foreign_writes_total', 'instance'), legend: '{{instance}}' }],
      },
      {
        title: 'Time since the last successful write',
        description: 'How long ago each replica last wrote the objects successfully (it writes only when they differ from what it wants).',
        unit: 's',
        targets: [{ expr: 'time() - max by (instance) (mvproxy_kubernetes_service_last_write_success_timestamp_seconds)', legend: '{{instance}}' }],
      },
    ],
  },
  {
    title: 'xDS (per sidecar)',
    panels: [
      {
        title: 'xDS pushes per sidecar',
        description: 'xDS responses the control plane sent, per sidecar (node) and resource type.',
        unit: 'short',
        targets: [{ expr: increase('mvproxy_xds_pushes_total', 'node, type_url'), legend: '{{node}} {{type_url}}' }],
      },
      {
        title: 'xDS ACKs per sidecar',
        description: 'xDS responses each sidecar accepted.',
        unit: 'short',
        targets: [{ expr: increase('mvproxy_xds_acks_total', 'node, type_url'), legend: '{{node}} {{type_url}}' }],
      },
      {
        title: 'xDS NACKs per sidecar',
        description: "xDS responses a sidecar rejected; `mvproxy admin status` shows the last one with Envoy's message. Anything above 0 needs a look.",
        unit: 'short',
        targets: [{ expr: increase('mvproxy_xds_nacks_total', 'node, type_url'), legend: '{{node}} {{type_url}}' }],
      },
      {
        title: 'xDS updates held back per sidecar',
        description:
          'Updates the control plane held back past the ordering timeout because what they depend on (the clusters of new routes, say) was not ACKed by that sidecar (mvproxy_xds_held_back_total): the sidecar keeps its last good config meanwhile, and the control plane logs a warning naming what it waits for. 0 when none ever was.',
        unit: 'short',
        targets: [{ expr: `${increase('mvproxy_xds_held_back_total', 'node, type_url')} or vector(0)`, legend: '{{node}} {{type_url}}' }],
      },
      {
        title: 'Sidecars connected',
        description:
          "ADS streams open from each sidecar to this control plane (mvproxy_xds_streams), and each sidecar's own view of its control-plane connection (Envoy's control_plane.connected_state).",
        unit: 'short',
        targets: [
          { expr: 'sum by (node) (mvproxy_xds_streams)', legend: 'streams from {{node}}' },
          { expr: 'max by (instance) (envoy_control_plane_connected_state)', legend: '{{instance}} connected' },
        ],
      },
      {
        title: 'Config rejected by sidecars (Envoy)',
        description: "Each sidecar's own count of rejected cluster, listener and route updates: the NACKs as Envoy saw them.",
        unit: 'short',
        targets: [
          { expr: increase('envoy_cluster_manager_cds_update_rejected', 'instance'), legend: '{{instance}} clusters' },
          { expr: increase('envoy_listener_manager_lds_update_rejected', 'instance'), legend: '{{instance}} listeners' },
          { expr: increase('envoy_http_rds_update_rejected', 'instance'), legend: '{{instance}} routes' },
        ],
      },
    ],
  },
  {
    title: 'Merged documents (discovery and OpenAPI index)',
    panels: [
      {
        title: 'Merged-document answers (sidecars)',
        description:
          "What each sidecar's document filters answered, from inside Envoy: merged = the merged document it holds replaced the local apiserver's 200; 304 = the client's If-None-Match named its ETag; local = the local apiserver's own answer went through (profile=nopeer, a refusal, no document held yet).",
        unit: 'reqps',
        targets: wasmCounters({
          mvproxy_document_answers_merged: 'merged',
          mvproxy_document_answers_not_modified: '304',
          mvproxy_document_answers_local: 'local',
        }),
      },
      {
        title: 'Merged documents: spliced or cached (sidecars)',
        description:
          "How each sidecar's document filters made the merged documents they answered (200s and 304s): spliced = the local apiserver's document of this request spliced with the peer part (the worker had no merge for this local ETag and peer part yet); cached = the worker's merge, reused because the local ETag and the peer part are unchanged. Mostly cached in steady state; spliced at every request means the local document comes without an ETag or changes all the time.",
        unit: 'reqps',
        targets: wasmCounters({ mvproxy_document_merged_spliced: 'spliced', mvproxy_document_merged_cached: 'cached' }),
      },
      {
        title: 'Document filters failed open (sidecars)',
        description:
          "Requests for which a sidecar's document filter let the local apiserver's 200 through untouched instead of merging (mvproxy_document_failed_open): its body did not parse as the document it should be, was over the filter's size cap, or could not be read. The client got what its apiserver alone would give, without the peers' entries; above 0 needs a look.",
        unit: 'reqps',
        targets: wasmCounters({ mvproxy_document_failed_open: 'failed open' }),
      },
      {
        title: 'Merged documents answered over ext_proc',
        description:
          'Only documents too large to push to the sidecars are asked for per request (0 when every document is pushed): discovery (a merged document), pass (the local document was right), error.',
        unit: 'reqps',
        targets: [{ expr: `${rate('mvproxy_ext_proc_requests_total', 'result')} or vector(0)`, legend: '{{result}}' }],
      },
      {
        title: 'ext_proc answer time',
        description: 'Time the control plane took to answer one merged-document request (the sidecar waits at most its message timeout).',
        unit: 's',
        targets: [
          { expr: `histogram_quantile(0.5, sum by (le) (rate(mvproxy_ext_proc_duration_seconds_bucket[${RATE_WINDOW}])))`, legend: 'p50' },
          { expr: `histogram_quantile(0.99, sum by (le) (rate(mvproxy_ext_proc_duration_seconds_bucket[${RATE_WINDOW}])))`, legend: 'p99' },
        ],
      },
      {
        title: 'ext_proc fallbacks (sidecars)',
        description:
          "Envoy's ext_proc statistics per sidecar: failure_mode_allowed = the sidecar answered with the local apiserver's own document because the control plane did not answer; streams_failed and message_timeouts are the causes.",
        unit: 'reqps',
        targets: [
          { expr: extProc('failure_mode_allowed'), legend: '{{instance}} answered locally' },
          { expr: extProc('streams_failed'), legend: '{{instance}} streams failed' },
          { expr: extProc('message_timeouts'), legend: '{{instance}} timeouts' },
        ],
      },
    ],
  },
  {
    title: 'Envoy sidecars',
    panels: [
      {
        title: 'Upstream requests per cluster',
        description:
          'Requests each sidecar sent per cluster: local (its own apiserver), peer-NAME (rerouted), mvproxy_xds (control plane: ext_proc, xDS, access log).',
        unit: 'reqps',
        targets: [
          {
            expr: rate('envoy_cluster_upstream_rq_total', 'instance, envoy_cluster_name', `{${APISERVER_CLUSTERS}}`),
            legend: '{{instance}} {{envoy_cluster_name}}',
          },
        ],
      },
      {
        title: 'Upstream latency p99 per cluster',
        description: 'Time to the last response byte from each cluster (includes watches and other long requests when they end).',
        unit: 'ms',
        targets: [
          {
            expr: `histogram_quantile(0.99, sum by (instance, envoy_cluster_name, le) (rate(envoy_cluster_upstream_rq_time_bucket{${APISERVER_CLUSTERS}}[${RATE_WINDOW}])))`,
            legend: '{{instance}} {{envoy_cluster_name}}',
          },
        ],
      },
      {
        title: 'Upstream responses by class per cluster',
        description: 'Responses from each cluster by status class.',
        unit: 'reqps',
        targets: [
          {
            expr: rate('envoy_cluster_upstream_rq_xx', 'instance, envoy_cluster_name, envoy_response_code_class', `{${APISERVER_CLUSTERS}}`),
            legend: '{{instance}} {{envoy_cluster_name}} {{envoy_response_code_class}}xx',
          },
        ],
      },
      {
        title: 'Client responses by class',
        description: 'What clients of each sidecar got, by status class (sidecar 503s included).',
        unit: 'reqps',
        targets: [
          {
            expr: rate('envoy_http_downstream_rq_xx', 'instance, envoy_response_code_class', `{${CLIENT_HCM}}`),
            legend: '{{instance}} {{envoy_response_code_class}}xx',
          },
        ],
      },
      {
        title: 'Client connections',
        description: 'Client connections open on each sidecar, and new ones per second.',
        unit: 'short',
        targets: [
          { expr: `sum by (instance) (envoy_http_downstream_cx_active{${CLIENT_HCM}})`, legend: '{{instance}} open' },
          { expr: rate('envoy_http_downstream_cx_total', 'instance', `{${CLIENT_HCM}}`), legend: '{{instance}} new/s' },
        ],
      },
    ],
  },
];
