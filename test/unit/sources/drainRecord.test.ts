// Issue 12: drains live in one ConfigMap that every replica watches (src/sources/drainRecord.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { configMapData } from '../../../src/sources/configMapRecord.js';
import { DEFAULT_DRAIN_RECORD, DrainWatcher } from '../../../src/sources/drainRecord.js';
import { FakeListWatch } from '../../support/fakeListWatch.js';

const PATH = '/api/v1/namespaces/kube-system/configmaps';
const record = (data: Record<string, string> | undefined, resourceVersion = '7') => ({
  metadata: { name: 'mvproxy-drains', namespace: 'kube-system', resourceVersion, uid: 'u1' },
  ...(data === undefined ? {} : { data }),
});

/** The drained apiservers a ConfigMap names (its data keys, sorted, as DrainWatcher decodes them); undefined if it is not one. */
function drainedNames(configMap: unknown): string[] | undefined {
  const data = configMapData(configMap);
  return data && Object.keys(data).sort();
}

describe('drainedNames', () => {
  it('names the data keys, sorted', () => {
    assert.deepEqual(drainedNames(record({ 'kas-b': 'x', 'kas-a': 'y' })), ['kas-a', 'kas-b']);
  });

  it('names nothing for a ConfigMap without data', () => {
    assert.deepEqual(drainedNames(record(undefined)), []);
  });

  it('refuses what is not a ConfigMap with string data', () => {
    assert.equal(drainedNames({ metadata: {}, data: ['kas-a'] }), undefined);
    assert.equal(drainedNames('kas-a'), undefined);
  });
});

describe('DrainWatcher', () => {
  function watcher(client: FakeListWatch) {
    const seen: string[][] = [];
    const w = new DrainWatcher({ client, ref: DEFAULT_DRAIN_RECORD, onChange: (d) => seen.push(d), logger: pino({ level: 'silent' }) });
    return { w, seen };
  }

  it('reads only the drain record, by name, in its namespace', async () => {
    const client = new FakeListWatch();
    const { w } = watcher(client);
    await w.start();
    w.stop();
    assert.deepEqual(client.lists[0], { path: PATH, query: { fieldSelector: 'metadata.name=mvproxy-drains' } });
  });

  it('reports no drains when the record does not exist', async () => {
    const client = new FakeListWatch();
    const { w, seen } = watcher(client);
    await w.start();
    w.stop();
    assert.deepEqual(seen, [[]]);
  });

  it('reports the drains of the record as listed, then as each watch event changes them', async () => {
    const client = new FakeListWatch();
    client.objects.set(PATH, [record({ 'kas-a': 'x' })]);
    const { w, seen } = watcher(client);
    await w.start();
    await new Promise((r) => setImmediate(r));
    client.watchOn(PATH).send({ type: 'MODIFIED', object: record({ 'kas-a': 'x', 'kas-c': 'y' }, '8') });
    client.watchOn(PATH).send({ type: 'DELETED', object: record({ 'kas-a': 'x', 'kas-c': 'y' }, '9') });
    w.stop();
    assert.deepEqual(seen, [['kas-a'], ['kas-a', 'kas-c'], []]);
  });

  it('does not report an event that changes no drain', async () => {
    const client = new FakeListWatch();
    client.objects.set(PATH, [record({ 'kas-a': 'x' })]);
    const { w, seen } = watcher(client);
    await w.start();
    await new Promise((r) => setImmediate(r));
    client.watchOn(PATH).send({ type: 'MODIFIED', object: record({ 'kas-a': 'another note' }, '8') });
    w.stop();
    assert.deepEqual(seen, [['kas-a']]);
  });
});
