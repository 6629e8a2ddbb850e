// The planner while an operator drains apiservers: a drain moves traffic, never causes a 503.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { BATCH, CORE, model, served } from '../../support/clusterModel.js';
import { LOCAL, destination, planFor } from '../../support/planLookup.js';
import { resourceRoutesOf } from '../../../src/planner/plan.js';

describe('planSidecars while an operator drains apiservers', () => {
  const JOBS = '/apis/batch/v1/namespaces/default/jobs';
  const PODS = '/api/v1/namespaces/default/pods';

  test("a draining apiserver's own sidecar sends what a peer also serves to that peer", () => {
    const plan = planFor('a', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }), ['a']);
    assert.deepEqual(destination(plan, PODS), { kind: 'peers', peers: ['b'] });
    assert.deepEqual(destination(plan, `${PODS}/web/log`), { kind: 'peers', peers: ['b'] });
  });

  test('a draining apiserver keeps what no other apiserver serves: a drain never causes a 503', () => {
    const plan = planFor('a', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }), ['a']);
    assert.deepEqual(destination(plan, JOBS), LOCAL);
  });

  test('a draining apiserver keeps what only unreachable peers also serve', () => {
    const plan = planFor('a', model({ a: { serves: CORE }, b: { serves: CORE, reachable: false } }), ['a']);
    assert.deepEqual(destination(plan, PODS), LOCAL);
  });

  test('no sidecar chooses a draining peer while another available peer serves the resource', () => {
    const plan = planFor('c', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: [...CORE, ...BATCH] }, c: { serves: CORE } }), ['a']);
    assert.deepEqual(destination(plan, JOBS), { kind: 'peers', peers: ['b'] });
  });

  test('a draining peer still takes what only it serves', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }), ['a']);
    assert.deepEqual(destination(plan, JOBS), { kind: 'peers', peers: ['a'] });
  });

  test('draining a peer changes nothing for what the local apiserver serves', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: [...CORE, ...BATCH] } }), ['a']);
    assert.deepEqual(resourceRoutesOf(plan), []);
  });

  test('a draining apiserver does not hand over to a peer that is draining too', () => {
    const plan = planFor('a', model({ a: { serves: CORE }, b: { serves: CORE } }), ['a', 'b']);
    assert.deepEqual(destination(plan, PODS), LOCAL);
  });

  test('a resource moves only to peers that serve every subresource of it the draining apiserver serves', () => {
    const podsWithoutLog = served('', 'v1', 'pods', ['status']);
    const plan = planFor('a', model({ a: { serves: CORE }, b: { serves: [podsWithoutLog] }, c: { serves: CORE } }), ['a']);
    assert.deepEqual(destination(plan, PODS), { kind: 'peers', peers: ['c'] });
    assert.deepEqual(destination(plan, `${PODS}/web/log`), { kind: 'peers', peers: ['c'] });
    const noSuccessor = planFor('a', model({ a: { serves: CORE }, b: { serves: [podsWithoutLog] } }), ['a']);
    assert.deepEqual(destination(noSuccessor, PODS), LOCAL);
    assert.deepEqual(destination(noSuccessor, `${PODS}/web/log`), LOCAL);
  });

  test('discovery documents of peer-only group-versions prefer peers that are not draining', () => {
    const plan = planFor('c', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: [...CORE, ...BATCH] }, c: { serves: CORE } }), ['a']);
    assert.deepEqual(destination(plan, '/apis/batch/v1'), { kind: 'peers', peers: ['b'] });
  });

  test('once the drained apiserver is down, its resources go where they would without the drain', () => {
    const m = model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: 1000 }, b: { serves: CORE } });
    assert.deepEqual(planFor('a', m, ['a']), planFor('a', m));
  });
});
