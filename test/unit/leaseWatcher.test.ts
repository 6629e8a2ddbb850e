import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { pino } from 'pino';

import { LeaseWatcher, type LeaseEvent } from '../../src/sources/leaseWatcher.js';
import { FakeListWatch } from '../support/fakeListWatch.js';
import { FakeTime, settle } from '../support/fakeTime.js';

const LEASES_PATH = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';

/** An identity lease as the apiserver writes it (MicroTime with microseconds). */
function identityLease(name: string, hostname: string, holderIdentity: string, renewTimeMs: number, leaseDurationSeconds = 3600) {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name,
      namespace: 'kube-system',
      resourceVersion: '10',
      labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': hostname },
    },
    spec: { holderIdentity, leaseDurationSeconds, renewTime: new Date(renewTimeMs).toISOString().replace('Z', '123Z') },
  };
}

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
});
