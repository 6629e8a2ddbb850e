// The admin API's pure parts: the GetStatus answer (adminStatus) and why a
// request goes where it goes (explainRequest).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ApiserverObservation, ClusterModel, LocalOnlyGroupVersion } from '../../src/model/cluster.js';
import type { DroppedDiscoveryEntry } from '../../src/model/discovery.js';
import { BATCH, CORE, GRACE_MS, NOW, model, served } from '../support/clusterModel.js';
import type { SidecarPlan } from '../../src/planner/plan.js';
import { planSidecars } from '../../src/planner/planner.js';
import { explainRequest } from '../../src/planner/explain.js';
import { adminStatus } from '../../src/servers/admin.js';
import type { AdsNodeStatus, AdsTypeStatus } from '../../src/servers/ads.js';
import type { SidecarSyncReport } from '../../src/model/syncReport.js';
import { PUSH_ORDER, TYPE_URL, type ResourceTypeUrl } from '../../src/xds/snapshot.js';

function plans(m: ClusterModel, draining: string[] = []): SidecarPlan[] {
  return planSidecars(m, { departedGraceMs: GRACE_MS, draining: new Set(draining) });
}

function planFor(node: string, m: ClusterModel, draining: string[] = []): SidecarPlan {
  const plan = plans(m, draining).find((p) => p.node === node);
  assert.ok(plan, `a plan for ${node}`);
  return plan;
}

function status(
  m: ClusterModel,
  options: { ads?: Record<string, AdsNodeStatus>; draining?: string[]; plans?: SidecarPlan[]; reports?: Map<string, SidecarSyncReport> } = {},
) {
  return adminStatus({
    model: m,
    plans: options.plans ?? plans(m, options.draining),
    // A node's sidecar is its own name unless the test says otherwise.
    ads: Object.fromEntries(Object.entries(options.ads ?? {}).map(([id, n]) => [id, { ...n, sidecar: n.sidecar || id }])),
    draining: new Set(options.draining ?? []),
    departedGraceMs: GRACE_MS,
    replica: 'replica-here',
    reports: options.reports ?? new Map(),
  });
}

/** Desired versions of a snapshot: one per type, tagged. */
function versions(tag: string): Record<ResourceTypeUrl, string> {
  return Object.fromEntries(PUSH_ORDER.map((url, i) => [url, `${tag}-${i}`])) as Record<ResourceTypeUrl, string>;
}

/** A node that has ACKed every type of `snapshot`; `types` overrides single types. */
function node(
  snapshot: Record<ResourceTypeUrl, string>,
  opts: { connected?: number; sidecar?: string; types?: Partial<Record<ResourceTypeUrl, AdsTypeStatus>> } = {},
): AdsNodeStatus {
  const types: Partial<Record<ResourceTypeUrl, AdsTypeStatus>> = {};
  for (const url of PUSH_ORDER) types[url] = { versionSent: snapshot[url], versionAcked: snapshot[url], subscribed: [] };
  return { sidecar: opts.sidecar ?? '', connected: opts.connected ?? 1, snapshot, types: { ...types, ...opts.types } };
}

describe('adminStatus: apiservers', () => {
  test('lists apiservers sorted by name with hostname, address, lease holder, reachability and resource count', () => {
    const s = status(model({ b: { serves: CORE, reachable: false }, a: { serves: [...CORE, ...BATCH] }, c: { serves: [], leaseGoneForMs: 1000 } }));
    assert.deepEqual(
      s.apiservers?.map((a) => [a.name, a.hostname, a.address, a.lease_holder_identity, a.reachable, a.served_resources]),
      [
        ['a', 'host-a', '10.0.0.2:6443', 'a-1', true, 4],
        ['b', 'host-b', '10.0.0.1:6443', 'b-1', false, 2],
        ['c', 'host-c', '10.0.0.3:6443', '', true, 0],
      ],
    );
  });

  test('an IPv6 address is shown in brackets', () => {
    const s = status(model({ a: { serves: CORE, host: 'fd00::1' } }));
    assert.equal(s.apiservers?.[0]?.address, '[fd00::1]:6443');
  });

  test('standing: available when reachable, unavailable when unreachable or left within the grace period, gone after it', () => {
    const s = status(
      model({
        up: { serves: CORE },
        down: { serves: CORE, reachable: false },
        leaving: { serves: CORE, leaseGoneForMs: GRACE_MS - 1 },
        left: { serves: CORE, leaseGoneForMs: GRACE_MS },
      }),
    );
    assert.deepEqual(Object.fromEntries(s.apiservers?.map((a) => [a.name, a.standing]) ?? []), {
      up: 'available',
      down: 'unavailable',
      leaving: 'unavailable',
      left: 'gone',
    });
  });

  test('ready shows what /readyz last said, empty before it was read', () => {
    const m = model({ a: { serves: CORE }, b: { serves: CORE }, c: { serves: CORE } });
    (m.apiservers[0] as ApiserverObservation).ready = true;
    (m.apiservers[1] as ApiserverObservation).ready = false;
    assert.deepEqual(
      status(m).apiservers?.map((a) => [a.name, a.ready]),
      [
        ['a', 'yes'],
        ['b', 'no'],
        ['c', ''],
      ],
    );
  });

  test('draining is true exactly for the apiservers being drained', () => {
    const s = status(model({ a: { serves: CORE }, b: { serves: CORE }, c: { serves: CORE } }), { draining: ['b'] });
    assert.deepEqual(
      s.apiservers?.map((a) => [a.name, a.draining]),
      [
        ['a', false],
        ['b', true],
        ['c', false],
      ],
    );
  });

  test('group_versions are apiVersion strings ("v1" for the core group), sorted and unique', () => {
    const serves = [
      served('batch', 'v1', 'jobs'),
      served('', 'v1', 'pods'),
      served('autoscaling', 'v2', 'horizontalpodautoscalers'),
      served('apps', 'v1', 'deployments'),
      served('', 'v1', 'namespaces'),
      served('autoscaling', 'v1', 'horizontalpodautoscalers'),
      served('apps', 'v1', 'statefulsets'),
    ];
    const s = status(model({ a: { serves } }));
    assert.deepEqual(s.apiservers?.[0]?.group_versions, ['apps/v1', 'autoscaling/v1', 'autoscaling/v2', 'batch/v1', 'v1']);
  });
});

describe('adminStatus: sidecars', () => {
  const m = model({ a: { serves: CORE }, b: { serves: CORE } });
  const desired = versions('new');

  test('a connected sidecar that ACKed the desired version of every type is in sync, with its versions per type in push order', () => {
    const s = status(m, { ads: { a: node(desired) } });
    const a = s.sidecars?.find((x) => x.node === 'a');
    assert.equal(a?.connected, true);
    assert.equal(a?.in_sync, true);
    assert.deepEqual(
      a?.xds,
      PUSH_ORDER.map((url) => ({ type_url: url, version_desired: desired[url], version_sent: desired[url], version_acked: desired[url], last_nack: '' })),
    );
    assert.equal(a?.replica, '');
  });

  test('a sidecar streaming from another replica is connected via it, in sync when that replica reports the desired versions ACKed', () => {
    const reports = new Map([['a', { replica: 'replica-there', acked: { ...desired }, at: '2026-11-30T22:00:00.000Z' }]]);
    const s = status(m, { ads: { a: node(desired, { connected: 0 }) }, reports });
    const a = s.sidecars?.find((x) => x.node === 'a');
    assert.deepEqual([a?.connected, a?.in_sync, a?.replica, a?.reported_at], [true, true, 'replica-there', '2026-11-30T22:00:00.000Z']);
  });

  test("another replica's report of older versions leaves the sidecar out of sync", () => {
    const reports = new Map([['a', { replica: 'replica-there', acked: { ...desired, [TYPE_URL.route]: 'old-3' }, at: '2026-11-30T22:00:00.000Z' }]]);
    const s = status(m, { ads: { a: node(desired, { connected: 0 }) }, reports });
    const a = s.sidecars?.find((x) => x.node === 'a');
    assert.deepEqual([a?.connected, a?.in_sync], [true, false]);
    assert.equal(a?.xds?.find((x) => x.type_url === TYPE_URL.route)?.version_acked, 'old-3');
  });

  test("this replica's own stream outranks any report, and its own stale report means nothing once the stream closed", () => {
    const stale = new Map([['a', { replica: 'replica-there', acked: {}, at: '2026-11-30T22:00:00.000Z' }]]);
    const here = status(m, { ads: { a: node(desired) }, reports: stale }).sidecars?.find((x) => x.node === 'a');
    assert.deepEqual([here?.connected, here?.in_sync, here?.replica], [true, true, '']);
    const ownReport = new Map([['a', { replica: 'replica-here', acked: { ...desired }, at: '2026-11-30T22:00:00.000Z' }]]);
    const closed = status(m, { ads: { a: node(desired, { connected: 0 }) }, reports: ownReport }).sidecars?.find((x) => x.node === 'a');
    assert.deepEqual([closed?.connected, closed?.in_sync], [false, false]);
  });

  test('a sidecar is in sync only when every Envoy running its config has ACKed, and names those behind', () => {
    const lagging = { versionSent: desired[TYPE_URL.route], versionAcked: 'old-3', subscribed: [] };
    const ads = {
      a: node(desired),
      'edge-2': node(desired, { sidecar: 'a', types: { [TYPE_URL.route]: lagging } }),
      'edge-1': node(desired, { sidecar: 'a' }),
    };
    const a = status(m, { ads }).sidecars?.find((x) => x.node === 'a');
    assert.deepEqual([a?.connected, a?.in_sync, a?.envoys, a?.envoys_behind], [true, false, 3, ['edge-2']]);
    // The versions shown are those of the Envoy named after the sidecar.
    assert.equal(a?.xds?.find((x) => x.type_url === TYPE_URL.route)?.version_acked, desired[TYPE_URL.route]);
  });

  test("a sidecar's other Envoys keep it connected while the one named after it is away", () => {
    const ads = { a: node(desired, { connected: 0 }), 'edge-1': node(desired, { sidecar: 'a' }) };
    const a = status(m, { ads }).sidecars?.find((x) => x.node === 'a');
    assert.deepEqual([a?.connected, a?.in_sync, a?.envoys, a?.envoys_behind], [true, true, 1, []]);
  });

  test('a disconnected sidecar is not in sync, even with every type ACKed', () => {
    const s = status(m, { ads: { a: node(desired, { connected: 0 }) } });
    const a = s.sidecars?.find((x) => x.node === 'a');
    assert.equal(a?.connected, false);
    assert.equal(a?.in_sync, false);
  });

  test('a sidecar that has not ACKed the desired version of one type is not in sync', () => {
    const lagging = { versionSent: desired[TYPE_URL.route], versionAcked: 'old-3', subscribed: [] };
    const s = status(m, { ads: { a: node(desired, { types: { [TYPE_URL.route]: lagging } }) } });
    const a = s.sidecars?.find((x) => x.node === 'a');
    assert.equal(a?.connected, true);
    assert.equal(a?.in_sync, false);
    assert.equal(a?.xds?.find((x) => x.type_url === TYPE_URL.route)?.version_acked, 'old-3');
  });

  test('a sidecar with no ADS record is disconnected and not in sync, with empty versions', () => {
    const s = status(m, { ads: { a: node(desired) } });
    const b = s.sidecars?.find((x) => x.node === 'b');
    assert.equal(b?.connected, false);
    assert.equal(b?.in_sync, false);
    assert.deepEqual(
      b?.xds,
      PUSH_ORDER.map((url) => ({ type_url: url, version_desired: '', version_sent: '', version_acked: '', last_nack: '' })),
    );
  });

  test('a connected sidecar without a snapshot is not in sync', () => {
    const s = status(m, { ads: { a: { sidecar: 'a', connected: 1, types: {} } } });
    assert.equal(s.sidecars?.find((x) => x.node === 'a')?.in_sync, false);
  });

  test("the message of a type's last NACK is shown for that type only", () => {
    const nacked = {
      versionSent: desired[TYPE_URL.listener],
      versionAcked: 'old-2',
      subscribed: [],
      lastNack: { version: desired[TYPE_URL.listener], message: 'bad listener', at: NOW },
    };
    const s = status(m, { ads: { a: node(desired, { types: { [TYPE_URL.listener]: nacked } }) } });
    const a = s.sidecars?.find((x) => x.node === 'a');
    assert.deepEqual(
      a?.xds?.map((x) => [x.type_url, x.last_nack]),
      PUSH_ORDER.map((url) => [url, url === TYPE_URL.listener ? 'bad listener' : '']),
    );
    assert.equal(a?.in_sync, false);
  });

  test('one sidecar per plan, counting rerouted and unavailable routes (resources and subresources)', () => {
    const peers = (...names: string[]) => ({ kind: 'peers' as const, peers: names });
    const unavailable = (...names: string[]) => ({ kind: 'unavailable' as const, servedBy: names });
    const plan: SidecarPlan = {
      node: 'a',
      local: { name: 'a', address: { host: '10.0.0.1', port: 6443 } },
      peers: [],
      routes: [
        { group: 'apps', version: 'v1', resource: 'deployments', action: peers('b') },
        { group: 'apps', version: 'v1', resource: 'deployments', subresource: 'scale', action: unavailable('c') },
        { group: 'batch', version: 'v1', resource: 'jobs', action: peers('b', 'c') },
        { group: 'batch', version: 'v1', resource: 'cronjobs', action: unavailable('c') },
        { group: 'batch', version: 'v1', resource: 'cronjobs', subresource: 'status', action: peers('b') },
        { group: 'x.io', version: 'v1', resource: 'widgets', action: unavailable('c') },
      ],
      groupDocuments: [{ group: 'x.io', version: 'v1', action: unavailable('c') }],
    };
    const s = status(m, { plans: [plan] });
    assert.deepEqual(
      s.sidecars?.map((x) => [x.node, x.rerouted_routes, x.unavailable_routes]),
      [['a', 3, 3]],
    );
  });

  test('route counts of a planned sidecar follow its plan', () => {
    const planned = model({
      a: { serves: CORE },
      b: { serves: [...CORE, ...BATCH] },
      c: { serves: [served('apps', 'v1', 'deployments', ['scale'])], reachable: false },
    });
    const s = status(planned);
    // a: batch jobs and cronjobs go to b; apps deployments (c only, unreachable) answer 503.
    const a = s.sidecars?.find((x) => x.node === 'a');
    assert.deepEqual([a?.rerouted_routes, a?.unavailable_routes], [2, 1]);
  });
});

describe('explainRequest', () => {
  const explain = (m: ClusterModel, sidecar: string, path: string, opts: { draining?: string[]; peerProxied?: boolean } = {}) =>
    explainRequest({ plan: planFor(sidecar, m, opts.draining), model: m, draining: new Set(opts.draining ?? []), departedGraceMs: GRACE_MS }, path, {
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
