import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { pino } from 'pino';

import { LeaseWatcher, type LeaseEvent } from '../../../src/sources/leaseWatcher.js';
import { FakeListWatch } from '../../support/fakeListWatch.js';
import { FakeTime, settle } from '../../support/fakeTime.js';

const LEASES_PATH = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';

/** An identity lease as the apiserver writes it (MicroTime with microseconds). */
function identityLease(name: string, hostname: string, holderIdentity: string, renewTimeMs: number, leaseDurationSeconds = 3600) {
  return identityLeaseWithSpec(name, hostname, {
    holderIdentity,
    leaseDurationSeconds,
    renewTime: new Date(renewTimeMs).toISOString().replace('Z', '123Z'),
  });
}

/** An identity lease with any spec, as any writer could make it. */
function identityLeaseWithSpec(name: string, hostname: string, spec: Record<string, unknown>) {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name,
      namespace: 'kube-system',
      resourceVersion: '10',
      labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': hostname },
    },
    spec,
  };
}

const HOUR_MS = 3600_000;
const SLACK_MS = 30_000;

describe('LeaseWatcher', () => {
  function newLeaseWatcher(time: FakeTime, client: FakeListWatch) {
    const events: LeaseEvent[] = [];
    const watcher = new LeaseWatcher({
      client,
      onEvent: (e) => events.push(e),
      logger: pino({ level: 'silent' }),
      clock: time.clock,
      timers: time,
      expiryCheckIntervalMs: 5000,
      expirySlackMs: 30_000,
    });
    return { watcher, events };
  }

  test('lists identity leases in kube-system by label selector', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    const { watcher } = newLeaseWatcher(time, client);
    await watcher.start();
    watcher.stop();
    assert.equal(client.lists[0]?.path, LEASES_PATH);
    assert.equal(client.lists[0]?.query['labelSelector'], 'apiserver.kubernetes.io/identity=kube-apiserver');
  });

  test('a lease is reported present for its kubernetes.io/hostname with name, holder and renew time', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'apiserver-x1_uid1', time.now - 2000)]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    watcher.stop();
    assert.deepEqual(events, [
      { type: 'present', hostname: 'host-a', lease: { name: 'apiserver-x1', holderIdentity: 'apiserver-x1_uid1', renewTime: time.now - 2000 } },
    ]);
  });

  test('a deleted lease is reported gone at the time of deletion', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    const lease = identityLease('apiserver-x1', 'host-a', 'apiserver-x1_uid1', time.now);
    client.objects.set(LEASES_PATH, [lease]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    await time.advance(1234);
    client.watchOn(LEASES_PATH).send({ type: 'DELETED', object: lease });
    watcher.stop();
    assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: time.now, reason: 'deleted' });
  });

  test('a lease past renewTime + leaseDurationSeconds is reported gone (expired) by the periodic check', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    const renewedAt = time.now;
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', renewedAt, 60)]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    await time.advance(60_000 + 25_000); // within the slack: still present
    assert.equal(events.length, 1);
    await time.advance(10_000);
    watcher.stop();
    assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: renewedAt + 60_000, reason: 'expired' });
  });

  test('a renewal with a new holderIdentity is reported present with the new holder', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', time.now)]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    client.watchOn(LEASES_PATH).send({ type: 'MODIFIED', object: identityLease('apiserver-x1', 'host-a', 'h2', time.now + 1000) });
    watcher.stop();
    const last = events.at(-1);
    assert.equal(last?.type === 'present' ? last.lease.holderIdentity : undefined, 'h2');
  });

  test('410 Gone on the watch re-lists and reports leases deleted meanwhile', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', time.now), identityLease('apiserver-x2', 'host-b', 'h2', time.now)]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x2', 'host-b', 'h2', time.now)]);
    client.resourceVersion = 50;
    client.watchOn(LEASES_PATH).send({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } });
    await settle();
    watcher.stop();
    assert.equal(client.lists.length, 2);
    assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: time.now, reason: 'deleted' });
    assert.equal(client.watches.at(-1)?.query['resourceVersion'], '50');
  });

  test('a failed list is retried with backoff', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    let failures = 2;
    const realList = client.list.bind(client);
    client.list = async (p, q) => {
      if (failures-- > 0) {
        client.lists.push({ path: p, query: q });
        throw new Error('connect ECONNREFUSED');
      }
      return realList(p, q);
    };
    client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', time.now)]);
    const { watcher, events } = newLeaseWatcher(time, client);
    await watcher.start();
    assert.equal(events.length, 0);
    await time.advance(499);
    assert.equal(client.lists.length, 1, 'waits the initial backoff');
    await time.advance(1 + 1000);
    watcher.stop();
    assert.equal(client.lists.length, 3);
    assert.equal(events[0]?.type, 'present');
  });

  describe('expiry is judged from what the control plane saw, never from a time the writer controls alone', () => {
    test('a lease without renewTime expires the default duration (3600 s) after it was last seen to change', async () => {
      const time = new FakeTime();
      const client = new FakeListWatch();
      client.objects.set(LEASES_PATH, [identityLeaseWithSpec('apiserver-x1', 'host-a', { holderIdentity: 'h1' })]);
      const { watcher, events } = newLeaseWatcher(time, client);
      const seenAt = time.now;
      await watcher.start();
      assert.deepEqual(events, [{ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-x1', holderIdentity: 'h1', renewTime: seenAt } }]);
      await time.advance(HOUR_MS + SLACK_MS - 5000);
      assert.equal(events.length, 1, 'still within its duration and the slack');
      await time.advance(10_000);
      watcher.stop();
      assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: seenAt + HOUR_MS, reason: 'expired' });
    });

    test('a lease without renewTime and without leaseDurationSeconds expires too', async () => {
      const time = new FakeTime();
      const client = new FakeListWatch();
      client.objects.set(LEASES_PATH, [identityLeaseWithSpec('apiserver-x1', 'host-a', {})]);
      const { watcher, events } = newLeaseWatcher(time, client);
      const seenAt = time.now;
      await watcher.start();
      await time.advance(HOUR_MS + SLACK_MS + 5000);
      watcher.stop();
      assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: seenAt + HOUR_MS, reason: 'expired' });
    });

    test('a renewTime in the future counts as the moment it was seen: the lease expires a duration later', async () => {
      const time = new FakeTime();
      const client = new FakeListWatch();
      const future = Date.parse('2100-01-01T00:00:00Z');
      client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', future, 60)]);
      const { watcher, events } = newLeaseWatcher(time, client);
      const seenAt = time.now;
      await watcher.start();
      assert.deepEqual(events[0], { type: 'present', hostname: 'host-a', lease: { name: 'apiserver-x1', holderIdentity: 'h1', renewTime: seenAt } });
      await time.advance(60_000 + SLACK_MS + 5000);
      watcher.stop();
      assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: seenAt + 60_000, reason: 'expired' });
    });

    test('seeing the same future renewTime again (a re-list after 410, a no-op update) is not a renewal', async () => {
      const time = new FakeTime();
      const client = new FakeListWatch();
      const lease = identityLease('apiserver-x1', 'host-a', 'h1', Date.parse('2100-01-01T00:00:00Z'), 60);
      client.objects.set(LEASES_PATH, [lease]);
      const { watcher, events } = newLeaseWatcher(time, client);
      const seenAt = time.now;
      await watcher.start();
      await time.advance(50_000);
      client.watchOn(LEASES_PATH).send({ type: 'MODIFIED', object: { ...lease, metadata: { ...lease.metadata, resourceVersion: '11' } } });
      client.resourceVersion = 60;
      client.watchOn(LEASES_PATH).send({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } });
      await settle();
      assert.equal(client.lists.length, 2, 're-listed');
      await time.advance(10_000 + SLACK_MS + 5000);
      watcher.stop();
      assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: seenAt + 60_000, reason: 'expired' });
    });

    test('a lease renewed with future renewTimes stays present while the renewals keep coming, and expires when they stop', async () => {
      const time = new FakeTime();
      const client = new FakeListWatch();
      const ahead = 10 * 60_000; // the writer's clock runs 10 minutes ahead
      client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', time.now + ahead, 60)]);
      const { watcher, events } = newLeaseWatcher(time, client);
      await watcher.start();
      for (let i = 0; i < 30; i++) {
        await time.advance(10_000);
        client.watchOn(LEASES_PATH).send({ type: 'MODIFIED', object: identityLease('apiserver-x1', 'host-a', 'h1', time.now + ahead, 60) });
      }
      assert.ok(
        events.every((e) => e.type === 'present'),
        'present through 5 minutes of renewals',
      );
      const lastRenewal = time.now;
      await time.advance(60_000 + SLACK_MS + 5000);
      watcher.stop();
      assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: lastRenewal + 60_000, reason: 'expired' });
    });

    test('a new holder without renewTime counts as a renewal, seen when it arrived', async () => {
      const time = new FakeTime();
      const client = new FakeListWatch();
      client.objects.set(LEASES_PATH, [identityLeaseWithSpec('apiserver-x1', 'host-a', { holderIdentity: 'h1', leaseDurationSeconds: 60 })]);
      const { watcher, events } = newLeaseWatcher(time, client);
      await watcher.start();
      await time.advance(50_000);
      const restartedAt = time.now;
      client
        .watchOn(LEASES_PATH)
        .send({ type: 'MODIFIED', object: identityLeaseWithSpec('apiserver-x1', 'host-a', { holderIdentity: 'h2', leaseDurationSeconds: 60 }) });
      await time.advance(60_000 + SLACK_MS - 5000);
      assert.equal(events.at(-1)?.type, 'present');
      await time.advance(10_000);
      watcher.stop();
      assert.deepEqual(events.at(-1), { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: restartedAt + 60_000, reason: 'expired' });
    });

    test('a leaseDurationSeconds longer than an hour counts as an hour; zero, negative or non-numeric ones as the default', async () => {
      for (const leaseDurationSeconds of [1e12, 0, -5, '600']) {
        const time = new FakeTime();
        const client = new FakeListWatch();
        client.objects.set(LEASES_PATH, [identityLeaseWithSpec('apiserver-x1', 'host-a', { holderIdentity: 'h1', leaseDurationSeconds })]);
        const { watcher, events } = newLeaseWatcher(time, client);
        const seenAt = time.now;
        await watcher.start();
        await time.advance(HOUR_MS + SLACK_MS + 5000);
        watcher.stop();
        assert.deepEqual(
          events.at(-1),
          { type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: seenAt + HOUR_MS, reason: 'expired' },
          `leaseDurationSeconds ${JSON.stringify(leaseDurationSeconds)}`,
        );
      }
    });

    test('a renewTime in the past still counts as written: a lease found already stale expires from it', async () => {
      const time = new FakeTime();
      const client = new FakeListWatch();
      const renewedAt = time.now - 2 * HOUR_MS;
      client.objects.set(LEASES_PATH, [identityLease('apiserver-x1', 'host-a', 'h1', renewedAt, 3600)]);
      const { watcher, events } = newLeaseWatcher(time, client);
      await watcher.start();
      watcher.stop();
      assert.deepEqual(events, [{ type: 'gone', hostname: 'host-a', leaseName: 'apiserver-x1', goneAt: renewedAt + HOUR_MS, reason: 'expired' }]);
    });

    test('of two leases for one hostname, one with a future renewTime does not win over a fresher real renewal', async () => {
      const time = new FakeTime();
      const client = new FakeListWatch();
      client.objects.set(LEASES_PATH, [
        identityLease('apiserver-old', 'host-a', 'old', Date.parse('2100-01-01T00:00:00Z'), 60),
        identityLease('apiserver-new', 'host-a', 'new', time.now, 60),
      ]);
      const { watcher, events } = newLeaseWatcher(time, client);
      await watcher.start();
      await time.advance(20_000);
      client.watchOn(LEASES_PATH).send({ type: 'MODIFIED', object: identityLease('apiserver-new', 'host-a', 'new', time.now, 60) });
      watcher.stop();
      const last = events.at(-1);
      assert.equal(last?.type === 'present' ? last.lease.name : undefined, 'apiserver-new');
    });
  });
});
