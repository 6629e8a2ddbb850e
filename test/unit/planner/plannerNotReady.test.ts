// The planner with apiservers that fail /readyz: drained automatically while reachable.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ClusterModel } from '../../../src/model/cluster.js';
import { BATCH, CORE, model } from '../../support/clusterModel.js';
import { LOCAL, destination, planFor } from '../../support/planLookup.js';
import { drainedApiservers } from '../../../src/planner/planner.js';

describe('planSidecars with apiservers that fail /readyz (starting, or in their shutdown delay)', () => {
  const PODS = '/api/v1/namespaces/default/pods';
  const notReady = (m: ClusterModel, name: string): ClusterModel => {
    const a = m.apiservers.find((x) => x.endpoint.name === name);
    assert.ok(a);
    a.ready = false;
    return m;
  };

  test("a not-ready apiserver's own sidecar sends what a ready peer also serves to that peer", () => {
    const plan = planFor('a', notReady(model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }), 'a'));
    assert.deepEqual(destination(plan, PODS), { kind: 'peers', peers: ['b'] });
    assert.deepEqual(destination(plan, '/apis/batch/v1/namespaces/default/jobs'), LOCAL, 'what only it serves stays: no 503');
  });

  test('no sidecar chooses a not-ready peer while a ready one serves the resource', () => {
    const plan = planFor('c', notReady(model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: [...CORE, ...BATCH] }, c: { serves: CORE } }), 'a'));
    assert.deepEqual(destination(plan, '/apis/batch/v1/namespaces/default/jobs'), { kind: 'peers', peers: ['b'] });
  });

  test('not ready counts only while the apiserver is reachable: an unreachable one is judged as unreachable', () => {
    const m = notReady(model({ a: { serves: CORE, reachable: false }, b: { serves: CORE } }), 'a');
    assert.deepEqual([...drainedApiservers(m)], []);
  });

  test('operator drains and not-ready apiservers are drained together', () => {
    const m = notReady(model({ a: { serves: CORE }, b: { serves: CORE }, c: { serves: CORE } }), 'c');
    assert.deepEqual([...drainedApiservers(m, new Set(['a']))].sort(), ['a', 'c']);
  });
});
