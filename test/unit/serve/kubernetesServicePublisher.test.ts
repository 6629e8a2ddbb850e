// The `kubernetes` Service's publisher (src/serve/kubernetesServicePublisher.ts),
// replicas over an in-memory API and liveness record (test/support/publisherHarness.ts):
// what it writes, when, and when it writes nothing. Someone else writing the
// objects: kubernetesServiceForeignWriter.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { desiredObjects } from '../../../src/planner/publishedEndpoints.js';
import { FakeTime } from '../../support/fakeTime.js';
import { PLAN, PublisherCluster, upstreamEndpoints } from '../../support/publisherHarness.js';
import { KubernetesServicePublisher } from '../../../src/serve/kubernetesServicePublisher.js';
import { pino } from 'pino';

const ALL = { sidecar: ['kas-a', 'kas-b'], apiserver: ['kas-a', 'kas-b'] };
const SIDECARS = ['192.0.2.1:6443', '192.0.2.2:6443'];
const ENDPOINTS = { kind: 'Endpoints', name: 'kubernetes' } as const;
const SLICE = { kind: 'EndpointSlice', name: 'kubernetes' } as const;
const FALLBACK = { kind: 'EndpointSlice', name: 'kubernetes-mvproxy-fallback' } as const;

/** The first address of each endpoint of a slice. */
const sliceIps = (slice: Record<string, unknown> | undefined): string[] =>
  ((slice?.['endpoints'] ?? []) as Array<{ addresses: string[] }>).map((e) => e.addresses[0] ?? '');

/** A cluster whose replicas have taken over (three rounds: they watch the record for 15 s first). */
async function published(reaches: Array<{ sidecar: string[]; apiserver: string[] }> = [ALL]): Promise<PublisherCluster> {
  const c = new PublisherCluster();
  for (const [i, reach] of reaches.entries()) c.add(`r${i + 1}`, reach);
  await c.rounds(3);
  return c;
}

describe('kubernetes Service publisher: what it writes', () => {
  it('writes nothing before it has watched the liveness record for one expiry period', async () => {
    const c = new PublisherCluster();
    const r = c.add('r1', ALL);
    await c.rounds(2);
    assert.deepEqual(c.api.writes, []);
    assert.equal(r.publisher.status().state, 'starting');
    await c.rounds(1);
    assert.deepEqual(c.listed(), SIDECARS);
  });

  it("takes over upstream's objects: the Endpoints and the slice `kubernetes` list the live sidecars, and the operator's fallback slice is filled", async () => {
    const c = new PublisherCluster();
    c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.11', '192.0.2.12']));
    c.api.put(SLICE, {
      metadata: { name: 'kubernetes', namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['192.0.2.11'] }, { addresses: ['192.0.2.12'] }],
      ports: [{ name: 'https', port: 6444, protocol: 'TCP' }],
    });
    c.add('r1', ALL);
    await c.rounds(3);
    assert.deepEqual(c.listed(), SIDECARS);
    assert.deepEqual(c.api.writes, ['replace Endpoints/kubernetes', 'replace EndpointSlice/kubernetes', 'replace EndpointSlice/kubernetes-mvproxy-sidecars']);
    assert.deepEqual(sliceIps(c.api.get(SLICE)), ['192.0.2.1', '192.0.2.2']);
    assert.deepEqual(c.api.get(FALLBACK)?.['endpoints'], []);
  });

  it('never creates an object: an absent one is reported (failing, naming it), and the others are still written', async () => {
    const c = new PublisherCluster();
    c.api.delete(FALLBACK);
    const r = c.add('r1', ALL);
    await c.rounds(3);
    assert.deepEqual(c.api.writes, ['replace Endpoints/kubernetes', 'replace EndpointSlice/kubernetes', 'replace EndpointSlice/kubernetes-mvproxy-sidecars']);
    assert.equal(c.api.get(FALLBACK), undefined);
    const status = r.publisher.status();
    assert.equal(status.state, 'failing');
    assert.match(status.message ?? '', /^EndpointSlice default\/kubernetes-mvproxy-fallback does not exist: mvproxy never creates it: the operator does/);
    assert.ok(r.kubeEvents.some((e) => e.reason === 'PublisherFailing' && e.type === 'Warning'));
  });

  it('with no object at all it writes nothing and says which are missing', async () => {
    const c = new PublisherCluster(PLAN, { create: false });
    const r = c.add('r1', ALL);
    await c.rounds(3);
    assert.deepEqual(c.api.writes, []);
    assert.match(
      r.publisher.status().message ?? '',
      /^Endpoints default\/kubernetes and EndpointSlice default\/kubernetes and EndpointSlice default\/kubernetes-mvproxy-sidecars and EndpointSlice default\/kubernetes-mvproxy-fallback does not exist/,
    );
  });

  it('writes only when the content differs: rounds that change nothing write nothing', async () => {
    const c = await published([ALL, ALL]);
    const writes = c.api.writes.length;
    await c.rounds(20);
    assert.equal(c.api.writes.length, writes);
    assert.equal(c.replicas[1]?.publisher.status().state, 'publishing');
  });

  it('two replicas that disagree about a sidecar (one cannot reach it) both keep it listed, and neither writes again', async () => {
    const c = await published([
      { sidecar: ['kas-a'], apiserver: ['kas-a', 'kas-b'] },
      { sidecar: ['kas-a', 'kas-b'], apiserver: ['kas-a', 'kas-b'] },
    ]);
    const writes = c.api.writes.length;
    for (let i = 0; i < 30; i++) {
      await c.rounds(1);
      assert.deepEqual(c.listed(), SIDECARS, `round ${i}`);
    }
    assert.equal(c.api.writes.length, writes);
    const kasB = c.replicas[0]?.publisher.status().nodes?.find((n) => n.apiserver === 'kas-b');
    assert.deepEqual(kasB?.sidecar_seen_by, ['r2']);
  });

  it("a node whose sidecar dies while its apiserver is ready is listed at the apiserver's own address within 25 s, and at its sidecar again once it is back", async () => {
    const c = await published([ALL, ALL]);
    for (const r of c.replicas) r.reach.sidecar.delete('kas-b');
    await c.rounds(1);
    assert.deepEqual(c.listed(), SIDECARS, 'still live 10 s after its last passing probe');
    await c.rounds(1);
    assert.deepEqual(c.listed(), ['192.0.2.12:6444', '192.0.2.1:6443']);
    assert.deepEqual(sliceIps(c.api.get(FALLBACK)), ['192.0.2.12']);
    for (const r of c.replicas) r.reach.sidecar.add('kas-b');
    await c.rounds(1);
    assert.deepEqual(c.listed(), SIDECARS);
  });

  it('a node whose sidecar and apiserver are both down leaves the list', async () => {
    const c = await published([ALL]);
    for (const r of c.replicas) {
      r.reach.sidecar.delete('kas-b');
      r.reach.apiserver.delete('kas-b');
    }
    await c.rounds(2);
    assert.deepEqual(c.listed(), ['192.0.2.1:6443']);
  });

  it('with nothing observed live it writes nothing: what is published is kept, never emptied', async () => {
    const c = await published([ALL]);
    const writes = c.api.writes.length;
    const r = c.replicas[0];
    assert.ok(r);
    r.reach.sidecar.clear();
    r.reach.apiserver.clear();
    await c.rounds(5);
    assert.equal(c.api.writes.length, writes);
    assert.deepEqual(c.listed(), SIDECARS);
    assert.equal(r.publisher.status().state, 'holding');
    assert.ok(r.events.some((e) => e.kind === 'kubernetes-service' && e.message.startsWith('holding: no replica observed')));
  });

  it('a replica whose own liveness entry does not come back through the record writes nothing (its view may lack the others)', async () => {
    const c = await published([ALL]);
    const writes = c.api.writes.length;
    c.record.failingFor.add('r1');
    for (const r of c.replicas) r.reach.sidecar.delete('kas-b');
    await c.rounds(3);
    assert.equal(c.api.writes.length, writes);
    assert.equal(c.replicas[0]?.publisher.status().state, 'holding');
  });

  it('a conflict is retried by reading again: a replica that lost the race finds the objects as it wants them and writes nothing', async () => {
    const c = await published([ALL]);
    const r = c.replicas[0];
    assert.ok(r);
    r.reach.sidecar.delete('kas-b');
    await c.rounds(1);
    // Another replica writes the same decision between this one's read and its replace.
    const wanted = desiredObjects(PLAN, { viaSidecar: ['kas-a'], direct: ['kas-b'] });
    c.api.beforeReplace = (ref) => {
      c.api.beforeReplace = undefined;
      for (const o of wanted) c.api.put(o.ref, o.body);
      assert.equal(ref.kind, 'Endpoints');
    };
    const writes = c.api.writes.length;
    await c.rounds(1);
    assert.equal(c.api.writes.length, writes, 'nothing written by this replica');
    assert.deepEqual(c.listed(), ['192.0.2.12:6444', '192.0.2.1:6443']);
    assert.equal(r.publisher.status().state, 'publishing');
  });

  it('a failed read or write is reported (failing) and tried again the next round', async () => {
    const c = await published([ALL]);
    const r = c.replicas[0];
    assert.ok(r);
    r.reach.sidecar.delete('kas-b');
    c.api.failing = true;
    await c.rounds(2);
    assert.equal(r.publisher.status().state, 'failing');
    c.api.failing = false;
    await c.rounds(1);
    assert.equal(r.publisher.status().state, 'publishing');
    assert.deepEqual(c.listed(), ['192.0.2.12:6444', '192.0.2.1:6443']);
  });

  it('once stopped (every replica down) it runs no more rounds: the objects stay as they are, the sidecars keep serving', async () => {
    const time = new FakeTime();
    const c = new PublisherCluster();
    let rounds = 0;
    const publisher = new KubernetesServicePublisher({
      plan: PLAN,
      replica: 'r1',
      probe: async () => {
        rounds++;
        return true;
      },
      writeReport: async () => {},
      objects: c.api,
      monotonic: time.clock,
      clock: time.clock,
      logger: pino({ level: 'silent' }),
      record: () => {},
      timers: time,
    });
    publisher.start();
    await time.advance(25_000);
    assert.equal(rounds, 3 * 4, 'rounds at 0, 10 and 20 s, four probes each');
    publisher.stop();
    await time.advance(60_000);
    assert.equal(rounds, 12);
  });
});

describe('kubernetes Service publisher: what an operator sees', () => {
  it('exports its state as one gauge per state, the listed addresses by kind, and when it last found the objects as it wants them', async () => {
    const c = await published([ALL]);
    const r = c.replicas[0];
    assert.ok(r);
    assert.deepEqual(
      await Promise.all(['starting', 'publishing', 'holding', 'failing'].map((state) => c.metric(r, 'mvproxy_kubernetes_service_state', { state }))),
      [0, 1, 0, 0],
    );
    assert.equal(await c.metric(r, 'mvproxy_kubernetes_service_listed_addresses', { kind: 'sidecar' }), 2);
    assert.equal(await c.metric(r, 'mvproxy_kubernetes_service_listed_addresses', { kind: 'apiserver' }), 0);
    assert.equal(await c.metric(r, 'mvproxy_kubernetes_service_listed_addresses', { kind: 'other' }), 0);
    assert.equal(await c.metric(r, 'mvproxy_kubernetes_service_last_write_success_timestamp_seconds'), (c.now - 10_000) / 1000);
  });

  it('is ready while publishing, and not ready once it has failed for a minute (readiness, never liveness)', async () => {
    const c = await published([ALL]);
    const r = c.replicas[0];
    assert.ok(r);
    assert.equal(r.publisher.readiness().ready, true);
    c.api.failing = true;
    await c.rounds(5);
    assert.equal(r.publisher.readiness().ready, true, '50 s after the first failing round');
    await c.rounds(1);
    assert.equal(r.publisher.readiness().ready, false);
    assert.equal(r.publisher.status().ready, false);
    c.api.failing = false;
    await c.rounds(1);
    assert.equal(r.publisher.readiness().ready, true);
  });

  it('shows every slice of the Service (foreign ones as such) and the Endpoints differing from them', async () => {
    const c = await published([ALL]);
    const r = c.replicas[0];
    assert.ok(r);
    c.api.put(
      { kind: 'EndpointSlice', name: 'kubernetes-extra' },
      {
        metadata: { name: 'kubernetes-extra', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['198.51.100.7'], conditions: { ready: true } }],
        ports: [{ name: 'https', port: 443, protocol: 'TCP' }],
      },
    );
    await c.rounds(1);
    const status = r.publisher.status();
    assert.deepEqual(
      status.slices?.map((s) => [s.name, s.written_by_mvproxy, s.addresses]),
      [
        ['kubernetes', true, SIDECARS],
        ['kubernetes-extra', false, ['198.51.100.7:443']],
        ['kubernetes-mvproxy-fallback', true, []],
        ['kubernetes-mvproxy-sidecars', true, SIDECARS],
      ],
    );
    assert.deepEqual(status.other_addresses, ['198.51.100.7:443']);
    assert.equal(status.endpoints_mismatch, 'the EndpointSlices list 198.51.100.7:443 that the Endpoints do not');
    assert.equal(await c.metric(r, 'mvproxy_kubernetes_service_listed_addresses', { kind: 'other' }), 1);
  });
});

describe('kubernetes Service publisher: status', () => {
  it('shows a node listed that no replica observes live: what a node that died while every replica was down looks like', async () => {
    const c = await published([ALL]);
    // Every replica down, kas-b's node dies, a replica starts again.
    const restarted = new PublisherCluster();
    for (const [k, v] of c.api.objects) restarted.api.objects.set(k, v);
    const r = restarted.add('r1', { sidecar: ['kas-a'], apiserver: ['kas-a'] });
    await restarted.rounds(1);
    const status = r.publisher.status();
    assert.equal(status.state, 'starting');
    assert.deepEqual(
      status.nodes?.map((n) => [n.apiserver, n.published, n.sidecar_live]),
      [
        ['kas-a', 'sidecar', true],
        ['kas-b', 'sidecar', false],
      ],
    );
    await restarted.rounds(2);
    assert.deepEqual(restarted.listed(), ['192.0.2.1:6443']);
  });
});
