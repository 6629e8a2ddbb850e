// The discovery paths' figures: Envoy's counters read into connections per
// 1,000 requests, the changed-document samples into ratios over the floor,
// and the flat summary keys the documents render.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changedFigures, type Tally } from '../../../../src/tools/bench/changedDocument.js';
import type { CountedMeasurement, DocumentPathsMeasurement } from '../../../../src/tools/bench/documentPaths.js';
import { summarizeDocumentPaths } from '../../../../src/tools/bench/documentPathsSummary.js';
import { connectionCount, parseCounters } from '../../../../src/tools/bench/envoyCounters.js';
import { compareFigures } from '../../../../src/tools/bench/sides.js';

describe("Envoy's counters", () => {
  it('reads the whole-number lines of /stats and leaves histograms out', () => {
    const text = [
      'cluster.local-h1.upstream_cx_total: 12',
      'http.apiserver.downstream_rq_total: 3000',
      'cluster.local-h1.upstream_rq_time: P0(nan,1.0) P25(nan,2.1)',
      '',
    ].join('\n');
    assert.deepEqual(parseCounters(text), { 'cluster.local-h1.upstream_cx_total': 12, 'http.apiserver.downstream_rq_total': 3000 });
  });

  it('counts the connections every apiserver cluster opened per 1,000 requests of the listener', () => {
    const before = { 'cluster.local-h1.upstream_cx_total': 2, 'cluster.local.upstream_cx_total': 1, 'http.apiserver.downstream_rq_total': 100 };
    const after = { 'cluster.local-h1.upstream_cx_total': 502, 'cluster.local.upstream_cx_total': 1, 'http.apiserver.downstream_rq_total': 2100 };
    assert.deepEqual(connectionCount(before, after, 'apiserver'), {
      requests: 2000,
      upstreamConnections: 500,
      perThousandRequests: 250,
      byCluster: { 'local-h1': 500 },
      closedWithRequestInFlight: 0,
    });
  });

  it('counts the upstream connections closed with a request in flight apart', () => {
    const before = { 'cluster.apiserver.upstream_cx_destroy_with_active_rq': 10, 'http.bare.downstream_rq_total': 0 };
    const after = {
      'cluster.apiserver.upstream_cx_destroy_with_active_rq': 74,
      'cluster.apiserver.upstream_cx_total': 64,
      'http.bare.downstream_rq_total': 6400,
    };
    const count = connectionCount(before, after, 'bare');
    assert.equal(count.closedWithRequestInFlight, 64);
    assert.equal(count.perThousandRequests, 10);
  });

  it("leaves out the control plane's and the admin interface's clusters", () => {
    const before = { 'cluster.mvproxy_xds.upstream_cx_total': 1, 'cluster.envoy_admin.upstream_cx_total': 0, 'http.bare.downstream_rq_total': 0 };
    const after = { 'cluster.mvproxy_xds.upstream_cx_total': 4, 'cluster.envoy_admin.upstream_cx_total': 9, 'http.bare.downstream_rq_total': 1000 };
    assert.deepEqual(connectionCount(before, after, 'bare'), {
      requests: 1000,
      upstreamConnections: 0,
      perThousandRequests: 0,
      byCluster: {},
      closedWithRequestInFlight: 0,
    });
  });

  it('a cluster that appeared between the readings counts from zero', () => {
    const after = { 'cluster.peer-kas-b-h1.upstream_cx_total': 3, 'http.apiserver.downstream_rq_total': 3 };
    assert.equal(connectionCount({ 'http.apiserver.downstream_rq_total': 0 }, after, 'apiserver').perThousandRequests, 1000);
  });

  it('no request taken: no figure per 1,000 rather than a division by zero', () => {
    assert.equal(connectionCount({}, {}, 'apiserver').perThousandRequests, undefined);
  });
});

const tally = (over: Partial<Tally>): Tally => ({ latencies: [], burstMs: [], burstRequests: 0, burstLatencies: [], errors: 0, listed: 0, ...over });

describe('the changed-document samples', () => {
  it("p50 of the first requests after each change, the candidate's over the floor's", () => {
    const f = changedFigures(tally({ latencies: [3, 1, 2], listed: 2 }), tally({ latencies: [1, 1, 1], listed: 3 }), 'mvproxy', 'minimal');
    assert.equal(f.sides['mvproxy']?.p50Ms, 2);
    assert.equal(f.sides['mvproxy']?.maxMs, 3);
    assert.equal(f.sides['mvproxy']?.listedTheChange, 2);
    assert.equal(f.p50Ratio, 2);
    assert.deepEqual(f.p50RatioBySample, [3, 1, 2]);
  });

  it("a burst's throughput is its requests over the time to its last answer; the ratio is the candidate's over the floor's", () => {
    const f = changedFigures(
      tally({ burstMs: [200, 300], burstRequests: 128, burstLatencies: [5, 6] }),
      tally({ burstMs: [100, 150], burstRequests: 128, burstLatencies: [3, 4] }),
      'mvproxy',
      'minimal',
    );
    assert.equal(f.sides['mvproxy']?.rps, 256);
    assert.equal(f.sides['minimal']?.rps, 512);
    assert.equal(f.throughputRatio, 0.5);
    assert.deepEqual(f.throughputRatioBySample, [0.5, 0.5]);
    assert.equal(f.p50Ratio, undefined);
  });
});

describe('the summary of the discovery paths', () => {
  const side = (p50: number, throughput: number) => ({ p50, p99: p50 * 2, throughput, requests: 100, errors: 0 });
  const counts = (mvproxy: number, minimal: number) => ({
    mvproxy: { requests: 1000, upstreamConnections: mvproxy, perThousandRequests: mvproxy, byCluster: {}, closedWithRequestInFlight: 0 },
    minimal: { requests: 1000, upstreamConnections: minimal, perThousandRequests: minimal, byCluster: {}, closedWithRequestInFlight: 0 },
  });
  const measured = (p50: number, throughput: number, connections: number): CountedMeasurement => {
    const two = { mvproxy: side(p50, throughput), minimal: side(1, 1000) };
    const figures = compareFigures({ sides: two, rounds: [two] }, 'mvproxy');
    return { sides: {}, latency: figures, throughput: { '64': figures }, connections: counts(connections, 1) };
  };
  const changed = changedFigures(
    tally({ latencies: [2], listed: 1, burstMs: [200], burstRequests: 64 }),
    tally({ latencies: [1], burstMs: [100], burstRequests: 64 }),
    'mvproxy',
    'minimal',
  );
  const paths: DocumentPathsMeasurement = {
    accept: {},
    openapiIndex: measured(1.5, 500, 1000),
    apisDoubtfulJson: measured(1.2, 800, 999),
    apisDoubtfulProtobuf: measured(1.1, 900, 998),
    apisChanged: { how: '', samples: 2, burst: 64, sides: {}, formats: { json: changed, protobuf: changed }, connections: counts(40, 2) },
  };
  const summary = summarizeDocumentPaths({ apisJson: measured(1, 1000, 0), apisProtobuf: measured(1, 1000, 0.5), paths, inFlightHigh: '64' });

  it('each path as mvproxy over the minimal Envoy: p50 at one in flight, throughput at the high in-flight count', () => {
    assert.equal(summary['openapi_index_p50_vs_minimal_envoy'], 1.5);
    assert.equal(summary['openapi_index_throughput_vs_minimal_envoy'], 0.5);
    assert.equal(summary['apis_doubtful_protobuf_p50_vs_minimal_envoy'], 1.1);
    assert.equal(summary['apis_changed_json_p50_vs_minimal_envoy'], 2);
    assert.equal(summary['apis_changed_protobuf_throughput_vs_minimal_envoy'], 0.5);
  });

  it('upstream connections per 1,000 requests of every path, the sidecar and the minimal Envoy', () => {
    assert.equal(summary['apis_json_upstream_cx_per_1000'], 0);
    assert.equal(summary['apis_protobuf_upstream_cx_per_1000'], 0.5);
    assert.equal(summary['openapi_index_upstream_cx_per_1000'], 1000);
    assert.equal(summary['openapi_index_upstream_cx_per_1000_minimal_envoy'], 1);
    assert.equal(summary['apis_changed_upstream_cx_per_1000'], 40);
  });

  it("the share of the sidecar's first answers after a change that listed it, both formats", () => {
    assert.equal(summary['apis_changed_listed_share'], 1);
  });
});
