// The freshness bench's figures (src/tools/bench/freshnessProbes.ts): a
// sample's time to every path and its lag behind the apiserver behind each
// path, capped samples counted at the cap, and the flat summary.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changeFigures, everyPathMs, type FreshnessSample, freshnessSummary, lagMs } from '../../../../src/tools/bench/freshnessProbes.js';
import { freshness } from '../../../../src/tools/docs/benchFigures.js';

const CAP = 10_000;
const sample = (a: [number | undefined, number | undefined], b: [number | undefined, number | undefined]): FreshnessSample => ({
  change: 'created',
  group: 'g.example',
  paths: [
    { apiserver: 'kas-a', ...(a[0] === undefined ? {} : { ownMs: a[0] }), ...(a[1] === undefined ? {} : { throughMs: a[1] }) },
    { apiserver: 'kas-b', ...(b[0] === undefined ? {} : { ownMs: b[0] }), ...(b[1] === undefined ? {} : { throughMs: b[1] }) },
  ],
});

/** A run's summary, without its memory figures: the same samples for every case, change and side. */
const runSummary = (samples: FreshnessSample[]): Record<string, number> => {
  const f = changeFigures(samples, 'kas-a', CAP);
  const sides = { mvproxy: { created: f, deleted: f }, upstream: { created: f, deleted: f } };
  return { freshness_samples: samples.length, freshness_poll_ms: 10, freshness_crds: 2000, ...freshnessSummary({ up: sides, paused: sides, crds: sides }) };
};

describe('freshness figures', () => {
  it('a sample takes until its slowest path showed the change', () => {
    assert.equal(everyPathMs(sample([100, 120], [300, 310]), CAP), 310);
  });

  it("the lag is the largest delay of a path behind its own apiserver, not behind kas-a's", () => {
    // kas-b's path is the latest, but only 10 ms after kas-b itself; kas-a's is 20 ms after kas-a.
    assert.equal(lagMs(sample([100, 120], [300, 310]), CAP), 20);
  });

  it('a path answering before its apiserver was polled showing it has a negative lag (no staler than the apiserver)', () => {
    assert.equal(lagMs(sample([100, 90], [100, 95]), CAP), -5);
  });

  it('a path that never showed the change counts at the cap and the sample as capped', () => {
    const capped = sample([100, undefined], [120, 130]);
    assert.equal(everyPathMs(capped, CAP), CAP);
    assert.equal(lagMs(capped, CAP), CAP - 100);
    const f = changeFigures([capped, sample([100, 110], [100, 110])], 'kas-a', CAP);
    assert.equal(f.capped, 1);
    assert.equal(f.every.maxMs, CAP);
    assert.deepEqual(f.local, { samples: 2, p50Ms: 100, p90Ms: 100, maxMs: 100 });
  });

  it('the summary names every figure by case, change and side', () => {
    const f = changeFigures([sample([100, 110], [100, 120])], 'kas-a', CAP);
    const summary = freshnessSummary({ paused: { mvproxy: { created: f } } });
    assert.equal(summary['freshness_paused_created_mvproxy_every_p50_ms'], 120);
    assert.equal(summary['freshness_paused_created_mvproxy_lag_max_ms'], 20);
    assert.equal(summary['freshness_paused_created_mvproxy_local_p90_ms'], 100);
    assert.equal(summary['freshness_paused_created_mvproxy_capped'], 0);
  });

  it('the summary counts the samples timed per case, change and side', () => {
    const summary = freshnessSummary({
      crds: {
        upstream: {
          created: changeFigures([sample([1, 2], [1, 2]), sample([1, 2], [1, 2])], 'kas-a', CAP),
          deleted: changeFigures([sample([1, 2], [1, 2])], 'kas-a', CAP),
        },
      },
    });
    assert.equal(summary['freshness_crds_created_upstream_samples'], 2);
    assert.equal(summary['freshness_crds_deleted_upstream_samples'], 1);
  });

  it("docs/benchmark.md's freshness table renders every case and change from a run's JSON, capped samples named, and the memory at each worker count", () => {
    // The sidecar's memory at each worker count, as the bench puts it in the summary.
    const memory = {
      sidecar_rss_mb_concurrency_2: 106,
      sidecar_allocated_mb_concurrency_2: 16,
      sidecar_rss_mb_concurrency_16: 140,
      sidecar_allocated_mb_concurrency_16: 26,
    };
    const summary = { ...runSummary([sample([100, 110], [100, 120]), sample([100, undefined], [100, 120])]), ...memory };
    const lines = freshness({ summary }).map((l) => l.text);
    assert.equal(lines.length, 2 + 6 + 2);
    assert.equal(
      lines[2],
      '| control plane up | created | 120 / 10000 / 10000 ms | 9900 ms (1 capped) | 120 / 10000 / 10000 ms | 9900 ms (1 capped) | 100 / 100 / 100 ms | 2 / 2 |',
    );
    assert.match(lines.at(-1) ?? '', /106 MB at `--concurrency 2`.*140 MB at `--concurrency 16`/);
  });

  it('the samples column sums each side over the runs a JSON combines, and says when a run did not count them', () => {
    const summary = { ...runSummary([sample([100, 110], [100, 120])]), sidecar_rss_mb_concurrency_2: 1, sidecar_allocated_mb_concurrency_2: 1 };
    const runs = (values: number[]) => ({ min: Math.min(...values), max: Math.max(...values), runs: values });
    const combined = {
      summary,
      valid_runs: 3,
      spread: { freshness_up_created_mvproxy_samples: runs([30, 30, 30]), freshness_up_created_upstream_samples: runs([30, 26, 30]) },
    };
    assert.match(freshness(combined).map((l) => l.text)[2] ?? '', /\| 90 \/ 86 \|$/);
    const before = Object.fromEntries(Object.entries(summary).filter(([key]) => !/_(mvproxy|upstream)_samples$/.test(key)));
    assert.match(freshness({ summary: before }).map((l) => l.text)[2] ?? '', /\| not recorded \|$/);
  });

  it('a freshness JSON without the memory figures is an error, not a table with no memory', () => {
    assert.throws(() => freshness({ summary: runSummary([sample([100, 110], [100, 120])]) }), /no sidecar_rss_mb_concurrency_/);
  });
});
