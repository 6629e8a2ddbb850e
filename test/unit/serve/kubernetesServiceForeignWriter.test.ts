// The `kubernetes` Service's publisher when someone else writes its objects
// (src/serve/kubernetesServicePublisher.ts): an apiserver still on the lease
// reconciler is held, not fought, and retried; content naming an address
// outside the configuration is replaced every round, without end; replicas
// whose configurations differ write nothing; nothing anyone writes into the
// API changes which addresses mvproxy publishes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PLAN, PublisherCluster, upstreamEndpoints } from '../../support/publisherHarness.js';

const ALL = { sidecar: ['kas-a', 'kas-b'], apiserver: ['kas-a', 'kas-b'] };
const SIDECARS = ['192.0.2.1:6443', '192.0.2.2:6443'];
const ENDPOINTS = { kind: 'Endpoints', name: 'kubernetes' } as const;
const FALLBACK = { kind: 'EndpointSlice', name: 'kubernetes-mvproxy-fallback' } as const;
const OWN_SIDECARS = { kind: 'EndpointSlice', name: 'kubernetes-mvproxy-sidecars' } as const;
const WARN = 40;

async function published(): Promise<PublisherCluster> {
  const c = new PublisherCluster();
  c.add('r1', ALL);
  await c.rounds(3);
  assert.deepEqual(c.listed(), SIDECARS);
  return c;
}

describe('kubernetes Service publisher: an apiserver still on the lease reconciler', () => {
  it("its content coming back over this replica's is held, not fought: nothing written, the state holding, naming the apiserver", async () => {
    const c = await published();
    const r = c.replicas[0];
    assert.ok(r);
    c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.12']));
    const before = c.api.writes.length;
    await c.rounds(2);
    assert.equal(c.api.writes.length, before, 'nothing written over it');
    assert.deepEqual(c.listed(), ['192.0.2.12:6444']);
    const status = r.publisher.status();
    assert.equal(status.state, 'holding');
    assert.match(status.message ?? '', /^apiserver kas-b still on the lease reconciler/);
    assert.deepEqual(status.lease_apiservers, ['kas-b']);
    assert.ok(r.kubeEvents.some((e) => e.reason === 'PublisherHolding'));
    assert.ok(r.logs.some((l) => l.level === WARN && /still on the lease reconciler/.test(l.msg)));
    assert.equal(await c.metric(r, 'mvproxy_kubernetes_service_foreign_writes_total'), 1, 'the rewrite that started the hold');
  });

  it("during a hold, mvproxy's own sidecar slice still follows liveness (no apiserver writes it): a sidecar that dies leaves it", async () => {
    const c = await published();
    const r = c.replicas[0];
    assert.ok(r);
    c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.11', '192.0.2.12']));
    r.reach.sidecar.delete('kas-b');
    await c.rounds(2);
    assert.equal(r.publisher.status().state, 'holding');
    const own = c.api.get(OWN_SIDECARS) as unknown as { endpoints: Array<{ addresses: string[] }> };
    assert.deepEqual(
      own.endpoints.flatMap((e) => e.addresses),
      ['192.0.2.1'],
    );
    assert.deepEqual(c.listed(), ['192.0.2.11:6444', '192.0.2.12:6444'], "upstream's objects left to the reconciler");
  });

  it('a reconciler that keeps rewriting is retried after 30 s, then after ever longer holds, up to 5 min', async () => {
    const c = await published();
    const writesAt: number[] = [];
    const start = c.now;
    for (let i = 0; i < 60; i++) {
      // The reconciler's 10 s loop: its own content back, whatever is there.
      c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.11', '192.0.2.12']));
      const before = c.api.writes.length;
      await c.rounds(1);
      if (c.api.writes.length > before) writesAt.push((c.now - 10_000 - start) / 1000);
    }
    assert.deepEqual(writesAt, [30, 100, 230, 480], 'holds of 30, 60, 120 and 240 s, each ended by one write');
  });

  it('resumes by itself once the reconciler stops: the next retry writes, and the objects list the sidecars again', async () => {
    const c = await published();
    const r = c.replicas[0];
    assert.ok(r);
    c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.11']));
    await c.rounds(1);
    assert.equal(r.publisher.status().state, 'holding');
    // The apiserver now runs --endpoint-reconciler-type=none: nobody rewrites.
    await c.rounds(3);
    assert.deepEqual(c.listed(), SIDECARS, 'the retry, 30 s after the hold began');
    assert.match(r.publisher.status().message ?? '', /^retrying: /, 'not publishing until its content has stayed 20 s');
    await c.rounds(1);
    assert.equal(r.publisher.status().state, 'holding', '10 s after the retry');
    await c.rounds(1);
    assert.equal(r.publisher.status().state, 'publishing');
    assert.equal(r.publisher.readiness().ready, true);
  });

  it("upstream's content found at the takeover is written over at once, not taken for a reconciler", async () => {
    const c = new PublisherCluster();
    c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.11', '192.0.2.12']));
    const r = c.add('r1', ALL);
    await c.rounds(3);
    assert.deepEqual(c.listed(), SIDECARS);
    assert.equal(r.publisher.status().state, 'publishing');
    assert.equal(await c.metric(r, 'mvproxy_kubernetes_service_foreign_writes_total'), 0);
  });
});

describe('kubernetes Service publisher: someone else writing other addresses', () => {
  it('content naming an address outside the configuration is replaced at the next round, every time, without ever stopping', async () => {
    const c = await published();
    const r = c.replicas[0];
    assert.ok(r);
    for (let i = 0; i < 20; i++) {
      c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.99']));
      await c.rounds(1);
      assert.deepEqual(c.listed(), SIDECARS, `round ${i}`);
    }
    assert.equal(r.publisher.status().state, 'publishing');
    assert.equal(await c.metric(r, 'mvproxy_kubernetes_service_foreign_writes_total'), 20);
    assert.equal(r.publisher.status().foreign_writes, 11, 'the rounds of the last 120 s');
    const events = r.kubeEvents.filter((e) => e.reason === 'ForeignWrite');
    assert.ok(events.length >= 1 && events.length <= 4, `rate-limited: ${events.length} events for 20 rewrites`);
    assert.match(
      events[0]?.note ?? '',
      /Endpoints default\/kubernetes was rewritten by someone else, listing 192\.0\.2\.99:6444, which the configuration does not publish: replaced/,
    );
  });

  it('a slice deleted is reported (failing, naming it), never created again by mvproxy', async () => {
    const c = await published();
    c.api.delete(FALLBACK);
    await c.rounds(2);
    assert.equal(c.replicas[0]?.publisher.status().state, 'failing');
    assert.equal(c.api.get(FALLBACK), undefined);
  });
});

describe('kubernetes Service publisher: replicas whose configurations differ', () => {
  const OTHER = { ...PLAN, targets: PLAN.targets.map((t) => (t.name === 'kas-b' ? { ...t, sidecarIp: '192.0.2.22' } : t)) };

  it('both notice it, report it, and write nothing: what is published stays', async () => {
    const c = await published();
    const r1 = c.replicas[0];
    assert.ok(r1);
    const r2 = c.add('r2', ALL, OTHER);
    // A new entry counts once it is seen renewed (the liveness record's rule): two rounds.
    await c.rounds(2);
    for (const r of c.replicas) r.reach.sidecar.delete('kas-a');
    const before = c.api.writes.length;
    await c.rounds(4);
    assert.equal(c.api.writes.length, before, 'neither writes');
    assert.deepEqual(c.listed(), SIDECARS);
    for (const r of [r1, r2]) {
      const status = r.publisher.status();
      assert.equal(status.state, 'holding', r.name);
      assert.match(status.message ?? '', /configurations differ/);
      assert.equal(status.config_mismatches?.length, 1);
      assert.ok(r.kubeEvents.some((e) => e.reason === 'ConfigMismatch'));
    }
  });

  it('publishing resumes once the replica with the other configuration is gone (its entry no longer renewed)', async () => {
    const c = await published();
    const r1 = c.replicas[0];
    assert.ok(r1);
    const r2 = c.add('r2', ALL, OTHER);
    await c.rounds(3);
    assert.equal(r1.publisher.status().state, 'holding');
    c.replicas.splice(c.replicas.indexOf(r2), 1);
    r1.reach.sidecar.delete('kas-a');
    await c.rounds(3);
    assert.equal(r1.publisher.status().state, 'publishing');
    assert.deepEqual(c.listed(), ['192.0.2.11:6444', '192.0.2.2:6443']);
  });
});

describe('kubernetes Service publisher: other writers', () => {
  it('another replica writing other mvproxy content is no foreign write', async () => {
    const c = new PublisherCluster();
    c.add('r1', ALL);
    c.add('r2', ALL);
    await c.rounds(3);
    for (const r of c.replicas) r.reach.sidecar.delete('kas-b');
    await c.rounds(5);
    assert.deepEqual(
      c.replicas.map((r) => [r.publisher.status().state, r.publisher.status().foreign_writes]),
      [
        ['publishing', 0],
        ['publishing', 0],
      ],
    );
  });

  it('no content anyone writes into the API changes a published address: hostile objects and liveness entries are corrected or ignored', async () => {
    const c = new PublisherCluster();
    // Objects listing an attacker's address, and a record entry naming an apiserver the config lacks.
    c.api.put(ENDPOINTS, upstreamEndpoints(['203.0.113.66'], 443));
    c.api.put(FALLBACK, {
      metadata: { name: FALLBACK.name, annotations: { 'mvproxy.dev/published-content': 'forged' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['203.0.113.66'], conditions: { ready: true } }],
      ports: [{ name: 'https', port: 443, protocol: 'TCP' }],
    });
    const r = c.add('r1', { sidecar: ['kas-a'], apiserver: ['kas-a'] });
    for (let round = 1; round <= 6; round++) {
      await c.record.write({ replica: 'evil', incarnation: 'x', round, sidecars: { 'kas-c': round, 'kas-b': round }, apiservers: { 'kas-c': round } });
      await c.rounds(1);
    }
    assert.deepEqual(c.listed(), ['192.0.2.1:6443', '192.0.2.2:6443'], 'kas-b through its sidecar, as the config says, when any replica says it is live');
    const fallback = c.api.get(FALLBACK);
    assert.deepEqual(fallback?.['endpoints'], []);
    assert.deepEqual(fallback?.['ports'], [{ name: 'https', port: 6444, protocol: 'TCP' }]);
    assert.deepEqual(
      r.publisher.status().nodes?.map((n) => n.apiserver),
      ['kas-a', 'kas-b'],
    );
  });
});
