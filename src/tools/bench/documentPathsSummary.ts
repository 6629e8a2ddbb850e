// The flat summary of the discovery paths (documentPaths.ts): each path's
// p50 and throughput as mvproxy's sidecar over the minimal Envoy in front of
// the same request (1 is the floor itself; below 1 is less latency, above 1
// more throughput), and the upstream connections each Envoy opened per 1,000
// requests on that path.
import type { ConnectionCount } from './envoyCounters.js';
import type { CountedMeasurement, DocumentPathsMeasurement } from './documentPaths.js';

export interface DocumentPathsSummaryInput {
  /** `/apis` with the exact aggregated Accept (revalidated), from bench.ts's four-sided measurement. */
  apisJson: CountedMeasurement;
  apisProtobuf: CountedMeasurement;
  paths: DocumentPathsMeasurement;
  /** The in-flight key of the throughput figures (64). */
  inFlightHigh: string;
}

/** Pure: the summary keys; absent figures are left out rather than guessed. */
export function summarizeDocumentPaths(m: DocumentPathsSummaryInput): Record<string, number> {
  const out: Record<string, number | undefined> = {};
  const steady: Array<[string, CountedMeasurement]> = [
    ['openapi_index', m.paths.openapiIndex],
    ['apis_doubtful_json', m.paths.apisDoubtfulJson],
    ['apis_doubtful_protobuf', m.paths.apisDoubtfulProtobuf],
  ];
  for (const [key, measured] of steady) {
    out[`${key}_p50_vs_minimal_envoy`] = measured.latency.ratios['minimal']?.p50Ratio;
    out[`${key}_throughput_vs_minimal_envoy`] = measured.throughput[m.inFlightHigh]?.ratios['minimal']?.throughputRatio;
  }
  for (const format of ['json', 'protobuf'] as const) {
    const changed = m.paths.apisChanged.formats[format];
    out[`apis_changed_${format}_p50_vs_minimal_envoy`] = changed.p50Ratio;
    out[`apis_changed_${format}_throughput_vs_minimal_envoy`] = changed.throughputRatio;
  }
  // The sidecar's first answers after a change that listed it, both formats: 1 is never staler than kas-a.
  const firsts = [m.paths.apisChanged.formats.json, m.paths.apisChanged.formats.protobuf].map((f) => f.sides['mvproxy']);
  const answered = firsts.reduce((n, s) => n + (s?.latencySamples ?? 0), 0);
  if (answered > 0) out['apis_changed_listed_share'] = Math.round((firsts.reduce((n, s) => n + (s?.listedTheChange ?? 0), 0) / answered) * 100) / 100;
  const counted: Array<[string, Record<string, ConnectionCount>]> = [
    ['apis_json', m.apisJson.connections],
    ['apis_protobuf', m.apisProtobuf.connections],
    ...steady.map(([key, measured]): [string, Record<string, ConnectionCount>] => [key, measured.connections]),
    ['apis_changed', m.paths.apisChanged.connections],
  ];
  for (const [key, connections] of counted) {
    out[`${key}_upstream_cx_per_1000`] = connections['mvproxy']?.perThousandRequests;
    out[`${key}_upstream_cx_per_1000_minimal_envoy`] = connections['minimal']?.perThousandRequests;
  }
  return Object.fromEntries(Object.entries(out).filter((e): e is [string, number] => e[1] !== undefined && Number.isFinite(e[1])));
}
