// The admin API's GetStatus answer (adminStatus): the apiservers as the
// control plane sees them, and each sidecar's sync state and routes (why a
// request goes where it goes: explainRequest.test.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ApiserverObservation, ClusterModel } from '../../../src/model/cluster.js';
import { BATCH, CORE, GRACE_MS, NOW, model, plannerOptions, served } from '../../support/clusterModel.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import type { SidecarPlan } from '../../../src/planner/plan.js';
import { planOf } from '../../support/sidecarPlans.js';
import { planSidecars } from '../../../src/planner/planner.js';
import { adminStatus } from '../../../src/servers/admin.js';
import type { AdsNodeStatus, AdsTypeStatus } from '../../../src/servers/ads.js';
import type { SidecarSyncReport } from '../../../src/model/syncReport.js';
import { PUSH_ORDER, TYPE_URL, type ResourceTypeUrl } from '../../../src/xds/snapshot.js';

function plans(m: ClusterModel, draining: string[] = []): SidecarPlan[] {
  return planSidecars(m, plannerOptions(m, draining));
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
    standings: apiserverStandings(m, GRACE_MS),
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
    const plan: SidecarPlan = planOf({
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
    });
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
