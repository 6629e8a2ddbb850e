import assert from 'node:assert/strict';
import { test } from 'node:test';
import { summarizeRounds } from '../../src/bench/load.js';
import { compareFigures } from '../../src/bench/sides.js';

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
