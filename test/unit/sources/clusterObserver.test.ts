import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';

import { createMetrics } from '../../../src/metrics.js';
import type { ApiserverEndpoint, ApiserverObservation, ClusterModel, LocalOnlyGroupVersion } from '../../../src/model/cluster.js';
import { peerStanding } from '../../../src/model/liveness.js';
import { ClusterObserver, type ClusterObserverSources, type DiscoverySource, type WatchSource } from '../../../src/sources/clusterObserver.js';
import type { DiscoveryUpdate } from '../../../src/sources/discoveryFetcher.js';
import type { LeaseEvent } from '../../../src/sources/leaseWatcher.js';
import { APIS_BODY, CORE_BODY, malformedApisBody } from '../../support/discoveryBodies.js';
import { ENDPOINT_A, ENDPOINT_B, newFetcher } from '../../support/discoveryFetcherHarness.js';
import { FakeTime } from '../../support/fakeTime.js';
import { FakeTransport, apiserverResponder } from '../../support/fakeTransport.js';

/** What the serve config gives every observer (only departedGraceMs matters with fake sources). */
const SETTINGS = { departedGraceMs: 300_000, localOnlyGraceMs: 300_000, discoveryPollMs: 1000, discoveryMaxBodyBytes: 1024 * 1024 };

class FakeDiscoverySource implements DiscoverySource {
  refreshes = 0;
  stopped = false;
  constructor(
    readonly endpoint: ApiserverEndpoint,
    readonly emit: (update: DiscoveryUpdate) => void,
  ) {}
  async start(): Promise<void> {}
  stop(): void {
    this.stopped = true;
  }
  async refreshNow(): Promise<void> {
    this.refreshes++;
  }
}

class FakeWatchSource<E> implements WatchSource {
  stopped = false;
  constructor(readonly emit: (event: E) => void) {}
  async start(): Promise<void> {}
  stop(): void {
    this.stopped = true;
  }
}

function newObserver(time: FakeTime, options: { departedGraceMs?: number } = {}) {
  const fetchers = new Map<string, FakeDiscoverySource>();
  let leases: FakeWatchSource<LeaseEvent> | undefined;
  let localOnly: FakeWatchSource<LocalOnlyGroupVersion[]> | undefined;
  const sources: ClusterObserverSources = {
    discovery: (endpoint, onUpdate) => {
      const f = new FakeDiscoverySource(endpoint, onUpdate);
      fetchers.set(endpoint.name, f);
      return f;
    },
    leases: (onEvent) => (leases = new FakeWatchSource(onEvent)),
    localOnly: (onChange) => (localOnly = new FakeWatchSource(onChange)),
  };
  const observer = new ClusterObserver({
    kubeConfig: new KubeConfig(),
    endpoints: [ENDPOINT_A, ENDPOINT_B],
    logger: pino({ level: 'silent' }),
    metrics: createMetrics(),
    clock: time.clock,
    timers: time,
    debounceMs: 50,
    ...SETTINGS,
    ...options,
    sources,
  });
  const models: ClusterModel[] = [];
  observer.onChange((m) => models.push(m));
  assert.ok(leases && localOnly);
  return { observer, models, fetchers, leases, localOnly };
}

function parsedDiscovery() {
  const fetcherTime = new FakeTime();
  const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
  const { fetcher } = newFetcher(transport, fetcherTime);
  return fetcher.start().then(() => {
    fetcher.stop();
    const update = fetcher.current();
    assert.ok(update.discovery);
    return update;
  });
}

describe('ClusterObserver', () => {
  test('a burst of source events gives one notification', async () => {
    const time = new FakeTime();
    const { observer, models, fetchers, leases, localOnly } = newObserver(time);
    await observer.start();
    const update = await parsedDiscovery();
    fetchers.get('a')?.emit(update);
    fetchers.get('b')?.emit(update);
    leases.emit({ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-1', holderIdentity: 'h1', renewTime: time.now } });
    localOnly.emit([{ group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' }]);
    await time.advance(49);
    assert.equal(models.length, 0);
    await time.advance(1);
    observer.stop();
    assert.equal(models.length, 1);
    const model = models[0];
    assert.deepEqual(
      model?.apiservers.map((a) => a.servedSet.map((r) => `${r.group}/${r.resource}`)),
      [
        ['/pods', 'batch/jobs'],
        ['/pods', 'batch/jobs'],
      ],
    );
    assert.equal(model?.apiservers[0]?.lease?.holderIdentity, 'h1');
    assert.deepEqual(model?.localOnly, [{ group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' }]);
  });

  test('an apiserver whose discovery lists a malformed entry is reachable in the model and serves everything else', async () => {
    const time = new FakeTime();
    const { observer, models, fetchers } = newObserver(time);
    await observer.start();
    const fetcherTime = new FakeTime();
    const { fetcher } = newFetcher(new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: malformedApisBody() })), fetcherTime);
    await fetcher.start();
    fetcher.stop();
    fetchers.get('a')?.emit(fetcher.current());
    fetchers.get('b')?.emit(fetcher.current());
    await time.advance(50);
    observer.stop();
    assert.deepEqual(
      models.at(-1)?.apiservers.map((a) => [a.endpoint.name, a.reachable, a.servedSet.map((r) => `${r.group}/${r.resource}`)]),
      [
        ['a', true, ['/pods', 'batch/jobs', 'widgets.example.com/widgets']],
        ['b', true, ['/pods', 'batch/jobs', 'widgets.example.com/widgets']],
      ],
    );
  });

  test("each apiserver's readiness reaches the model as its discovery source reports it", async () => {
    const time = new FakeTime();
    const { observer, models, fetchers } = newObserver(time);
    await observer.start();
    const update = await parsedDiscovery();
    fetchers.get('a')?.emit({ ...update, ready: false });
    fetchers.get('b')?.emit({ reachable: false, current: false });
    await time.advance(50);
    observer.stop();
    assert.deepEqual(
      models.at(-1)?.apiservers.map((a) => [a.endpoint.name, a.ready]),
      [
        ['a', false],
        ['b', undefined],
      ],
    );
  });

  test('listeners hear nothing until every source made its first attempt', async () => {
    const time = new FakeTime();
    let finishFirstPoll: () => void = () => {};
    let leases: FakeWatchSource<LeaseEvent> | undefined;
    const observer = new ClusterObserver({
      kubeConfig: new KubeConfig(),
      endpoints: [ENDPOINT_A],
      logger: pino({ level: 'silent' }),
      metrics: createMetrics(),
      clock: time.clock,
      timers: time,
      ...SETTINGS,
      sources: {
        discovery: (endpoint, onUpdate) => {
          const source = new FakeDiscoverySource(endpoint, onUpdate);
          source.start = () => new Promise<void>((resolve) => (finishFirstPoll = resolve));
          return source;
        },
        leases: (onEvent) => (leases = new FakeWatchSource(onEvent)),
        localOnly: (onChange) => new FakeWatchSource(onChange),
      },
    });
    const models: ClusterModel[] = [];
    observer.onChange((m) => models.push(m));
    const started = observer.start();
    leases?.emit({ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-1', holderIdentity: 'h1', renewTime: time.now } });
    await time.advance(1000);
    assert.equal(models.length, 0);
    finishFirstPoll();
    await started;
    await time.advance(50);
    observer.stop();
    assert.equal(models.length, 1);
    assert.equal(models[0]?.apiservers[0]?.lease?.holderIdentity, 'h1');
  });

  test("a changed holderIdentity refreshes that apiserver's discovery only", async () => {
    const time = new FakeTime();
    const { observer, fetchers, leases } = newObserver(time);
    await observer.start();
    for (const f of fetchers.values()) f.emit({ reachable: true, current: false });
    leases.emit({ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-1', holderIdentity: 'h1', renewTime: time.now } });
    leases.emit({ type: 'present', hostname: 'host-b', lease: { name: 'apiserver-2', holderIdentity: 'b1', renewTime: time.now } });
    leases.emit({ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-1', holderIdentity: 'h1', renewTime: time.now + 10_000 } });
    assert.equal(fetchers.get('a')?.refreshes, 0, 'a renewal alone does not refresh');
    leases.emit({ type: 'present', hostname: 'host-a', lease: { name: 'apiserver-1', holderIdentity: 'h2', renewTime: time.now + 20_000 } });
    observer.stop();
    assert.equal(fetchers.get('a')?.refreshes, 1);
    assert.equal(fetchers.get('b')?.refreshes, 0);
  });

  test("a lease that disappears refreshes that apiserver's discovery", async () => {
    const time = new FakeTime();
    const { observer, fetchers, leases } = newObserver(time);
    await observer.start();
    leases.emit({ type: 'present', hostname: 'host-b', lease: { name: 'apiserver-2', holderIdentity: 'b1', renewTime: time.now } });
    const before = fetchers.get('b')?.refreshes ?? 0;
    leases.emit({ type: 'gone', hostname: 'host-b', leaseName: 'apiserver-2', goneAt: time.now, reason: 'deleted' });
    observer.stop();
    assert.equal(fetchers.get('b')?.refreshes, before + 1);
  });

  test("listeners are told when a departed apiserver's grace ends; the model keeps what it observed", async () => {
    const time = new FakeTime();
    const { observer, models, fetchers, leases } = newObserver(time, { departedGraceMs: 300_000 });
    await observer.start();
    fetchers.get('b')?.emit({ ...(await parsedDiscovery()), reachable: false });
    leases.emit({ type: 'gone', hostname: 'host-b', leaseName: 'apiserver-2', goneAt: time.now, reason: 'deleted' });
    await time.advance(299_000);
    const within = observer.snapshot().apiservers[1];
    assert.equal(within?.servedSet.length, 2);
    assert.equal(within?.leaseGoneAt, time.now - 299_000);
    const notified = models.length;
    await time.advance(1000 + 50); // the grace period, then the debounce
    const after = models.at(-1)?.apiservers[1];
    observer.stop();
    assert.equal(models.length, notified + 1, 'listeners are told when the grace period ends');
    // Whether it still counts is peerStanding's decision (gone now), not the observer's.
    assert.equal(after?.servedSet.length, 2);
    assert.equal(peerStanding(after as ApiserverObservation, time.now, 300_000), 'gone');
  });

  test('an apiserver that stopped serving its discovery after its lease went and serves it again counts as available before its new lease is seen', async () => {
    const time = new FakeTime();
    const { observer, fetchers, leases } = newObserver(time);
    await observer.start();
    const update = await parsedDiscovery();
    fetchers.get('b')?.emit(update);
    leases.emit({ type: 'present', hostname: 'host-b', lease: { name: 'apiserver-2', holderIdentity: 'b1', renewTime: time.now } });
    await time.advance(1000);
    leases.emit({ type: 'gone', hostname: 'host-b', leaseName: 'apiserver-2', goneAt: time.now, reason: 'deleted' });
    const standing = (): string => peerStanding(observer.snapshot().apiservers[1] as ApiserverObservation, time.now, 300_000);
    // Its shutdown: it still answers, but it is leaving.
    fetchers.get('b')?.emit({ ...update, ready: false });
    assert.equal(standing(), 'unavailable');
    await time.advance(1000);
    fetchers.get('b')?.emit({ ...update, reachable: false, current: false });
    assert.equal(standing(), 'unavailable');
    // Restarting: it answers, but not its discovery yet (what it serves is not known afresh).
    await time.advance(2000);
    fetchers.get('b')?.emit({ ...update, current: false, ready: false });
    assert.equal(standing(), 'unavailable');
    // Its discovery read again, its new lease not written yet.
    await time.advance(1000);
    fetchers.get('b')?.emit({ ...update, ready: false });
    observer.stop();
    assert.equal(standing(), 'available');
  });

  test('a lease for a hostname not in the configuration adds no apiserver', async () => {
    const time = new FakeTime();
    const { observer, leases } = newObserver(time);
    await observer.start();
    leases.emit({ type: 'present', hostname: 'evil.example', lease: { name: 'apiserver-x', holderIdentity: 'x', renewTime: time.now } });
    await time.advance(100);
    const snapshot = observer.snapshot();
    observer.stop();
    assert.deepEqual(
      snapshot.apiservers.map((a) => a.endpoint),
      [ENDPOINT_A, ENDPOINT_B],
    );
    assert.equal(
      snapshot.apiservers.some((a) => a.lease !== undefined),
      false,
    );
  });

  test('stop stops every source and no notification follows', async () => {
    const time = new FakeTime();
    const { observer, models, fetchers, leases, localOnly } = newObserver(time);
    await observer.start();
    fetchers.get('a')?.emit({ reachable: true, current: false });
    observer.stop();
    await time.advance(1000);
    assert.equal(models.length, 0);
    assert.equal(leases.stopped && localOnly.stopped && [...fetchers.values()].every((f) => f.stopped), true);
    assert.equal(time.pendingTimers(), 0);
  });

  test('duplicate hostnames in the configuration are refused', () => {
    assert.throws(
      () =>
        new ClusterObserver({
          kubeConfig: new KubeConfig(),
          endpoints: [ENDPOINT_A, { ...ENDPOINT_B, hostname: ENDPOINT_A.hostname }],
          logger: pino({ level: 'silent' }),
          metrics: createMetrics(),
          ...SETTINGS,
        }),
      /share hostname/,
    );
  });
});
