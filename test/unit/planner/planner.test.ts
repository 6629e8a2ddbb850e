// The planner applies the request rules (docs/request-rules.md) per sidecar.
// Drains, not-ready apiservers and doubtful discovery: plannerDrains, plannerNotReady, plannerDoubt.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ClusterModel, LocalOnlyGroupVersion } from '../../../src/model/cluster.js';
import { BATCH, CORE, GRACE_MS, NOW, model, plannerOptions, served, type ApiserverSpec } from '../../support/clusterModel.js';
import { LOCAL, destination, planFor } from '../../support/planLookup.js';
import { planSidecars } from '../../../src/planner/planner.js';
import { fallbackOf, groupDocumentsOf, resourceRoutesOf } from '../../../src/planner/plan.js';

describe('planSidecars', () => {
  test('every apiserver gets a plan for its own node, listing all the others as peers', () => {
    const m = model({ b: { serves: CORE }, a: { serves: CORE }, c: { serves: CORE } });
    const plans = planSidecars(m, plannerOptions(m));
    assert.deepEqual(
      plans.map((p) => [p.node, p.local.name, p.peers.map((peer) => peer.name)]),
      [
        ['a', 'a', ['b', 'c']],
        ['b', 'b', ['a', 'c']],
        ['c', 'c', ['a', 'b']],
      ],
    );
    assert.deepEqual(plans[0]?.local.address, { host: '10.0.0.2', port: 6443 });
  });

  test('a declared apiserver never seen (no lease, never answered, nothing served) is no peer until it shows up', () => {
    const m = model({ a: { serves: CORE }, b: { serves: CORE }, ghost: { serves: [], reachable: false } });
    const withoutLease = ({ lease: _, ...rest }: ClusterModel['apiservers'][number]) => rest;
    const unseen: ClusterModel = { ...m, apiservers: m.apiservers.map((a) => (a.endpoint.name === 'ghost' ? withoutLease(a) : a)) };
    const peersOf = (mm: ClusterModel, node: string) => planFor(node, mm).peers.map((p) => p.name);
    assert.deepEqual(peersOf(unseen, 'a'), ['b']);
    assert.deepEqual(peersOf(unseen, 'ghost'), ['a', 'b'], 'its own sidecar still plans, over the peers');
    assert.deepEqual(peersOf(m, 'a'), ['b', 'ghost'], 'its lease is enough to be a peer');
  });

  test('while the local apiserver is unreachable, what it served goes to the peers that serve it', () => {
    const plan = planFor('a', model({ a: { serves: [...CORE, ...BATCH], reachable: false }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/api/v1/namespaces/default/pods'), { kind: 'peers', peers: ['b'] });
  });

  test('while the local apiserver is restarting, what only it served answers 503, not 404', () => {
    const plan = planFor('a', model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: 1000 }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/namespaces/default/jobs'), { kind: 'unavailable', servedBy: ['a'] });
  });

  test('every apiserver unreachable at once, their leases standing: what the local apiserver serves stays local', () => {
    // A control plane starved of CPU times out its polls of all of them while they serve.
    const plan = planFor('a', model({ a: { serves: [...CORE, ...BATCH], reachable: false }, b: { serves: CORE, reachable: false } }));
    for (const path of ['/api/v1/namespaces/default/pods', '/apis/batch/v1/namespaces/default/jobs']) assert.deepEqual(destination(plan, path), LOCAL, path);
  });

  test('every apiserver unreachable at once: a resource only peers serve still answers 503', () => {
    const plan = planFor('a', model({ a: { serves: CORE, reachable: false }, b: { serves: [...CORE, ...BATCH], reachable: false } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), { kind: 'unavailable', servedBy: ['b'] });
  });

  test('the local apiserver unreachable after its lease went, with every peer unreachable: what only it served answers 503', () => {
    const plan = planFor('a', model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: 1000, reachable: false }, b: { serves: CORE, reachable: false } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), { kind: 'unavailable', servedBy: ['a'] });
  });

  test('while the local apiserver is down, a resource nobody serves goes to an available peer for its honest 404', () => {
    const plan = planFor('a', model({ a: { serves: CORE, reachable: false }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/widgets.example.com/v1/widgets'), { kind: 'peers', peers: ['b'] });
  });

  test('while the local apiserver is down, what only it would answer (discovery, /version, /openapi) goes to available peers', () => {
    const plan = planFor('a', model({ a: { serves: CORE, leaseGoneForMs: 1000 }, b: { serves: CORE }, c: { serves: CORE, reachable: false } }));
    for (const path of ['/api', '/apis', '/version', '/openapi/v3', '/openapi/v2?timeout=32s', '/.well-known/openid-configuration']) {
      assert.deepEqual(destination(plan, path), { kind: 'peers', peers: ['b'] }, path);
    }
  });

  test('while the local apiserver is down, its health endpoints stay with it: they describe it', () => {
    const plan = planFor('a', model({ a: { serves: CORE, reachable: false }, b: { serves: CORE } }));
    for (const path of ['/healthz', '/livez', '/readyz', '/readyz/etcd', '/livez?verbose']) assert.deepEqual(destination(plan, path), LOCAL, path);
    assert.deepEqual(destination(plan, '/healthzfoo'), { kind: 'peers', peers: ['b'] });
  });

  test('the fallback prefers peers that are not draining, and there is none without an available peer', () => {
    const m = model({ a: { serves: CORE, reachable: false }, b: { serves: CORE }, c: { serves: CORE } });
    assert.deepEqual(fallbackOf(planFor('a', m, ['b'])), { kind: 'peers', peers: ['c'] });
    assert.equal(fallbackOf(planFor('a', model({ a: { serves: CORE, reachable: false }, b: { serves: CORE, reachable: false } }))), undefined);
  });

  test('a plan has no fallback while its local apiserver is available', () => {
    assert.equal(fallbackOf(planFor('a', model({ a: { serves: CORE }, b: { serves: CORE } }))), undefined);
  });

  test('a non-resource request is routed to the local apiserver', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }));
    for (const path of ['/apis', '/api', '/api/v1', '/apis/apps/v1', '/healthz', '/openapi/v3', '/openapi/v3/api/v1', '/openapi/v2']) {
      assert.deepEqual(destination(plan, path), LOCAL, path);
    }
  });

  test('the OpenAPI v3 document of a group-version served only by peers goes to them, whatever its hash', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }));
    for (const path of ['/openapi/v3/apis/batch/v1', '/openapi/v3/apis/batch/v1/', '/openapi/v3/apis/batch/v1?hash=0A1B']) {
      assert.deepEqual(destination(plan, path), { kind: 'peers', peers: ['a'] }, path);
    }
    assert.deepEqual(destination(plan, '/openapi/v3/apis/batch'), LOCAL, 'OpenAPI has no group documents');
  });

  test('the discovery documents of a group-version served only by peers are routed to the peers serving it', () => {
    const plan = planFor('b', model({ c: { serves: [...CORE, ...BATCH] }, a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }));
    assert.deepEqual(groupDocumentsOf(plan), [
      { group: 'batch', action: { kind: 'peers', peers: ['a', 'c'] } },
      { group: 'batch', version: 'v1', action: { kind: 'peers', peers: ['a', 'c'] } },
    ]);
    for (const path of ['/apis/batch', '/apis/batch/', '/apis/batch/v1', '/apis/batch/v1/', '/apis/batch/v1?timeout=32s']) {
      assert.deepEqual(destination(plan, path), { kind: 'peers', peers: ['a', 'c'] }, path);
    }
  });

  test('the group document of a group with a local version stays local; its peer-only version goes to the peer', () => {
    const batchV2 = served('batch', 'v2', 'jobs');
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH, batchV2] }, b: { serves: [...CORE, ...BATCH] } }));
    assert.deepEqual(groupDocumentsOf(plan), [{ group: 'batch', version: 'v2', action: { kind: 'peers', peers: ['a'] } }]);
    assert.deepEqual(destination(plan, '/apis/batch'), LOCAL);
    assert.deepEqual(destination(plan, '/apis/batch/v1'), LOCAL);
    assert.deepEqual(destination(plan, '/apis/batch/v2'), { kind: 'peers', peers: ['a'] });
  });

  test('a group-version partly served locally keeps its discovery documents local', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: [...CORE, served('batch', 'v1', 'jobs')] } }));
    assert.deepEqual(groupDocumentsOf(plan), []);
    assert.deepEqual(destination(plan, '/apis/batch/v1'), LOCAL);
  });

  test('the discovery documents of a group-version served only by unreachable peers are unavailable (503)', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH], reachable: false }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1'), { kind: 'unavailable', servedBy: ['a'] });
    assert.deepEqual(destination(plan, '/apis/batch'), { kind: 'unavailable', servedBy: ['a'] });
  });

  test('local-only group-versions (shared-state-local) get no group-document routes', () => {
    const crd = served('example.com', 'v1', 'widgets');
    const plan = planFor(
      'b',
      model({ a: { serves: [...CORE, crd] }, b: { serves: CORE } }, [{ group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' }]),
    );
    assert.deepEqual(groupDocumentsOf(plan), []);
    assert.deepEqual(destination(plan, '/apis/example.com/v1'), LOCAL);
  });

  test('discovery documents already proxied by a peer are served locally', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1', true), LOCAL);
  });

  test('a request already proxied by a peer is served locally, never proxied again', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs', true), LOCAL);
  });

  test('a resource served locally is routed to the local apiserver (served-locally)', () => {
    const plan = planFor('a', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: [...CORE, ...BATCH] } }));
    assert.deepEqual(resourceRoutesOf(plan), []);
    assert.deepEqual(destination(plan, '/apis/batch/v1/namespaces/default/jobs'), LOCAL);
  });

  test('with no peers every request is routed to the local apiserver', () => {
    const plan = planFor('a', model({ a: { serves: CORE } }));
    assert.deepEqual(plan.peers, []);
    assert.deepEqual(resourceRoutesOf(plan), []);
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), LOCAL);
  });

  test('a resource served only by reachable peers is rerouted to them, sorted by name (reroute-to-peers)', () => {
    // TestPeerProxiedRequest: b has batch/v1 off.
    const plan = planFor('b', model({ c: { serves: [...CORE, ...BATCH] }, a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/namespaces/default/jobs'), { kind: 'peers', peers: ['a', 'c'] });
    assert.deepEqual(
      resourceRoutesOf(plan).map((r) => [r.group, r.version, r.resource, r.subresource]),
      [
        ['batch', 'v1', 'cronjobs', undefined],
        ['batch', 'v1', 'jobs', undefined],
      ],
    );
  });

  test('a resource served by nobody is routed to the local apiserver for an honest 404 (nobody-serves)', () => {
    const plan = planFor('b', model({ a: { serves: CORE }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/example.com/v1/widgets'), LOCAL);
  });

  test('a resource served only by unreachable peers is unavailable: 503 (unavailable-503)', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH], reachable: false }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), { kind: 'unavailable', servedBy: ['a'] });
  });

  test('a resource served only by a peer whose lease left within the grace period is unavailable (unavailable-503)', () => {
    // TestPeerProxiedRequestToThirdServerAfterFirstDies, before c is known: a stopped.
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: GRACE_MS - 1 }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), { kind: 'unavailable', servedBy: ['a'] });
  });

  test('a peer that left recently gets no traffic even while it still answers', () => {
    const plan = planFor(
      'b',
      model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: 1000, reachable: true, answeringForMs: 60_000 }, b: { serves: CORE } }),
    );
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), { kind: 'unavailable', servedBy: ['a'] });
  });

  test('a peer back before its new lease is seen (it stopped answering after its lease went, and answers again) gets its traffic again', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: 5000, answeringForMs: 1000 }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), { kind: 'peers', peers: ['a'] });
  });

  test('a peer back before its new lease, still starting (/readyz failing), gets what only it serves', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: 5000, answeringForMs: 1000, ready: false }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), { kind: 'peers', peers: ['a'] });
  });

  test('a peer whose lease has been gone for the grace period contributes nothing', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: GRACE_MS }, b: { serves: CORE } }));
    assert.deepEqual(resourceRoutesOf(plan), []);
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), LOCAL);
  });

  test('a resource served by a live peer and an unavailable one is rerouted to the live one only', () => {
    // TestPeerProxiedRequestToThirdServerAfterFirstDies: a stopped, c still serves batch.
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: 1000 }, b: { serves: CORE }, c: { serves: [...CORE, ...BATCH] } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), { kind: 'peers', peers: ['c'] });
  });

  test('CRD and APIService group-versions are always local (shared-state-local)', () => {
    const widgets = served('example.com', 'v1', 'widgets');
    const metrics = served('metrics.k8s.io', 'v1beta1', 'pods');
    const plan = planFor(
      'b',
      model({ a: { serves: [...CORE, widgets, metrics] }, b: { serves: CORE } }, [
        { group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' },
        { group: 'metrics.k8s.io', version: 'v1beta1', source: 'APIService' },
      ]),
    );
    assert.deepEqual(resourceRoutesOf(plan), []);
    assert.deepEqual(destination(plan, '/apis/example.com/v1/widgets'), LOCAL);
  });

  test('a deleted CRD group-version stays local until its exclusion ends (shared-state-local)', () => {
    const widgets = served('example.com', 'v1', 'widgets');
    const specs = { a: { serves: [...CORE, widgets] }, b: { serves: CORE } };
    const excludedFor = (ms: number): LocalOnlyGroupVersion[] => [
      { group: 'example.com', version: 'v1', source: 'CustomResourceDefinition', excludedUntil: NOW + ms },
    ];
    assert.deepEqual(destination(planFor('b', model(specs, excludedFor(1))), '/apis/example.com/v1/widgets'), LOCAL);
    assert.deepEqual(destination(planFor('b', model(specs, excludedFor(0))), '/apis/example.com/v1/widgets'), {
      kind: 'peers',
      peers: ['a'],
    });
  });

  test('a subresource only a peer serves is rerouted on its own, its resource stays local', () => {
    const plan = planFor(
      'b',
      model({ a: { serves: [served('', 'v1', 'pods', ['ephemeralcontainers', 'log'])] }, b: { serves: [served('', 'v1', 'pods', ['log'])] } }),
    );
    assert.deepEqual(resourceRoutesOf(plan), [
      { group: '', version: 'v1', resource: 'pods', subresource: 'ephemeralcontainers', action: { kind: 'peers', peers: ['a'] } },
    ]);
    assert.deepEqual(destination(plan, '/api/v1/namespaces/default/pods/p1/ephemeralcontainers'), { kind: 'peers', peers: ['a'] });
    assert.deepEqual(destination(plan, '/api/v1/namespaces/default/pods/p1/log'), LOCAL);
    assert.deepEqual(destination(plan, '/api/v1/namespaces/default/pods/p1'), LOCAL);
  });

  test('a subresource served by fewer peers than its resource is rerouted to those peers only', () => {
    const plan = planFor(
      'b',
      model({
        a: { serves: [served('batch', 'v1', 'jobs', ['status'])] },
        b: { serves: CORE },
        c: { serves: [served('batch', 'v1', 'jobs', [])] },
      }),
    );
    assert.deepEqual(resourceRoutesOf(plan), [
      { group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['a', 'c'] } },
      { group: 'batch', version: 'v1', resource: 'jobs', subresource: 'status', action: { kind: 'peers', peers: ['a'] } },
    ]);
  });

  test('a subresource served only by an unavailable peer is unavailable even where its resource is local', () => {
    const plan = planFor('b', model({ a: { serves: [served('', 'v1', 'pods', ['resize'])], reachable: false }, b: { serves: [served('', 'v1', 'pods')] } }));
    assert.deepEqual(destination(plan, '/api/v1/namespaces/x/pods/p/resize'), { kind: 'unavailable', servedBy: ['a'] });
    assert.deepEqual(destination(plan, '/api/v1/namespaces/x/pods/p'), LOCAL);
  });

  test('planning the same model twice gives identical plans', () => {
    const m = model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE, reachable: false }, c: { serves: [...BATCH] } });
    assert.equal(JSON.stringify(planSidecars(m, plannerOptions(m))), JSON.stringify(planSidecars(m, plannerOptions(m))));
  });

  test('the order of apiservers and served resources does not change the plans', () => {
    const specs: Record<string, ApiserverSpec> = {
      a: { serves: [...CORE, ...BATCH] },
      b: { serves: [served('', 'v1', 'pods', ['log'])] },
      c: { serves: [...BATCH, served('', 'v1', 'pods', ['ephemeralcontainers', 'log'])] },
    };
    const forward = model(specs);
    const reversed: ClusterModel = {
      ...forward,
      apiservers: [...forward.apiservers]
        .reverse()
        .map((a) => ({ ...a, servedSet: [...a.servedSet].reverse().map((s) => ({ ...s, subresources: [...s.subresources].reverse() })) })),
    };
    const opts = plannerOptions(forward);
    assert.equal(JSON.stringify(planSidecars(reversed, opts)), JSON.stringify(planSidecars(forward, opts)));
  });
});
