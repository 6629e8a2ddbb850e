import assert from 'node:assert/strict';
import { test } from 'node:test';
import { summarizeRounds } from '../../../../src/tools/bench/load.js';
import { compareFigures } from '../../../../src/tools/bench/sides.js';
import { summarizeDiscovery } from '../../../../src/tools/bench/summary.js';

const round = (latenciesMs: number[], seconds: number, generatorCpuSeconds?: number) => ({
  requests: latenciesMs.length,
  errors: 0,
  seconds,
  latenciesMs,
  ...(generatorCpuSeconds === undefined ? {} : { generatorCpuSeconds }),
});

test('rounds pool into percentiles and throughput; CPU per request from the side and the generator', () => {
  const s = summarizeRounds([round([1, 2, 3, 4], 1, 0.001), round([5, 6, 7, 8], 1, 0.003)], 0.008);
  assert.equal(s.p50, 4);
  assert.equal(s.p99, 8);
  assert.equal(s.throughput, 4);
  assert.equal(s.cpuMicrosPerRequest, 1000);
  assert.equal(s.generatorCpuMicrosPerRequest, 500);
  // h2load reports no latencies: no percentiles rather than NaN.
  const h = summarizeRounds([{ requests: 10, errors: 1, seconds: 2, latenciesMs: [] }]);
  assert.equal(h.p50, undefined);
  assert.equal(h.throughput, 5);
});

test('ratios: the candidate over every other side, pooled and round by round', () => {
  const side = (p50: number, throughput: number) => ({ p50, p99: p50 * 2, throughput, requests: 100, errors: 0 });
  const figures = compareFigures(
    {
      sides: { mvproxy: side(2, 300), upstream: side(4, 100), direct: side(1, 600) },
      rounds: [
        { mvproxy: side(2, 300), upstream: side(4, 100), direct: side(1, 600) },
        { mvproxy: side(3, 200), upstream: side(4, 100), direct: side(1, 400) },
      ],
    },
    'mvproxy',
  );
  assert.deepEqual(Object.keys(figures.ratios), ['upstream', 'direct']);
  assert.equal(figures.ratios['upstream']?.p50Ratio, 0.5);
  assert.equal(figures.ratios['upstream']?.throughputRatio, 3);
  assert.deepEqual(figures.ratios['upstream']?.p50RatioByRound, [0.5, 0.75]);
  assert.deepEqual(figures.ratios['direct']?.throughputRatioByRound, [0.5, 0.5]);
  assert.deepEqual(figures.sides['direct'], { p50Ms: 1, p99Ms: 2, rps: 600, requests: 100, errors: 0 });
});

test('the discovery floor is the minimal Envoy on the same request: minimal over direct, from the same rounds', () => {
  const side = (p50: number, throughput: number) => ({ p50, p99: p50 * 2, throughput, requests: 100, errors: 0 });
  const four = { mvproxy: side(0.66, 1200), upstream: side(0.44, 2000), direct: side(0.44, 2000), minimal: side(0.6, 1600) };
  const apis = {
    sides: {},
    latency: compareFigures({ sides: four, rounds: [four] }, 'mvproxy'),
    throughput: { '64': compareFigures({ sides: four, rounds: [four] }, 'mvproxy') },
  };
  const get = { latency: compareFigures({ sides: { sidecar: side(1.2, 1), direct: side(1, 1) }, rounds: [] }, 'sidecar') };
  const summary = summarizeDiscovery({ minimalEnvoy: { ...get, throughput: get.latency }, apisJson: apis, apisProtobuf: apis, inFlightHigh: '64' });
  assert.equal(summary['minimal_envoy_apis_json_p50_ratio'], 1.36);
  assert.equal(summary['apis_json_p50_vs_upstream'], 1.5);
  assert.equal(summary['apis_json_p50_vs_minimal_envoy'], 1.1);
  assert.equal(summary['apis_json_p50_over_minimal_envoy'], 1.1);
  assert.equal(summary['minimal_envoy_apis_json_throughput_ratio'], 0.8);
  assert.equal(summary['apis_json_throughput_over_minimal_envoy'], 0.75);
  // The earlier floor, a locally served GET: kept under its own name.
  assert.equal(summary['apis_json_p50_over_minimal_envoy_get'], 1.25);
});
