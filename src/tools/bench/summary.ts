// The flat `summary` of `mvproxy-dev bench`: the figures the targets are stated
// in, as plain numbers (convergence's: convergenceProbes.ts convergenceSummary). Ratios are mvproxy (the sidecar) over the other side:
// below 1 is faster latency, above 1 is more throughput.
import { type ComparedFigures, round2, type SideFigures, type SidesMeasurement } from './sides.js';

export interface SummaryInput {
  /** Sidecar vs direct, Node generator. */
  local: { latency: ComparedFigures; throughput: ComparedFigures };
  minimalEnvoy: { latency: ComparedFigures; throughput: ComparedFigures };
  certificate: { latency: ComparedFigures; throughput: ComparedFigures };
  /** mvproxy vs upstream vs direct. */
  reroutedGet: SidesMeasurement;
  reroutedList: SidesMeasurement;
  localGet: SidesMeasurement;
  apisJson: SidesMeasurement;
  apisProtobuf: SidesMeasurement;
  /** The in-flight keys of the throughput figures: the high one (64) is what `*_throughput_vs_upstream` means. */
  inFlightHigh: string;
  inFlightLow: string;
}

/** Pure: the flat summary. Absent figures (a side that reported none) are left out rather than guessed. */
export function summarize(m: SummaryInput): Record<string, number> {
  return { ...summarizeDiscovery(m), ...summarizeRest(m) };
}

/**
 * The merged-discovery figures alone (`bench --only discovery`): against
 * upstream, and that ratio over the minimal Envoy's own cost, the floor of
 * any Envoy hop in front of an in-process cache (1 is the floor itself).
 * The floor is measured on the request itself (`minimal` side: the minimal
 * Envoy in front of kas-a's /apis, same rounds); `*_over_minimal_envoy_get`
 * keep the earlier floor, a locally served GET, for comparison with older runs.
 */
export function summarizeDiscovery(m: Pick<SummaryInput, 'minimalEnvoy' | 'apisJson' | 'apisProtobuf' | 'inFlightHigh'>): Record<string, number> {
  const getP50 = m.minimalEnvoy.latency.ratios['direct']?.p50Ratio;
  const getThroughput = m.minimalEnvoy.throughput.ratios['direct']?.throughputRatio;
  const out: Record<string, number | undefined> = {
    minimal_envoy_p50_ratio: getP50,
    minimal_envoy_throughput_ratio: getThroughput,
  };
  for (const [format, apis] of [
    ['json', m.apisJson],
    ['protobuf', m.apisProtobuf],
  ] as const) {
    const latency = apis.latency.ratios;
    const throughput = apis.throughput[m.inFlightHigh]?.ratios;
    const vsUpstreamP50 = latency['upstream']?.p50Ratio;
    const vsUpstreamThroughput = throughput?.['upstream']?.throughputRatio;
    // minimal over direct: (mvproxy / direct) / (mvproxy / minimal).
    const floorP50 = div(latency['direct']?.p50Ratio, latency['minimal']?.p50Ratio);
    const floorThroughput = div(throughput?.['direct']?.throughputRatio, throughput?.['minimal']?.throughputRatio);
    Object.assign(out, {
      [`minimal_envoy_apis_${format}_p50_ratio`]: floorP50,
      [`minimal_envoy_apis_${format}_throughput_ratio`]: floorThroughput,
      [`apis_${format}_p50_vs_upstream`]: vsUpstreamP50,
      [`apis_${format}_throughput_vs_upstream`]: vsUpstreamThroughput,
      [`apis_${format}_p50_vs_minimal_envoy`]: latency['minimal']?.p50Ratio,
      [`apis_${format}_throughput_vs_minimal_envoy`]: throughput?.['minimal']?.throughputRatio,
      [`apis_${format}_p50_over_minimal_envoy`]: div(vsUpstreamP50, floorP50),
      [`apis_${format}_throughput_over_minimal_envoy`]: div(vsUpstreamThroughput, floorThroughput),
      [`apis_${format}_p50_over_minimal_envoy_get`]: div(vsUpstreamP50, getP50),
      [`apis_${format}_throughput_over_minimal_envoy_get`]: div(vsUpstreamThroughput, getThroughput),
    });
  }
  return Object.fromEntries(Object.entries(out).filter((e): e is [string, number] => e[1] !== undefined && Number.isFinite(e[1])));
}

function summarizeRest(m: SummaryInput): Record<string, number> {
  const out: Record<string, number | undefined> = {
    local_token_p50_ratio: m.local.latency.ratios['direct']?.p50Ratio,
    local_cert_p50_ratio: m.certificate.latency.ratios['direct']?.p50Ratio,
    local_token_throughput_ratio: m.local.throughput.ratios['direct']?.throughputRatio,
    local_cert_throughput_ratio: m.certificate.throughput.ratios['direct']?.throughputRatio,
    cert_vs_token_p50_ratio: div(m.certificate.latency.ratios['direct']?.p50Ratio, m.local.latency.ratios['direct']?.p50Ratio),
    cert_vs_token_throughput_ratio: div(m.certificate.throughput.ratios['direct']?.throughputRatio, m.local.throughput.ratios['direct']?.throughputRatio),
    local_vs_minimal_envoy_p50_ratio: div(m.local.latency.ratios['direct']?.p50Ratio, m.minimalEnvoy.latency.ratios['direct']?.p50Ratio),
    envoy_cpu_us_per_request_token: m.local.throughput.sides['sidecar']?.proxyCpuUsPerRequest,
    envoy_cpu_us_per_request_cert: m.certificate.throughput.sides['sidecar']?.proxyCpuUsPerRequest,
    envoy_cpu_us_per_request_minimal: m.minimalEnvoy.throughput.sides['sidecar']?.proxyCpuUsPerRequest,

    rerouted_p50_ratio: m.reroutedGet.latency.ratios['direct']?.p50Ratio,
    rerouted_p50_vs_upstream: m.reroutedGet.latency.ratios['upstream']?.p50Ratio,
    rerouted_p99_vs_upstream: m.reroutedGet.latency.ratios['upstream']?.p99Ratio,
    rerouted_throughput_vs_upstream: m.reroutedGet.throughput[m.inFlightHigh]?.ratios['upstream']?.throughputRatio,
    [`rerouted_throughput_${m.inFlightLow}_vs_upstream`]: m.reroutedGet.throughput[m.inFlightLow]?.ratios['upstream']?.throughputRatio,
    rerouted_throughput_vs_direct: m.reroutedGet.throughput[m.inFlightHigh]?.ratios['direct']?.throughputRatio,
    rerouted_list_p50_vs_upstream: m.reroutedList.latency.ratios['upstream']?.p50Ratio,
    rerouted_list_p99_vs_upstream: m.reroutedList.latency.ratios['upstream']?.p99Ratio,
    rerouted_list_throughput_vs_upstream: m.reroutedList.throughput[m.inFlightHigh]?.ratios['upstream']?.throughputRatio,
    [`rerouted_list_throughput_${m.inFlightLow}_vs_upstream`]: m.reroutedList.throughput[m.inFlightLow]?.ratios['upstream']?.throughputRatio,
    local_p50_vs_upstream: m.localGet.latency.ratios['upstream']?.p50Ratio,
    local_p50_vs_direct: m.localGet.latency.ratios['direct']?.p50Ratio,
    local_throughput_vs_upstream: m.localGet.throughput[m.inFlightHigh]?.ratios['upstream']?.throughputRatio,
    local_throughput_vs_direct: m.localGet.throughput[m.inFlightHigh]?.ratios['direct']?.throughputRatio,
    h2load_cpu_us_per_request_max: maxGenerator([m.reroutedGet, m.reroutedList, m.localGet, m.apisJson, m.apisProtobuf], (s) => s.generatorCpuUsPerRequest),
    // CPU time over wall time: 0.25 is a quarter of one core busy in h2load while the servers had the rest.
    h2load_core_share_max: maxGenerator([m.reroutedGet, m.reroutedList, m.localGet, m.apisJson, m.apisProtobuf], (s) =>
      s.generatorCpuUsPerRequest === undefined ? undefined : round2((s.generatorCpuUsPerRequest * s.rps) / 1e6),
    ),
  };
  return Object.fromEntries(Object.entries(out).filter((e): e is [string, number] => e[1] !== undefined && Number.isFinite(e[1])));
}

function div(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : round2(a / b);
}

/** The largest figure of h2load's over every throughput run of every side: it shows whether the generator could have been the limit. */
function maxGenerator(measurements: SidesMeasurement[], figure: (s: SideFigures) => number | undefined): number | undefined {
  const values = measurements.flatMap((m) =>
    Object.values(m.throughput).flatMap((t) =>
      Object.values(t.sides).flatMap((s) => {
        const v = figure(s);
        return v === undefined ? [] : [v];
      }),
    ),
  );
  return values.length > 0 ? Math.max(...values) : undefined;
}
