import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { pino } from 'pino';

import type { LocalOnlyGroupVersion } from '../../../src/model/cluster.js';
import { APISERVICE_PATH, CRD_PATH, LocalOnlyWatcher } from '../../../src/sources/localOnlyWatcher.js';
import { FakeListWatch } from '../../support/fakeListWatch.js';
import { FakeTime } from '../../support/fakeTime.js';

function crd(name: string, group: string, versions: Array<{ name: string; served: boolean }>) {
  return { metadata: { name, resourceVersion: '5' }, spec: { group, names: { plural: name.split('.')[0] }, scope: 'Namespaced', versions } };
}

function apiService(group: string, version: string, service: { namespace: string; name: string } | null) {
  return { metadata: { name: `${version}.${group}`, resourceVersion: '6' }, spec: { group, version, service, groupPriorityMinimum: 100, versionPriority: 10 } };
}

describe('LocalOnlyWatcher', () => {
  function newLocalOnlyWatcher(time: FakeTime, client: FakeListWatch, localOnlyGraceMs = 300_000) {
    const changes: LocalOnlyGroupVersion[][] = [];
    const watcher = new LocalOnlyWatcher({
      client,
      onChange: (gvs) => changes.push(gvs),
      logger: pino({ level: 'silent' }),
      clock: time.clock,
      timers: time,
      localOnlyGraceMs,
    });
    return { watcher, changes };
  }

  test('served CRD versions and aggregated APIServices are local-only; unserved versions and local APIServices are not', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    client.objects.set(CRD_PATH, [
      crd('widgets.example.com', 'example.com', [
        { name: 'v1', served: true },
        { name: 'v1alpha1', served: false },
      ]),
    ]);
    client.objects.set(APISERVICE_PATH, [
      apiService('metrics.k8s.io', 'v1beta1', { namespace: 'kube-system', name: 'metrics-server' }),
      apiService('apps', 'v1', null),
    ]);
    const { watcher } = newLocalOnlyWatcher(time, client);
    await watcher.start();
    watcher.stop();
    assert.deepEqual(watcher.groupVersions(), [
      { group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' },
      { group: 'metrics.k8s.io', version: 'v1beta1', source: 'APIService' },
    ]);
  });

  test('a deleted CRD stays local-only until the grace period ends, then drops', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    const widgets = crd('widgets.example.com', 'example.com', [{ name: 'v1', served: true }]);
    client.objects.set(CRD_PATH, [widgets]);
    const { watcher, changes } = newLocalOnlyWatcher(time, client, 300_000);
    await watcher.start();
    const deletedAt = time.now;
    client.watchOn(CRD_PATH).send({ type: 'DELETED', object: widgets });
    assert.deepEqual(changes.at(-1), [{ group: 'example.com', version: 'v1', source: 'CustomResourceDefinition', excludedUntil: deletedAt + 300_000 }]);
    await time.advance(299_999);
    assert.equal(changes.at(-1)?.length, 1, 'still excluded just before the end');
    await time.advance(1);
    watcher.stop();
    assert.deepEqual(changes.at(-1), []);
  });

  test('a CRD re-created during the grace period is local-only again without excludedUntil', async () => {
    const time = new FakeTime();
    const client = new FakeListWatch();
    const widgets = crd('widgets.example.com', 'example.com', [{ name: 'v1', served: true }]);
    client.objects.set(CRD_PATH, [widgets]);
    const { watcher } = newLocalOnlyWatcher(time, client);
    await watcher.start();
    client.watchOn(CRD_PATH).send({ type: 'DELETED', object: widgets });
    await time.advance(10_000);
    client.watchOn(CRD_PATH).send({ type: 'ADDED', object: widgets });
    await time.advance(600_000);
    watcher.stop();
    assert.deepEqual(watcher.groupVersions(), [{ group: 'example.com', version: 'v1', source: 'CustomResourceDefinition' }]);
  });
});
