import assert from 'node:assert/strict';
import { test } from 'node:test';
import { documentDifferences } from '../../../../src/tools/bench/sameDocument.js';

const group = (name: string, versions: string[], resources = ['things']) => ({
  metadata: { name },
  versions: versions.map((version) => ({ version, resources: resources.map((resource) => ({ resource, verbs: ['get'] })), freshness: 'Current' })),
});
const list = (...items: unknown[]) => ({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items });

test('documents that differ only in field order are the same', () => {
  const reordered = {
    items: [{ versions: [{ freshness: 'Current', resources: [{ verbs: ['get'], resource: 'things' }], version: 'v1' }], metadata: { name: 'a' } }],
    metadata: {},
    apiVersion: 'apidiscovery.k8s.io/v2',
    kind: 'APIGroupDiscoveryList',
  };
  assert.deepEqual(documentDifferences(list(group('a', ['v1'])), reordered), []);
});

test('a group only one document lists is named', () => {
  assert.deepEqual(documentDifferences(list(group('a', ['v1'])), list(group('a', ['v1']), group('b', ['v1']))), ['.items[b]: only in the second']);
});

test('versions in another order are reported: the first is the preferred one', () => {
  assert.deepEqual(documentDifferences(list(group('a', ['v1', 'v2'])), list(group('a', ['v2', 'v1']))), ['.items[a].versions: order v1,v2 and v2,v1']);
});

test('a differing value is reported with its path and both values', () => {
  assert.deepEqual(documentDifferences(list(group('a', ['v1'], ['x'])), list(group('a', ['v1'], ['y']))), [
    '.items[a].versions[v1].resources[x]: only in the first',
    '.items[a].versions[v1].resources[y]: only in the second',
  ]);
  const stale = list({ ...group('a', ['v1']), versions: [{ ...group('a', ['v1']).versions[0], freshness: 'Stale' }] });
  assert.deepEqual(documentDifferences(list(group('a', ['v1'])), stale), ['.items[a].versions[v1].freshness: "Current" and "Stale"']);
});
