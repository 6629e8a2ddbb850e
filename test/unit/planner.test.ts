// The planner applies the request rules (docs/request-rules.md) per sidecar.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ClusterModel, LocalOnlyGroupVersion } from '../../src/model/cluster.js';
import type { DroppedDiscoveryEntry } from '../../src/model/discovery.js';
import { BATCH, CORE, GRACE_MS, NOW, model, served, type ApiserverSpec } from '../support/clusterModel.js';
import { parseRequestPath } from '../../src/model/requestInfo.js';
import type { RequestDestination, SidecarPlan } from '../../src/planner/plan.js';
import { destinationForRequest, drainedApiservers, planSidecars } from '../../src/planner/planner.js';

function planFor(node: string, m: ClusterModel, draining: string[] = []): SidecarPlan {
  const plan = planSidecars(m, { departedGraceMs: GRACE_MS, draining: new Set(draining) }).find((p) => p.node === node);
  assert.ok(plan, `a plan for ${node}`);
  return plan;
}

function destination(plan: SidecarPlan, path: string, alreadyProxied = false): RequestDestination {
  return destinationForRequest(plan, parseRequestPath(path), { alreadyProxied });
}

const LOCAL: RequestDestination = { kind: 'local' };

describe('planSidecars', () => {
  test('every apiserver gets a plan for its own node, listing all the others as peers', () => {
    const plans = planSidecars(model({ b: { serves: CORE }, a: { serves: CORE }, c: { serves: CORE } }), { departedGraceMs: GRACE_MS });
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

  test('while the local apiserver is unreachable, what it served goes to the peers that serve it', () => {
    const plan = planFor('a', model({ a: { serves: [...CORE, ...BATCH], reachable: false }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/api/v1/namespaces/default/pods'), { kind: 'peers', peers: ['b'] });
  });

  test('while the local apiserver is restarting, what only it served answers 503, not 404', () => {
    const plan = planFor('a', model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: 1000 }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/namespaces/default/jobs'), { kind: 'unavailable', servedBy: ['a'] });
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
    assert.deepEqual(planFor('a', m, ['b']).fallback, { kind: 'peers', peers: ['c'] });
    assert.equal(planFor('a', model({ a: { serves: CORE, reachable: false }, b: { serves: CORE, reachable: false } })).fallback, undefined);
  });

  test('a plan has no fallback while its local apiserver is available', () => {
    assert.equal(planFor('a', model({ a: { serves: CORE }, b: { serves: CORE } })).fallback, undefined);
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
    assert.deepEqual(plan.groupDocuments, [
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
    assert.deepEqual(plan.groupDocuments, [{ group: 'batch', version: 'v2', action: { kind: 'peers', peers: ['a'] } }]);
    assert.deepEqual(destination(plan, '/apis/batch'), LOCAL);
    assert.deepEqual(destination(plan, '/apis/batch/v1'), LOCAL);
    assert.deepEqual(destination(plan, '/apis/batch/v2'), { kind: 'peers', peers: ['a'] });
  });

  test('a group-version partly served locally keeps its discovery documents local', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH] }, b: { serves: [...CORE, served('batch', 'v1', 'jobs')] } }));
    assert.deepEqual(plan.groupDocuments, []);
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
    assert.deepEqual(plan.groupDocuments, []);
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
    assert.deepEqual(plan.routes, []);
    assert.deepEqual(destination(plan, '/apis/batch/v1/namespaces/default/jobs'), LOCAL);
  });

  test('with no peers every request is routed to the local apiserver', () => {
    const plan = planFor('a', model({ a: { serves: CORE } }));
    assert.deepEqual(plan.peers, []);
    assert.deepEqual(plan.routes, []);
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), LOCAL);
  });

  test('a resource served only by reachable peers is rerouted to them, sorted by name (reroute-to-peers)', () => {
    // TestPeerProxiedRequest: b has batch/v1 off.
    const plan = planFor('b', model({ c: { serves: [...CORE, ...BATCH] }, a: { serves: [...CORE, ...BATCH] }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/namespaces/default/jobs'), { kind: 'peers', peers: ['a', 'c'] });
    assert.deepEqual(
      plan.routes.map((r) => [r.group, r.version, r.resource, r.subresource]),
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
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: 1000, reachable: true }, b: { serves: CORE } }));
    assert.deepEqual(destination(plan, '/apis/batch/v1/jobs'), { kind: 'unavailable', servedBy: ['a'] });
  });

  test('a peer whose lease has been gone for the grace period contributes nothing', () => {
    const plan = planFor('b', model({ a: { serves: [...CORE, ...BATCH], leaseGoneForMs: GRACE_MS }, b: { serves: CORE } }));
    assert.deepEqual(plan.routes, []);
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
    assert.deepEqual(plan.routes, []);
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
    assert.deepEqual(plan.routes, [
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
    assert.deepEqual(plan.routes, [
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
    assert.equal(JSON.stringify(planSidecars(m, { departedGraceMs: GRACE_MS })), JSON.stringify(planSidecars(m, { departedGraceMs: GRACE_MS })));
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
    const opts = { departedGraceMs: GRACE_MS };
    assert.equal(JSON.stringify(planSidecars(reversed, opts)), JSON.stringify(planSidecars(forward, opts)));
  });
});

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
    assert.deepEqual(plan.routes, []);
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
    assert.deepEqual(plan.routes, []);
    assert.deepEqual(destination(plan, JOBS), LOCAL);
    assert.deepEqual(destination(plan, SVM), LOCAL);
  });

  test("while the local apiserver's served set is unknown, its discovery documents stay local", () => {
    const plan = planFor('a', model({ a: { serves: [] }, b: { serves: [...CORE, ...BATCH] } }));
    assert.deepEqual(plan.groupDocuments, []);
    assert.equal(plan.fallback, undefined);
  });

  test('while the local apiserver is unreachable, an unknown served set changes nothing: peers take what they serve', () => {
    const plan = planFor('a', model({ a: { serves: [], reachable: false }, b: { serves: [...CORE, ...BATCH] } }));
    assert.deepEqual(destination(plan, JOBS), { kind: 'peers', peers: ['b'] });
  });

  test('a peer whose served set is unknown gets no traffic and puts nothing in a 503', () => {
    const plan = planFor('a', model({ a: { serves: CORE }, b: { serves: [] } }));
    assert.deepEqual(plan.routes, []);
    assert.deepEqual(plan.groupDocuments, []);
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
    assert.deepEqual(plan.routes, []);
    assert.deepEqual(plan.groupDocuments, []);
  });

  test('a group dropped locally keeps every version of it local', () => {
    const batchV2 = served('batch', 'v2', 'jobs');
    const m = withDropped(model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH, batchV2] } }), 'a', [{ group: 'batch' }]);
    assert.deepEqual(planFor('a', m).routes, []);
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
