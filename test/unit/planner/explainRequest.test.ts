// Why a request goes where it goes (explainRequest), as the admin API's
// Explain answers it: the destination, the rule and a reason naming the
// apiservers and discovery entries behind it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ClusterModel, LocalOnlyGroupVersion } from '../../../src/model/cluster.js';
import type { DroppedDiscoveryEntry } from '../../../src/model/discovery.js';
import { BATCH, CORE, model, served } from '../../support/clusterModel.js';
import { planFor } from '../../support/planLookup.js';
import { explainRequest } from '../../../src/planner/explain.js';

describe('explainRequest', () => {
  const explain = (m: ClusterModel, sidecar: string, path: string, opts: { draining?: string[]; peerProxied?: boolean } = {}) =>
    explainRequest({ plan: planFor(sidecar, m, opts.draining), model: m, draining: new Set(opts.draining ?? []) }, path, {
      peerProxied: opts.peerProxied ?? false,
    });

  test('a resource the local apiserver serves stays local: served-locally', () => {
    const e = explain(model({ a: { serves: CORE }, b: { serves: CORE } }), 'a', '/api/v1/namespaces/default/pods');
    assert.deepEqual(e.destination, { kind: 'local' });
    assert.match(e.reason, /\(rule served-locally\)$/);
    assert.match(e.reason, /local apiserver a serves v1 pods/);
    assert.equal(e.request.resource, 'pods');
    assert.equal(e.request.namespace, 'default');
  });

  test('a resource only peers serve goes to them, naming them: reroute-to-peers', () => {
    const e = explain(
      model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] }, c: { serves: [...CORE, ...BATCH] } }),
      'a',
      '/apis/batch/v1/namespaces/ns/jobs/j',
    );
    assert.deepEqual(e.destination, { kind: 'peers', peers: ['b', 'c'] });
    assert.match(e.reason, /does not serve batch\/v1 jobs/);
    assert.match(e.reason, /b, c/);
    assert.match(e.reason, /\(rules reroute-to-peers, retry-connect-only\)$/);
  });

  test('a resource of an unreachable local apiserver goes to the peers that serve it: reroute-to-peers', () => {
    const e = explain(model({ a: { serves: CORE, reachable: false }, b: { serves: CORE } }), 'a', '/api/v1/pods');
    assert.deepEqual(e.destination, { kind: 'peers', peers: ['b'] });
    assert.match(e.reason, /local apiserver a is unavailable/);
    assert.match(e.reason, /: b \(rules reroute-to-peers, retry-connect-only\)$/);
  });

  test('every apiserver unreachable at once: the local resource stays local, and the reason says the polls may be at fault', () => {
    const e = explain(model({ a: { serves: CORE, reachable: false }, b: { serves: CORE, reachable: false } }), 'a', '/api/v1/pods');
    assert.deepEqual(e.destination, { kind: 'local' });
    assert.match(e.reason, /every apiserver looks unreachable while its lease stands.*\(rule served-locally\)$/);
  });

  test('a resource of a draining local apiserver goes to peers, and the reason says draining', () => {
    const e = explain(model({ a: { serves: CORE }, b: { serves: CORE } }), 'a', '/api/v1/namespaces/ns/pods/p/log', { draining: ['a'] });
    assert.deepEqual(e.destination, { kind: 'peers', peers: ['b'] });
    assert.match(e.reason, /local apiserver a is draining/);
    assert.match(e.reason, /v1 pods\/log/);
    assert.match(e.reason, /: b;/);
  });

  test('a draining local apiserver that is also unreachable is explained as unavailable, not as draining', () => {
    const e = explain(model({ a: { serves: CORE, reachable: false }, b: { serves: CORE } }), 'a', '/api/v1/namespaces/ns/pods', { draining: ['a', 'b'] });
    assert.deepEqual(e.destination, { kind: 'peers', peers: ['b'] });
    assert.match(e.reason, /local apiserver a is unavailable/);
  });

  test('a draining local apiserver keeps what no undrained available peer serves, and says so: served-locally', () => {
    const e = explain(model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }), 'a', '/apis/batch/v1/jobs', { draining: ['a'] });
    assert.deepEqual(e.destination, { kind: 'local' });
    assert.match(e.reason, /it is draining, but no available peer/);
    assert.match(e.reason, /\(rule served-locally\)$/);
  });

  test('a resource nobody serves stays local for its 404: nobody-serves', () => {
    const e = explain(model({ a: { serves: CORE }, b: { serves: CORE } }), 'a', '/apis/example.com/v1/widgets');
    assert.deepEqual(e.destination, { kind: 'local' });
    assert.match(e.reason, /no apiserver serves example\.com\/v1 widgets/);
    assert.match(e.reason, /\(rule nobody-serves\)$/);
  });

  test('a resource served only by an unreachable peer is unavailable, naming it: unavailable-503', () => {
    const e = explain(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH], reachable: false } }), 'a', '/apis/batch/v1/namespaces/ns/cronjobs');
    assert.deepEqual(e.destination, { kind: 'unavailable', servedBy: ['b'] });
    assert.match(e.reason, /\(b: unreachable/);
    assert.match(e.reason, /\(rule unavailable-503\)$/);
  });

  test('a CRD group-version in model.localOnly stays local even when only a peer lists it: shared-state-local', () => {
    const crd: LocalOnlyGroupVersion = { group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' };
    const m = model({ a: { serves: CORE }, b: { serves: [...CORE, served('example.com', 'v1', 'widgets')] } }, [crd]);
    const e = explain(m, 'a', '/apis/example.com/v1/namespaces/ns/widgets/w');
    assert.deepEqual(e.destination, { kind: 'local' });
    assert.match(e.reason, /example\.com\/v1 is served from a CustomResourceDefinition/);
    assert.match(e.reason, /\(rule shared-state-local\)$/);
  });

  test('a request already proxied by a peer stays local, never proxied twice', () => {
    const e = explain(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', '/apis/batch/v1/jobs', { peerProxied: true });
    assert.deepEqual(e.destination, { kind: 'local' });
    assert.match(e.reason, /already proxied by a peer/);
    assert.match(e.reason, /never proxied twice/);
  });

  test('a non-resource path stays local', () => {
    const e = explain(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', '/healthz?verbose');
    assert.deepEqual(e.destination, { kind: 'local' });
    assert.equal(e.request.isResourceRequest, false);
    assert.match(e.reason, /^not a resource request: the local apiserver a answers it \(rule not-a-resource\)$/);
  });

  test('the discovery document of a group-version only peers serve goes to them', () => {
    const e = explain(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', '/apis/batch/v1');
    assert.deepEqual(e.destination, { kind: 'peers', peers: ['b'] });
    assert.equal(e.request.isResourceRequest, false);
    assert.match(e.reason, /serves nothing in \/apis\/batch\/v1; a peer that does answers it: b \(rules peer-only-document, retry-connect-only\)$/);
  });

  describe("a request kept local because the local apiserver's discovery is in doubt", () => {
    const EMPTY = { kind: 'APIGroupDiscoveryList' as const, apiVersion: 'apidiscovery.k8s.io/v2' as const, metadata: {}, items: [] };
    const JOBS_ENTRY: Partial<DroppedDiscoveryEntry> = {
      group: 'batch',
      version: 'v1',
      resource: 'jobs',
      path: '$.items[1].versions[0].resources[0]',
      reason: 'expected "Cluster" or "Namespaced", got "Global"',
    };
    /** `name`'s discovery reports these entries as dropped (its served set stays as the model says). */
    const withDropped = (m: ClusterModel, name: string, dropped: Array<Partial<DroppedDiscoveryEntry>>): ClusterModel => {
      const a = m.apiservers.find((x) => x.endpoint.name === name);
      assert.ok(a);
      a.discovery = { core: EMPTY, groups: EMPTY, dropped: dropped.map((d) => ({ document: '/apis', path: '$', reason: 'test', kind: 'malformed', ...d })) };
      return m;
    };

    test('a resource the local apiserver lists in a dropped entry is explained by that entry, not as nobody-serves', () => {
      const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', [JOBS_ENTRY]);
      const e = explain(m, 'a', '/apis/batch/v1/namespaces/ns/jobs/j');
      assert.deepEqual(e.destination, { kind: 'local' });
      assert.equal(
        e.reason,
        'the local apiserver a\'s own discovery of batch/v1 jobs could not be read (dropped entry /apis $.items[1].versions[0].resources[0]: expected "Cluster" or "Namespaced", got "Global"): served locally, as without mvproxy (never rerouted on a guess, never a 503) (rule doubt-stays-local)',
      );
      assert.equal(e.rule, 'doubt-stays-local');
    });

    test('a resource in doubt that only unreachable peers serve is explained by the doubt, not as a 503', () => {
      const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH], reachable: false } }), 'a', [JOBS_ENTRY]);
      const e = explain(m, 'a', '/apis/batch/v1/jobs');
      assert.deepEqual(e.destination, { kind: 'local' });
      assert.match(e.reason, /own discovery of batch\/v1 jobs could not be read/);
    });

    test('a resource in doubt on a drained local apiserver is explained by the doubt', () => {
      const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', [JOBS_ENTRY]);
      const e = explain(m, 'a', '/apis/batch/v1/jobs', { draining: ['a'] });
      assert.deepEqual(e.destination, { kind: 'local' });
      assert.match(e.reason, /own discovery of batch\/v1 jobs could not be read/);
    });

    test('only the dropped entries that cover the request are named', () => {
      const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', [
        { group: 'batch', version: 'v1', resource: 'cronjobs', path: '$.items[1].versions[0].resources[1]' },
        { group: 'batch', version: 'v1', path: '$.items[1].versions[0].freshness', reason: 'expected "Current" or "Stale", got 7' },
        { group: 'apps', path: '$.items[2]' },
      ]);
      const e = explain(m, 'a', '/apis/batch/v1/jobs');
      assert.match(e.reason, /\(dropped entry \/apis \$\.items\[1\]\.versions\[0\]\.freshness: expected "Current" or "Stale", got 7\)/);
      assert.doesNotMatch(e.reason, /resources\[1\]|items\[2\]/);
    });

    test('of many dropped entries covering a request, three are named and the rest counted', () => {
      const entries = Array.from({ length: 5 }, (_, i) => ({ group: 'batch', version: 'v1', resource: 'jobs', path: `$.items[${i}]` }));
      const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', entries);
      const e = explain(m, 'a', '/apis/batch/v1/jobs');
      assert.equal((e.reason.match(/dropped entry/g) ?? []).length, 3);
      assert.match(e.reason, /; and 2 more\)/);
    });

    test('a resource listed only in an entry too long to route is explained as not routable', () => {
      const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', [
        { ...JOBS_ENTRY, kind: 'unroutable', reason: 'too long' },
      ]);
      const e = explain(m, 'a', '/apis/batch/v1/jobs');
      assert.match(e.reason, /own discovery of batch\/v1 jobs cannot be routed on \(dropped entry .*: too long\)/);
    });

    test("while the local apiserver's served set is unknown, a resource only a peer serves is explained by the missing discovery", () => {
      const e = explain(model({ a: { serves: [] }, b: { serves: [...CORE, ...BATCH] } }), 'a', '/apis/batch/v1/jobs');
      assert.deepEqual(e.destination, { kind: 'local' });
      assert.match(
        e.reason,
        /^mvproxy has no usable discovery of the local apiserver a \(none read yet, only unreadable documents, or nothing routable in them\)/,
      );
      assert.match(e.reason, /served locally, as without mvproxy/);
    });

    test('the discovery documents of a group-version in doubt locally are explained by the doubt', () => {
      const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } }), 'a', [
        { group: 'batch', version: 'v1', path: '$.items[1].versions[0]' },
      ]);
      for (const path of ['/apis/batch/v1', '/openapi/v3/apis/batch/v1']) {
        const e = explain(m, 'a', path);
        assert.deepEqual(e.destination, { kind: 'local' }, path);
        assert.match(
          e.reason,
          /^the local apiserver a's own discovery of batch\/v1 could not be read \(dropped entry \/apis \$\.items\[1\]\.versions\[0\]: test\)/,
          path,
        );
        assert.ok(e.reason.includes(`: ${path} is answered locally, as without mvproxy`), e.reason);
      }
    });

    test('a dropped entry of another resource leaves a resource nobody serves at nobody-serves', () => {
      const m = withDropped(model({ a: { serves: CORE }, b: { serves: CORE } }), 'a', [JOBS_ENTRY]);
      const e = explain(m, 'a', '/apis/example.com/v1/widgets');
      assert.match(e.reason, /no apiserver serves example\.com\/v1 widgets/);
      assert.match(e.reason, /\(rule nobody-serves\)$/);
    });

    test('while the local apiserver is unreachable its doubts keep nothing local: peers take what they serve', () => {
      const m = withDropped(model({ a: { serves: CORE, reachable: false }, b: { serves: [...CORE, ...BATCH] } }), 'a', [JOBS_ENTRY]);
      const e = explain(m, 'a', '/apis/batch/v1/jobs');
      assert.deepEqual(e.destination, { kind: 'peers', peers: ['b'] });
      assert.doesNotMatch(e.reason, /discovery/);
    });
  });

  test('the discovery document of a group-version the local apiserver serves stays local', () => {
    const e = explain(model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: [...CORE, ...BATCH] } }), 'a', '/apis/batch/v1');
    assert.deepEqual(e.destination, { kind: 'local' });
    assert.match(e.reason, /^not a resource request/);
  });
});
