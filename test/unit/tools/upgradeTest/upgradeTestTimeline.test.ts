// The upgrade test's timeline: which apiserver is in service when, and what
// its own discovery was observed serving.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { servedOnlyBy, Timeline } from '../../../../src/tools/upgradeTest/timeline.js';
import { NEW_SERVED, OLD_SERVED, upgradeTimeline } from '../../../support/upgradeTimeline.js';

describe('upgrade test timeline', () => {
  const timeline = (): Timeline => {
    const t = upgradeTimeline();
    // kas-a, back at 1.37 since 200, out again at 500.
    t.leave('kas-a', 500);
    return t;
  };

  it('a resource counts as served only if an apiserver in service was observed serving it for the whole request', () => {
    const t = timeline();
    assert.equal(t.servedThroughout('storageversionmigrations', 250, 300), true);
    assert.equal(t.servedThroughout('storageversionmigrations', 150, 250), false, 'kas-a came back during the request');
    assert.equal(t.servedThroughout('storageversionmigrations', 450, 550), false, 'kas-a was being taken out during the request');
    assert.equal(t.servedThroughout('storageversionmigrations', 50, 60), false, 'nobody served it yet');
    assert.equal(t.servedThroughout('configmaps', 150, 250), true, 'kas-b stayed');
  });

  it('between two readings the last one holds; before the first nothing is known to be served', () => {
    const t = new Timeline();
    t.enter('kas-a', 0);
    assert.equal(t.servedThroughout('configmaps', 0, 10), false, 'no reading yet');
    t.observe('kas-a', 5, OLD_SERVED);
    assert.equal(t.servedThroughout('configmaps', 4, 10), false, 'read only after the request began');
    assert.equal(t.servedThroughout('configmaps', 6, 100), true);
    t.observe('kas-a', 50, { resources: new Set(), groups: new Set() });
    assert.equal(t.servedThroughout('configmaps', 6, 100), false, 'read serving nothing during the request');
  });

  it('readings arriving out of order are kept in time order', () => {
    const t = new Timeline();
    t.enter('kas-a', 0);
    t.observe('kas-a', 20, NEW_SERVED);
    t.observe('kas-a', 10, OLD_SERVED);
    assert.equal(t.servedThroughout('storageversionmigrations', 12, 15), false);
    assert.equal(t.servedThroughout('storageversionmigrations', 21, 25), true);
  });

  it('discovery must list the groups observed served throughout the request', () => {
    const t = timeline();
    assert.ok(t.groupsThroughout(250, 300).has('storagemigration.k8s.io'));
    assert.ok(!t.groupsThroughout(50, 300).has('storagemigration.k8s.io'));
  });

  it('records each change of what an apiserver serves, once', () => {
    const changes = timeline().servedChanges();
    assert.deepEqual(
      changes.filter((c) => c.apiserver === 'kas-a').map((c) => [c.t, c.resources.includes('storageversionmigrations'), c.resources.length]),
      [
        [0, false, 4],
        [110, false, 0],
        [180, true, 5],
      ],
    );
  });

  it('the resources only the leaving apiserver serves among those in service are the ones to read back before it goes', () => {
    const t = upgradeTimeline();
    assert.deepEqual(servedOnlyBy(t, 'kas-a', 300), ['storageversionmigrations']);
    assert.deepEqual(servedOnlyBy(t, 'kas-b', 300), []);
    t.observe('kas-b', 310, NEW_SERVED);
    assert.deepEqual(servedOnlyBy(t, 'kas-a', 320), [], 'kas-b serves it too');
  });

  it('an apiserver cannot enter service twice, nor leave when out', () => {
    const t = timeline();
    assert.throws(() => t.leave('kas-a', 600));
    assert.throws(() => t.enter('kas-b', 600));
  });
});
