// Issue 11, part 3: the short upgrade test in every mode. One of three
// v1.36.3 apiservers is upgraded to v1.37.2 and rolled back under continuous
// mixed load, the way each mode is operated; mvproxy must show none of the
// problems, and mode none must show the spurious 404s (proof that the test
// sees the problem at all).
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { ensureComponents, type InstalledComponents } from '../../src/install/index.js';
import type { ModeOutcome } from '../../src/upgradeTest/outcomes.js';
import { NEW_VERSION, OLD_VERSION, runMode } from '../../src/upgradeTest/run.js';
import { renderSvg } from '../../src/upgradeTest/chart.js';

describe('upgrade test (short): one apiserver upgraded and rolled back under load', { timeout: 300_000 }, () => {
  let components: InstalledComponents;
  const results: Partial<Record<'none' | 'upstream' | 'mvproxy', { outcome: ModeOutcome; band: Parameters<typeof renderSvg>[0][number] }>> = {};
  const evidence = (o: ModeOutcome): string => JSON.stringify({ ...o, steps: undefined }, null, 1);

  before(async () => {
    components = await ensureComponents({ kubernetesVersions: [OLD_VERSION, NEW_VERSION], log: () => undefined });
  });

  it('mode none: a client of an old apiserver gets 404 for what the new one serves', async () => {
    const run = await runMode('none', { components, short: true, progress: () => undefined });
    results.none = run;
    assert.ok(run.outcome.spurious_404 > 0, evidence(run.outcome));
    assert.ok((run.outcome.spurious_404_by_resource.storageversionmigrations ?? 0) > 0, evidence(run.outcome));
    assert.ok(run.outcome.requests > 500, 'the load ran');
  });

  it('mode upstream runs to the end and is counted', async () => {
    const run = await runMode('upstream', { components, short: true, progress: () => undefined });
    results.upstream = run;
    assert.ok(run.outcome.requests > 500, evidence(run.outcome));
  });

  it('mode mvproxy: no spurious 404, no lost write, no missed or duplicated watch event, complete discovery, every 5xx with Retry-After', async () => {
    const run = await runMode('mvproxy', { components, short: true, progress: () => undefined });
    results.mvproxy = run;
    const o = run.outcome;
    assert.deepEqual(
      {
        spurious_404: o.spurious_404,
        lost_writes: o.lost_writes,
        missed_watch_events: o.missed_watch_events,
        incomplete_discovery: o.incomplete_discovery,
        errors_5xx_without_retry_after: o.errors_5xx_without_retry_after,
      },
      { spurious_404: 0, lost_writes: 0, missed_watch_events: 0, incomplete_discovery: 0, errors_5xx_without_retry_after: 0 },
      evidence(o),
    );
    assert.ok(o.requests > 500, 'the load ran');
    assert.equal(o.steps.length, 2, 'upgraded and rolled back');
  });

  it('the picture has one band per mode and marks the steps', async () => {
    const bands = (['none', 'upstream', 'mvproxy'] as const).flatMap((m) => (results[m] ? [results[m].band] : []));
    const svg = await renderSvg(bands);
    assert.match(svg, /^<svg/);
    for (const b of bands) assert.ok(svg.includes(`>${b.mode}</text>`), `band ${b.mode}`);
    assert.ok(svg.includes('kas-a out'));
  });
});
