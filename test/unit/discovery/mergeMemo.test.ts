// Merges reused across reconciles (src/discovery/mergeMemo.ts): the same
// inputs, as the same objects, give the merge already made; any input that
// differs gives a new one.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ApiserverObservation, ClusterModel } from '../../../src/model/cluster.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import type { MergedDiscovery } from '../../../src/discovery/merge.js';
import { mergeDiscovery } from '../../../src/discovery/merge.js';
import { memoizedMerge } from '../../../src/discovery/mergeMemo.js';
import { BATCH, CORE, MIGRATION, NOW, discoveryOf, model } from '../../support/reconcileFixtures.js';

const GRACE_MS = 300_000;
/** The merge options of a model: its standings under the departed grace. */
const grace = (m: ClusterModel) => ({ standings: apiserverStandings(m, GRACE_MS) });

function mergeTwice(first: ClusterModel, second: ClusterModel, node = 'kas-a'): { before: MergedDiscovery; after: MergedDiscovery } {
  const previous = new Map<string, MergedDiscovery>();
  const before = memoizedMerge(node, first, first.now, grace(first), previous, undefined);
  const after = memoizedMerge(node, second, second.now, grace(second), new Map(), previous);
  return { before, after };
}

/** The model with one apiserver changed. */
function changed(m: ClusterModel, name: string, change: (a: ApiserverObservation) => ApiserverObservation): ClusterModel {
  return { ...m, apiservers: m.apiservers.map((a) => (a.endpoint.name === name ? change(a) : a)) };
}

describe('memoizedMerge', () => {
  test('gives what mergeDiscovery gives', () => {
    const m = model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH] });
    assert.deepEqual(memoizedMerge('kas-a', m, m.now, grace(m), new Map(), undefined), mergeDiscovery('kas-a', m, m.now, grace(m)));
  });

  test("reuses the last reconcile's merge when every input is the same object, in a fresh model and later", () => {
    const m = model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH] });
    const fresh: ClusterModel = {
      ...m,
      now: NOW + 5000,
      apiservers: m.apiservers.map((a) => ({ ...a, lease: { ...(a.lease as NonNullable<ApiserverObservation['lease']>), renewTime: NOW + 4000 } })),
    };
    const { before, after } = mergeTwice(m, fresh);
    assert.equal(after, before);
  });

  test("merges again when a peer's discovery is a new object", () => {
    const m = model({ 'kas-a': CORE, 'kas-b': CORE });
    const { before, after } = mergeTwice(
      m,
      changed(m, 'kas-b', (a) => ({ ...a, discovery: discoveryOf([...CORE, ...MIGRATION]) })),
    );
    assert.notEqual(after, before);
    assert.deepEqual(
      after.groups.items.map((g) => g.metadata.name),
      ['storagemigration.k8s.io'],
    );
  });

  test('merges again when a peer is gone past the grace', () => {
    const m = model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH] });
    const gone = changed(m, 'kas-b', ({ lease: _, ...a }) => ({ ...a, leaseGoneAt: NOW - GRACE_MS - 1 }));
    const { before, after } = mergeTwice(m, gone);
    assert.notEqual(after, before);
    assert.deepEqual(after.sources, ['kas-a']);
  });

  test('merges again when the local-only group-versions change', () => {
    const m = model({ 'kas-a': [...CORE, ...BATCH], 'kas-b': [...CORE, ...BATCH] });
    const { before, after } = mergeTwice(m, { ...m, localOnly: [{ group: 'batch', version: 'v1', source: 'CustomResourceDefinition' }] });
    assert.notEqual(after, before);
  });

  test('keys on the local apiserver: two sidecars never share a merge', () => {
    const m = model({ 'kas-a': CORE, 'kas-b': CORE });
    const current = new Map<string, MergedDiscovery>();
    const a = memoizedMerge('kas-a', m, m.now, grace(m), current, undefined);
    const b = memoizedMerge('kas-b', m, m.now, grace(m), current, undefined);
    assert.notEqual(a, b);
    assert.equal(a.local, m.apiservers[0]?.discovery);
    assert.equal(b.local, m.apiservers[1]?.discovery);
  });

  test('holds only what the current reconcile used', () => {
    const m = model({ 'kas-a': CORE, 'kas-b': CORE });
    const previous = new Map<string, MergedDiscovery>();
    memoizedMerge('kas-a', m, m.now, grace(m), previous, undefined);
    memoizedMerge('kas-b', m, m.now, grace(m), previous, undefined);
    const current = new Map<string, MergedDiscovery>();
    memoizedMerge('kas-a', m, m.now, grace(m), current, previous);
    assert.equal(current.size, 1);
  });
});
