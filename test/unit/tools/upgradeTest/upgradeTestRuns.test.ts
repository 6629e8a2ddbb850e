// Repeated runs of the upgrade test: every run's counts kept, totals and
// per-run values side by side, and what each mode is held to.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ledger } from '../../../../src/tools/upgradeTest/ledger.js';
import { judgeMode, type ModeOutcome } from '../../../../src/tools/upgradeTest/outcomes.js';
import { aggregateRuns, breaches, heldTo, INVARIANTS, MVPROXY_CLAIMS } from '../../../../src/tools/upgradeTest/summary.js';
import { upgradeTimeline } from '../../../support/upgradeTimeline.js';

const outcome = (counts: Partial<ModeOutcome>): ModeOutcome => ({
  ...judgeMode(
    { requests: [], watchEvents: [], watchStart: {}, brokenWatches: [], watchesEndedByServer: 0, watchRelists: 0, checks: [], steps: [], durationMs: 0 },
    upgradeTimeline(),
    new Ledger(),
  ),
  ...counts,
});

describe('upgrade test runs', () => {
  it('each count has its total over the runs and every run value in order', () => {
    const summary = aggregateRuns([
      outcome({ spurious_404: 4, requests: 100 }),
      outcome({ spurious_404: 0, requests: 90 }),
      outcome({ spurious_404: 8, requests: 110 }),
    ]);
    assert.deepEqual(summary.spurious_404, { total: 12, runs: [4, 0, 8] });
    assert.deepEqual(summary.requests, { total: 300, runs: [100, 90, 110] });
    assert.deepEqual(summary.watches_broken, { total: 0, runs: [0, 0, 0] });
  });

  it('no runs add up to zero with no values', () => {
    assert.deepEqual(aggregateRuns([]).lost_writes, { total: 0, runs: [] });
  });

  it('a breach names each count held to 0 that is not', () => {
    assert.deepEqual(breaches(outcome({ errors_transport: 2, spurious_404: 3 }), INVARIANTS), { errors_transport: 2 });
    assert.deepEqual(breaches(outcome({}), INVARIANTS), {});
  });

  it('every mode is held to the invariants; only the mvproxy modes to its claims too', () => {
    for (const m of ['none', 'upstream'] as const) assert.deepEqual(heldTo(m), [...INVARIANTS]);
    for (const m of ['mvproxy', 'mvproxy-drain'] as const) assert.deepEqual(heldTo(m), [...INVARIANTS, ...MVPROXY_CLAIMS]);
  });
});
