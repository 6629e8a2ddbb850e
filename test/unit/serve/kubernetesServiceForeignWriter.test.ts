// The `kubernetes` Service's publisher when someone else writes its objects
// (src/serve/kubernetesServicePublisher.ts): an apiserver still on the lease
// reconciler is noticed and not fought; nothing anyone writes into the API
// changes which addresses mvproxy publishes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PublisherCluster, upstreamEndpoints } from '../../support/publisherHarness.js';

const ALL = { sidecar: ['kas-a', 'kas-b'], apiserver: ['kas-a', 'kas-b'] };
const SIDECARS = ['192.0.2.1:6443', '192.0.2.2:6443'];
const ENDPOINTS = { kind: 'Endpoints', name: 'kubernetes' } as const;
const FALLBACK = { kind: 'EndpointSlice', name: 'kubernetes-mvproxy-fallback' } as const;
const ERROR = 50;

async function published(): Promise<PublisherCluster> {
  const c = new PublisherCluster();
  c.add('r1', ALL);
  await c.rounds(3);
  assert.deepEqual(c.listed(), SIDECARS);
  return c;
}

describe('kubernetes Service publisher: someone else writing', () => {
  it('an apiserver on the lease reconciler rewriting the Endpoints every round is corrected twice, then this replica stops writing and says so', async () => {
    const c = await published();
    const r = c.replicas[0];
    assert.ok(r);
    const lease = upstreamEndpoints(['192.0.2.11', '192.0.2.12']);
    const writes: number[] = [];
    for (let i = 0; i < 3; i++) {
      c.api.put(ENDPOINTS, lease);
      const before = c.api.writes.length;
      await c.rounds(1);
      writes.push(c.api.writes.length - before);
    }
    assert.deepEqual(writes, [1, 1, 0], 'the Endpoints rewritten after the first two, not after the third');
    const status = r.publisher.status();
    assert.equal(status.state, 'stopped');
    assert.match(
      status.message ?? '',
      /rewritten or deleted by someone else in 3 rounds within 120 s \(an apiserver still on --endpoint-reconciler-type=lease\?\)/,
    );
    assert.equal(status.foreign_writes, 3);
    assert.ok(r.events.some((e) => e.kind === 'kubernetes-service-stopped'));
    assert.ok(r.logs.some((l) => l.level === ERROR && /this replica stopped writing/.test(l.msg)));
    assert.deepEqual(status.other_addresses, [], "the apiservers' own addresses are in the config: shown as listed directly");
    assert.deepEqual(
      status.nodes?.map((n) => n.published),
      ['apiserver', 'apiserver'],
    );
  });

  it('a stopped replica writes nothing more, whatever changes, until it restarts', async () => {
    const c = await published();
    for (let i = 0; i < 3; i++) {
      c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.11']));
      await c.rounds(1);
    }
    const writes = c.api.writes.length;
    c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.11']));
    await c.rounds(10);
    assert.equal(c.api.writes.length, writes);
    assert.deepEqual(c.listed(), ['192.0.2.11:6444']);
  });

  it('slices deleted again and again count as rewrites', async () => {
    const c = await published();
    for (let i = 0; i < 3; i++) {
      c.api.delete(FALLBACK);
      await c.rounds(1);
    }
    assert.equal(c.replicas[0]?.publisher.status().state, 'stopped');
    assert.equal(c.api.get(FALLBACK), undefined);
  });

  it("upstream's content found at the takeover, or an apiserver restarting on the lease reconciler once, is corrected, not taken for a fight", async () => {
    const c = new PublisherCluster();
    c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.11', '192.0.2.12']));
    const r = c.add('r1', ALL);
    await c.rounds(3);
    await c.rounds(5);
    c.api.put(ENDPOINTS, upstreamEndpoints(['192.0.2.11']));
    await c.rounds(1);
    assert.equal(r.publisher.status().state, 'publishing');
    assert.deepEqual(c.listed(), SIDECARS);
    await c.rounds(13);
    assert.equal(r.publisher.status().foreign_writes, 0, 'forgotten after 120 s');
  });

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
