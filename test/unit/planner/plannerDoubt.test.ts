// The planner when the control plane lacks or doubts what an apiserver serves: the route is the local apiserver.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ClusterModel } from '../../../src/model/cluster.js';
import type { DroppedDiscoveryEntry } from '../../../src/model/discovery.js';
import { BATCH, CORE, model, served } from '../../support/clusterModel.js';
import { LOCAL, destination, planFor } from '../../support/planLookup.js';
import { fallbackOf, groupDocumentsOf, resourceRoutesOf } from '../../../src/planner/plan.js';

describe('planSidecars when the control plane lacks or doubts what an apiserver serves', () => {
  const JOBS = '/apis/batch/v1/namespaces/default/jobs';
  const SVM = '/apis/storagemigration.k8s.io/v1/storageversionmigrations';
  const SVMS = [served('storagemigration.k8s.io', 'v1', 'storageversionmigrations', [])];
  const EMPTY = { kind: 'APIGroupDiscoveryList' as const, apiVersion: 'apidiscovery.k8s.io/v2' as const, metadata: {}, items: [] };

  /** `name`'s discovery reports these entries as dropped (its served set stays as the model says). */
  const withDropped = (m: ClusterModel, name: string, dropped: Array<Partial<DroppedDiscoveryEntry>>): ClusterModel => {
    const a = m.apiservers.find((x) => x.endpoint.name === name);
    assert.ok(a);
    a.discovery = {
      core: EMPTY,
      groups: EMPTY,
      dropped: dropped.map((d) => ({ document: '/apis', path: '$', reason: 'test', kind: 'malformed', ...d })),
    };
    return m;
  };

  test('while the local apiserver answers but its served set is unknown, every resource stays local: no reroute, no 503', () => {
    const plan = planFor('a', model({ a: { serves: [] }, b: { serves: [...CORE, ...BATCH] }, c: { serves: [...CORE, ...SVMS], reachable: false } }));
    assert.deepEqual(resourceRoutesOf(plan), []);
    assert.deepEqual(destination(plan, JOBS), LOCAL);
    assert.deepEqual(destination(plan, SVM), LOCAL);
  });

  test("while the local apiserver's served set is unknown, its discovery documents stay local", () => {
    const plan = planFor('a', model({ a: { serves: [] }, b: { serves: [...CORE, ...BATCH] } }));
    assert.deepEqual(groupDocumentsOf(plan), []);
    assert.equal(fallbackOf(plan), undefined);
  });

  test('while the local apiserver is unreachable, an unknown served set changes nothing: peers take what they serve', () => {
    const plan = planFor('a', model({ a: { serves: [], reachable: false }, b: { serves: [...CORE, ...BATCH] } }));
    assert.deepEqual(destination(plan, JOBS), { kind: 'peers', peers: ['b'] });
  });

  test('a peer whose served set is unknown gets no traffic and puts nothing in a 503', () => {
    const plan = planFor('a', model({ a: { serves: CORE }, b: { serves: [] } }));
    assert.deepEqual(resourceRoutesOf(plan), []);
    assert.deepEqual(groupDocumentsOf(plan), []);
  });

  test('a resource the local apiserver lists in a dropped entry stays local although a peer serves it', () => {
    const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', [{ group: 'batch', version: 'v1', resource: 'jobs' }]);
    const plan = planFor('a', m);
    assert.deepEqual(destination(plan, JOBS), LOCAL);
    assert.deepEqual(destination(plan, '/apis/batch/v1/namespaces/default/cronjobs'), { kind: 'peers', peers: ['b'] }, 'its neighbour is not in doubt');
  });

  test('a resource in doubt locally is never a 503, even when only unavailable peers serve it', () => {
    const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH], reachable: false } }), 'a', [
      { group: 'batch', version: 'v1', resource: 'jobs' },
    ]);
    assert.deepEqual(destination(planFor('a', m), JOBS), LOCAL);
  });

  test('a version dropped locally keeps all its resources and its discovery documents local', () => {
    const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', [{ group: 'batch', version: 'v1' }]);
    const plan = planFor('a', m);
    assert.deepEqual(resourceRoutesOf(plan), []);
    assert.deepEqual(groupDocumentsOf(plan), []);
  });

  test('a group dropped locally keeps every version of it local', () => {
    const batchV2 = served('batch', 'v2', 'jobs');
    const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH, batchV2] } }), 'a', [{ group: 'batch' }]);
    assert.deepEqual(resourceRoutesOf(planFor('a', m)), []);
  });

  test('a subresource dropped locally stays local; the resource and its other subresources are routed as before', () => {
    const jobsWithoutStatus = served('batch', 'v1', 'jobs', []);
    const m = withDropped(
      model({ a: { serves: [...CORE, jobsWithoutStatus] }, b: { serves: [...CORE, served('batch', 'v1', 'jobs', ['status', 'scale'])] } }),
      'a',
      [{ group: 'batch', version: 'v1', resource: 'jobs', subresource: 'status' }],
    );
    const plan = planFor('a', m);
    assert.deepEqual(destination(plan, `${JOBS}/j/status`), LOCAL);
    assert.deepEqual(destination(plan, `${JOBS}/j/scale`), { kind: 'peers', peers: ['b'] });
    assert.deepEqual(destination(plan, `${JOBS}/j`), LOCAL);
  });

  test('an entry whose group name could not be read, a named group in /api and a group "" in /apis put nothing in doubt', () => {
    const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH, served('', 'v1', 'services')] } }), 'a', [
      { version: 'v1' },
      { document: '/api', group: 'batch' },
      { document: '/apis', group: '' },
    ]);
    const plan = planFor('a', m);
    assert.deepEqual(destination(plan, JOBS), { kind: 'peers', peers: ['b'] });
    assert.deepEqual(destination(plan, '/api/v1/namespaces/default/services'), { kind: 'peers', peers: ['b'] });
  });

  test('a drained local apiserver keeps what is in doubt: a drain never moves a guess', () => {
    const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', [{ group: 'batch', version: 'v1', resource: 'jobs' }]);
    assert.deepEqual(destination(planFor('a', m, ['a']), JOBS), LOCAL);
  });

  test('the same malformed entry listed by every apiserver (kube-aggregator copies it) leaves the skew routed on every sidecar', () => {
    const aggregated = { group: 'widgets.example.com', version: 'v1', resource: '' };
    let m = model({ old: { serves: [...CORE, ...BATCH] }, new: { serves: [...CORE, ...BATCH, ...SVMS] } }, [
      { group: 'widgets.example.com', version: 'v1', source: 'APIService' },
    ]);
    m = withDropped(withDropped(m, 'old', [aggregated]), 'new', [aggregated]);
    assert.deepEqual(destination(planFor('old', m), SVM), { kind: 'peers', peers: ['new'] });
    assert.deepEqual(destination(planFor('old', m), JOBS), LOCAL);
    assert.deepEqual(destination(planFor('new', m), SVM), LOCAL);
  });
});
