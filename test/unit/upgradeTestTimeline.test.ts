// The upgrade test's timeline: which apiserver is in service when, serving what.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Timeline } from '../../src/upgradeTest/timeline.js';
import { servedByVersion } from '../../src/upgradeTest/observations.js';

describe('upgrade test timeline', () => {
  const timeline = (): Timeline => {
    const t = new Timeline();
    t.enter('kas-a', 'v1.36.3', servedByVersion('v1.36.3'), 0);
    t.enter('kas-b', 'v1.36.3', servedByVersion('v1.36.3'), 0);
    // kas-a upgraded: out at 100, back at 200 at v1.37.2, out again at 500.
    t.leave('kas-a', 100);
    t.enter('kas-a', 'v1.37.2', servedByVersion('v1.37.2'), 200);
    t.leave('kas-a', 500);
    return t;
  };

  it('storagemigration.k8s.io is served from 1.37 on; the rest by both releases', () => {
    assert.ok(!servedByVersion('v1.36.3').resources.includes('storageversionmigrations'));
    assert.ok(servedByVersion('v1.37.2').resources.includes('storageversionmigrations'));
    assert.ok(servedByVersion('v1.37.2').groups.includes('storagemigration.k8s.io'));
    assert.ok(servedByVersion('v1.36.3').resources.includes('widgets'));
  });

  it('a resource counts as served only if an apiserver in service served it for the whole request', () => {
    const t = timeline();
    assert.equal(t.servedThroughout('storageversionmigrations', 250, 300), true);
    assert.equal(t.servedThroughout('storageversionmigrations', 150, 250), false, 'kas-a came back during the request');
    assert.equal(t.servedThroughout('storageversionmigrations', 450, 550), false, 'kas-a was being taken out during the request');
    assert.equal(t.servedThroughout('storageversionmigrations', 50, 60), false, 'nobody served it yet');
    assert.equal(t.servedThroughout('configmaps', 150, 250), true, 'kas-b stayed');
  });

  it('discovery must list the groups served throughout the request', () => {
    const t = timeline();
    assert.ok(t.groupsThroughout(250, 300).has('storagemigration.k8s.io'));
    assert.ok(!t.groupsThroughout(50, 300).has('storagemigration.k8s.io'));
  });

  it('an apiserver cannot enter service twice, nor leave when out', () => {
    const t = timeline();
    assert.throws(() => t.leave('kas-a', 600));
    assert.throws(() => t.enter('kas-b', 'v1.36.3', servedByVersion('v1.36.3'), 600));
  });
});
