// Renderers of the benchmark's committed runs (docs/bench-*.json), for docs/benchmark.md.
import { type FigureLine, fixed, header, kilobytes, line, megabytes, ms, percentile, ratio, type Reader, row, seconds } from './figureRegions.js';

/** The fan-out's targets, set when the fan-out bench was written: p99 of a change within 1 s, the replica's peak RSS within 150 MB. */
export const FANOUT_TARGET_P99_MS = 1000;
export const FANOUT_TARGET_PEAK_RSS_MB = 150;
/** Merged discovery's targets against the floor (the minimal Envoy): p50 within 1.1x, throughput at least 0.9x. */
export const DISCOVERY_TARGET_P50_RATIO = 1.1;
export const DISCOVERY_TARGET_THROUGHPUT_RATIO = 0.9;
/** The in-flight count of the discovery throughput figures (`summary.*_throughput_*`). */
const DISCOVERY_HIGH_IN_FLIGHT = 64;

/** A figure of the summary, with its range over the runs when the JSON combines several (`mvproxy-dev regenerate`: median, then min–max). */
function summaryFigure(r: Reader, key: string, format: (v: number) => string): string {
  const median = format(r.num(`summary.${key}`));
  if (!r.has(`spread.${key}`)) return median; // one run: no range to give
  return `${median} (${format(r.num(`spread.${key}.min`))}–${format(r.num(`spread.${key}.max`))})`;
}

export const summaryRatio = (r: Reader, key: string): string => summaryFigure(r, key, ratio);

/** Which run the JSON's details (samples, phases) come from, when it combines several: " (run 1 of 3)". */
const detailsRun = (r: Reader): string => (r.has('details_from_run') ? ` (run ${r.num('details_from_run')} of ${r.num('valid_runs')})` : '');

/** A figure's largest value over the runs (its only value when the JSON holds one run). */
const largestOverRuns = (r: Reader, key: string): number => r.num(r.has(`spread.${key}`) ? `spread.${key}.max` : `summary.${key}`);

const met = (ok: boolean): string => (ok ? 'met' : 'not met');
const NONE = '–';

/** mvproxy over upstream's Mixed Version Proxy, side by side: one row per request. */
export function sideBySideVsUpstream(json: unknown): FigureLine[] {
  const requests: [string, string, boolean][] = [
    ['rerouted GET (a resource only the peer serves)', 'rerouted', true],
    ['rerouted LIST', 'rerouted_list', true],
    ['locally served GET', 'local', false],
    ['merged `/apis`, JSON', 'apis_json', false],
    ['merged `/apis`, protobuf', 'apis_protobuf', false],
  ];
  return [
    ...header(['request', 'p50', 'p99', 'throughput, 64 in flight']),
    ...requests.map(([label, key, hasP99]) =>
      line(json, (r) =>
        row([
          label,
          summaryRatio(r, `${key}_p50_vs_upstream`),
          hasP99 ? summaryRatio(r, `${key}_p99_vs_upstream`) : NONE,
          summaryRatio(r, `${key}_throughput_vs_upstream`),
        ]),
      ),
    ),
  ];
}

/** The sidecar and the minimal Envoy over direct access to the same apiserver, with Envoy's CPU per request. */
export function sideBySideVsDirect(json: unknown): FigureLine[] {
  const paths: [string, string, string | undefined][] = [
    ['locally served GET through the sidecar', 'local_%_vs_direct', undefined],
    ['the sidecar, token client', 'local_token_%_ratio', 'token'],
    ['the sidecar, client certificate', 'local_cert_%_ratio', 'cert'],
    ['the minimal Envoy (router only, TLS both sides)', 'minimal_envoy_%_ratio', 'minimal'],
  ];
  return [
    ...header(['path', 'p50', 'throughput', "Envoy's CPU per request"]),
    ...paths.map(([label, key, cpu]) =>
      line(json, (r) =>
        row([
          label,
          summaryRatio(r, `${key.replace('%', 'p50')}`),
          summaryRatio(r, `${key.replace('%', 'throughput')}`),
          cpu ? `${r.num(`summary.envoy_cpu_us_per_request_${cpu}`)} µs` : NONE,
        ]),
      ),
    ),
    fixed(''),
    fixed(
      'Throughput: the first row by h2load over HTTP/2 at 64 in flight, as in the table above; the others by the Node generator over HTTP/1.1 keep-alive at 8 in flight.',
    ),
    line(json, (r) => `The sidecar's p50 ratio over the minimal Envoy's (token client): ${summaryRatio(r, 'local_vs_minimal_envoy_p50_ratio')}.`),
    line(
      json,
      (r) =>
        `The load generator (h2load) used at most ${r.num('summary.h2load_cpu_us_per_request_max')} µs of CPU per request and ${r.num('summary.h2load_core_share_max')} of a core.`,
    ),
  ];
}

const plain = (v: number): string => String(v);
const triple = (r: Reader, key: string, suffix = ''): string =>
  `${['p50', 'p90', 'max'].map((q) => summaryFigure(r, `${key}_${q}_ms${suffix}`, plain)).join(' / ')} ms`;

/** Convergence, from the triggering event: p50 / p90 / max per kind of change, both proxies. */
export function convergence(json: unknown): FigureLine[] {
  const kinds: [string, string, boolean][] = [
    ['*added*', 'convergence_added', true],
    ['*removed*: no request reaches it', 'convergence_removed', true],
    ['*removed*: every answer settled', 'convergence_removed_settled', true],
    ['*drained* (mvproxy only)', 'convergence_drained', false],
  ];
  return [
    ...header(['change', 'mvproxy p50 / p90 / max', 'upstream p50 / p90 / max', 'samples']),
    ...kinds.map(([label, key, upstream]) =>
      line(json, (r) => row([label, triple(r, key), upstream ? triple(r, key, '_upstream') : NONE, String(r.num(`summary.${key}_samples`))])),
    ),
  ];
}

/** Merged `/apis` against its floor (the minimal Envoy in front of kas-a's own document) and against upstream. */
export function discovery(json: unknown): FigureLine[] {
  const formats = ['json', 'protobuf'] as const;
  const side = { json: 'apisJson', protobuf: 'apisProtobuf' } as const;
  const each = (label: string, cell: (r: Reader, f: (typeof formats)[number]) => string): FigureLine =>
    line(json, (r) => row([label, ...formats.map((f) => cell(r, f))]));
  const targetMet = (r: Reader, f: string): boolean =>
    r.num(`summary.apis_${f}_p50_vs_minimal_envoy`) <= DISCOVERY_TARGET_P50_RATIO &&
    r.num(`summary.apis_${f}_throughput_vs_minimal_envoy`) >= DISCOVERY_TARGET_THROUGHPUT_RATIO;
  return [
    ...header(['`/apis`', 'JSON', 'protobuf']),
    each('p50, mvproxy / the floor', (r, f) => summaryRatio(r, `apis_${f}_p50_vs_minimal_envoy`)),
    each('throughput at 64 in flight, mvproxy / the floor', (r, f) => summaryRatio(r, `apis_${f}_throughput_vs_minimal_envoy`)),
    each(`target (p50 within ${DISCOVERY_TARGET_P50_RATIO}x, throughput at least ${DISCOVERY_TARGET_THROUGHPUT_RATIO}x)`, (r, f) => met(targetMet(r, f))),
    each('p50, mvproxy / upstream', (r, f) => summaryRatio(r, `apis_${f}_p50_vs_upstream`)),
    each('throughput at 64 in flight, mvproxy / upstream', (r, f) => summaryRatio(r, `apis_${f}_throughput_vs_upstream`)),
    each('p50, the floor / kas-a directly', (r, f) => summaryRatio(r, `minimal_envoy_apis_${f}_p50_ratio`)),
    each('p50, mvproxy / upstream, each over its floor', (r, f) => summaryRatio(r, `apis_${f}_p50_over_minimal_envoy`)),
    each('p50, mvproxy / upstream, over the GET floor', (r, f) => summaryRatio(r, `apis_${f}_p50_over_minimal_envoy_get`)),
    each('p50, kas-a directly', (r, f) => ms(r.num([side[f], 'latency', 'sides', 'direct', 'p50Ms']))),
    each("Envoy's CPU per request at 64 in flight, sidecar / minimal Envoy", (r, f) => {
      const cpu = (who: string): number => r.num([side[f], 'throughput', '64', 'sides', who, 'proxyCpuUsPerRequest']);
      return `${cpu('mvproxy')} / ${cpu('minimal')} µs`;
    }),
    fixed(''),
    ...sameDocumentChecks(json),
  ];
}

/**
 * mvproxy's merged documents against upstream's, compared before the timing
 * and again after it (bench.ts `sameDocuments`): one row per path and format.
 */
function sameDocumentChecks(json: unknown): FigureLine[] {
  const when = ['before timing', 'after timing'] as const;
  const compared = ['/api', '/apis'].flatMap((path) => (['JSON', 'protobuf'] as const).map((format) => [path, format] as const));
  return [
    ...header(['mvproxy and upstream, the same document?', ...when]),
    ...compared.map(([path, format]) =>
      line(json, (r) => row([`\`${path}\`, ${format}`, ...when.map((w) => r.str(['checks', `mvproxy and upstream ${path}, ${format}, ${w}`]))])),
    ),
  ];
}

interface FanoutSample {
  withCrds: boolean;
  controlPlaneCpuMs: number;
  nodesChanged: number;
  ms: number;
}

function fanoutSamples(r: Reader): FanoutSample[] {
  const samples = r.value('fanout.samples');
  if (!Array.isArray(samples)) throw new Error('fanout.samples is not an array');
  return samples.map((s: unknown, i) => {
    const sample = s as Partial<FanoutSample>;
    if (typeof sample.controlPlaneCpuMs !== 'number' || typeof sample.ms !== 'number' || typeof sample.nodesChanged !== 'number')
      throw new Error(`fanout.samples.${i} lacks ms, nodesChanged or controlPlaneCpuMs`);
    return { withCrds: sample.withCrds === true, controlPlaneCpuMs: sample.controlPlaneCpuMs, nodesChanged: sample.nodesChanged, ms: sample.ms };
  });
}

const ROUTE_TYPE = 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration';

/** The fan-out to many simulated nodes: timing, the replica's CPU, and the sizes with many CRDs. */
export function fanout(json: unknown): FigureLine[] {
  const timed = (r: Reader): FanoutSample[] => fanoutSamples(r).filter((s) => !s.withCrds);
  const measure = (label: string, value: (r: Reader) => string): FigureLine => line(json, (r) => row([label, value(r)]));
  return [
    ...header(['fan-out', 'value']),
    measure('simulated nodes', (r) => String(r.num('fanout.nodes'))),
    measure('simulated nodes whose config a timed change changes', (r) => [...new Set(timed(r).map((s) => s.nodesChanged))].join(', ')),
    measure('a change, event to last ACK: p50 / p90 / max', (r) => triple(r, 'fanout_200_nodes')),
    measure(`p99, target ${ms(FANOUT_TARGET_P99_MS)}`, (r) => {
      // With 100 changes or fewer a run's p99 by nearest rank is its largest: the target holds only if every run's largest does.
      const changes = r.num('summary.fanout_200_nodes_samples');
      if (changes > 100) throw new Error(`${changes} changes a run: their p99 is no longer their largest, and this row reads the largest`);
      const largest = largestOverRuns(r, 'fanout_200_nodes_max_ms');
      return `${met(largest <= FANOUT_TARGET_P99_MS)}: ${changes} changes a run, whose p99 is their largest, ${ms(largest)} at most`;
    }),
    measure(
      'the push alone, first to last changed node: p50 / max',
      (r) => `${summaryFigure(r, 'fanout_200_nodes_spread_p50_ms', plain)} / ${summaryFigure(r, 'fanout_200_nodes_spread_max_ms', plain)} ms`,
    ),
    measure("the replica's CPU per timed change, p50", (r) => {
      const cpu = percentile(
        timed(r).map((s) => s.controlPlaneCpuMs),
        50,
      );
      return `${seconds(cpu)}${detailsRun(r)}`;
    }),
    measure('CRDs created, over groups', (r) => `${r.num('summary.fanout_crds')} over ${r.num('summary.fanout_crd_groups')}`),
    measure('merged `/apis` then: JSON / protobuf / JSON gzipped', (r) =>
      ['json', 'protobuf', 'json_gzip'].map((k) => kilobytes(r.num(`summary.merged_apis_${k}_bytes`))).join(' / '),
    ),
    measure('largest ECDS response (the documents)', (r) => megabytes(r.num('summary.ecds_largest_response_bytes'))),
    measure('largest RDS response', (r) => kilobytes(r.num(['fanout', 'largestResponseBytes', ROUTE_TYPE]))),
    measure(
      'document push budget, in largest ECDS responses',
      (r) => `${(r.num('summary.document_push_budget_bytes') / r.num('summary.ecds_largest_response_bytes')).toFixed(1)}`,
    ),
    measure('one change with the CRDs, to every node', (r) => summaryFigure(r, 'fanout_200_nodes_2000_crds_ms', seconds)),
    measure("real sidecars' Envoy peak RSS", (r) => {
      const memory = r.value('fanout.sidecarMemory');
      const peaks = Object.values(memory as Record<string, { peakRssMb?: unknown }>).map((m) => Number(m.peakRssMb));
      return `${Math.min(...peaks)} to ${Math.max(...peaks)} MB${detailsRun(r)}`;
    }),
  ];
}

const withinPeakTarget = (mb: number): string => (mb <= FANOUT_TARGET_PEAK_RSS_MB ? 'yes' : 'no');

/** The replica's peak RSS at the end of each phase of the fan-out, against its target. */
export function fanoutMemory(json: unknown): FigureLine[] {
  const phases = line(json, (r) => Object.keys(r.value('fanout.memoryByPhase') as object).join(',')).text.split(',');
  return [
    ...header([`the replica's phase${line(json, detailsRun).text}`, 'peak RSS (VmHWM)', `within ${FANOUT_TARGET_PEAK_RSS_MB} MB`]),
    line(json, (r) => row(['a process with its flags doing nothing (the floor)', `${summaryFigure(r, 'control_plane_floor_rss_mb', plain)} MB`, NONE])),
    ...phases.map((phase) =>
      line(json, (r) => {
        const peak = r.num(['fanout', 'memoryByPhase', phase, 'peakRssMb']);
        return row([phase, `${peak} MB`, withinPeakTarget(peak)]);
      }),
    ),
    line(json, (r) => {
      const largest = largestOverRuns(r, 'control_plane_peak_rss_mb');
      return row(['the whole part: median (range over the runs)', `${summaryFigure(r, 'control_plane_peak_rss_mb', plain)} MB`, withinPeakTarget(largest)]);
    }),
  ];
}

/**
 * Every path of a merged discovery document against its floor (the minimal
 * Envoy in front of the same request of kas-a), with the upstream
 * connections each Envoy opened per 1,000 requests on it
 * (src/tools/bench/documentPaths.ts). A run from before these paths were
 * measured renders one line saying so.
 */
export function discoveryPaths(json: unknown): FigureLine[] {
  if (json === null || typeof json !== 'object' || !('documentPaths' in json)) {
    return [fixed('This run predates these paths: `npm run bench -- --only discovery` measures them.')];
  }
  const paths: [string, string, string][] = [
    ['`/apis`, exact aggregated Accept (revalidated), JSON', 'apis_json', 'apis_json'],
    ['`/apis`, exact aggregated Accept (revalidated), protobuf', 'apis_protobuf', 'apis_protobuf'],
    ['`/openapi/v3`, the OpenAPI v3 index', 'openapi_index', 'openapi_index'],
    ['`/apis`, doubtful Accept, JSON', 'apis_doubtful_json', 'apis_doubtful_json'],
    ['`/apis`, doubtful Accept, protobuf', 'apis_doubtful_protobuf', 'apis_doubtful_protobuf'],
    ['`/apis`, local document changed, JSON', 'apis_changed_json', 'apis_changed'],
    ['`/apis`, local document changed, protobuf', 'apis_changed_protobuf', 'apis_changed'],
  ];
  return [
    ...header([
      'path',
      'p50, mvproxy / the floor',
      `throughput at ${DISCOVERY_HIGH_IN_FLIGHT} in flight, mvproxy / the floor`,
      'upstream connections per 1,000 requests, mvproxy / the floor',
    ]),
    ...paths.map(([label, key, connections]) =>
      line(json, (r) =>
        row([
          label,
          summaryRatio(r, `${key}_p50_vs_minimal_envoy`),
          summaryRatio(r, `${key}_throughput_vs_minimal_envoy`),
          `${r.num(`summary.${connections}_upstream_cx_per_1000`)} / ${r.num(`summary.${connections}_upstream_cx_per_1000_minimal_envoy`)}`,
        ]),
      ),
    ),
    fixed(''),
    line(json, (r) => `Doubtful Accept: \`${r.str('documentPaths.accept.apisDoubtfulJson')}\` and \`${r.str('documentPaths.accept.apisDoubtfulProtobuf')}\`.`),
    line(json, (r) => {
      const first = (format: string, figure: string): number => r.num(['documentPaths', 'apisChanged', 'formats', format, 'sides', 'mvproxy', figure]);
      const listed = first('json', 'listedTheChange') + first('protobuf', 'listedTheChange');
      const samples = first('json', 'latencySamples') + first('protobuf', 'latencySamples');
      return `Local document changed: ${r.num('documentPaths.apisChanged.samples')} changes (a burst of ${r.num('documentPaths.apisChanged.burst')} after every other one); the sidecar's first answer after a change (either format) listed the new group in ${listed} of ${samples}.`;
    }),
  ];
}

/** A count summed over the runs a JSON combines (its only value when it holds one run): a median would hide one run's misses. */
const totalOverRuns = (r: Reader, key: string): number => {
  if (!r.has(`spread.${key}`)) return r.num(`summary.${key}`);
  const runs = r.value(`spread.${key}.runs`);
  if (!Array.isArray(runs)) throw new Error(`spread.${key}.runs is not a list: ${JSON.stringify(runs)}`);
  return runs.reduce((sum: number, _run: unknown, i: number) => sum + r.num(['spread', key, 'runs', String(i)]), 0);
};

/** Runs a JSON combines: its `valid_runs`, or 1 for a single run. */
const runsIn = (r: Reader): number => (r.has('valid_runs') ? r.num('valid_runs') : 1);

/** Freshness (issue 28): a CRD's creation and deletion to every proxy path showing it, and how much later than the apiserver behind each path. */
export function freshness(json: unknown): FigureLine[] {
  const cases: [string, string][] = [
    ['control plane up', 'up'],
    ['control plane paused', 'paused'],
    ['with the CRDs in place', 'crds'],
  ];
  const lag = (r: Reader, key: string, side: string): string => {
    const capped = totalOverRuns(r, `${key}_${side}_capped`);
    const runs = runsIn(r);
    const cappedText = capped === 0 ? '' : ` (${capped} capped${runs > 1 ? ` over ${runs} runs` : ''})`;
    return `${summaryFigure(r, `${key}_${side}_lag_max_ms`, plain)} ms${cappedText}`;
  };
  // Samples timed, summed over the runs; runs made before the bench counted them (`_samples`) say so.
  const samples = (r: Reader, key: string): string =>
    r.has(`summary.${key}_mvproxy_samples`) ? `${totalOverRuns(r, `${key}_mvproxy_samples`)} / ${totalOverRuns(r, `${key}_upstream_samples`)}` : 'not recorded';
  const rows = cases.flatMap(([label, name]) =>
    (['created', 'deleted'] as const).map((change) =>
      line(json, (r) => {
        const key = `freshness_${name}_${change}`;
        return row([
          label,
          change,
          triple(r, `${key}_mvproxy_every`),
          lag(r, key, 'mvproxy'),
          triple(r, `${key}_upstream_every`),
          lag(r, key, 'upstream'),
          triple(r, `${key}_mvproxy_local`),
          samples(r, key),
        ]);
      }),
    ),
  );
  return [
    ...header([
      'case',
      'CRD',
      'mvproxy: every path, p50 / p90 / max',
      'mvproxy: lag, max',
      'upstream: every path',
      'upstream: lag, max',
      'kas-a itself (mvproxy side)',
      'samples, mvproxy / upstream',
    ]),
    ...rows,
    fixed(''),
    line(json, (r) => {
      const concurrencies = Object.keys(r.value('summary') as Record<string, unknown>)
        .map((key) => /^sidecar_rss_mb_concurrency_(\d+)$/.exec(key)?.[1])
        .filter((n): n is string => n !== undefined);
      if (concurrencies.length === 0) throw new Error('no sidecar_rss_mb_concurrency_<n> in the summary: the run measured no memory');
      const each = concurrencies.map(
        (n) =>
          `${summaryFigure(r, `sidecar_rss_mb_concurrency_${n}`, plain)} MB at \`--concurrency ${n}\` (Envoy's allocator: ${summaryFigure(r, `sidecar_allocated_mb_concurrency_${n}`, plain)} MB)`,
      );
      const runs = runsIn(r);
      const over = runs > 1 ? `; each figure the median of ${runs} runs, with their range` : '';
      return `kas-a's sidecar with ${r.num('summary.freshness_crds')} CRDs, RSS: ${each.join(', ')}. Samples planned per case, change and side: ${r.num('summary.freshness_samples')} a run (a deletion is timed only once every path listed the CRD); polls every ${r.num('summary.freshness_poll_ms')} ms after the previous answer${over}.`;
    }),
  ];
}
