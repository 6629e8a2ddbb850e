// parseAggregatedDiscovery: reading an APIGroupDiscoveryList as kube-apiserver writes it.
// Documents: test/support/discoveryDocuments.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { DroppedDiscoveryEntry } from '../../../src/model/discovery.js';
import { parseAggregatedDiscovery } from '../../../src/model/discoveryDocument.js';
import { CORE, GROUPS } from '../../support/discoveryDocuments.js';

describe('parseAggregatedDiscovery', () => {
  const valid = { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [] };

  test('the core entry without a name gets name ""', () => {
    assert.equal(CORE.items[0]?.metadata.name, '');
  });

  test('null verbs and omitted resources become empty arrays', () => {
    const jobs = GROUPS.items[0]?.versions[0]?.resources[0];
    assert.deepEqual(jobs?.subresources?.[0]?.verbs, []);
    assert.deepEqual(GROUPS.items[1]?.versions[1]?.resources, []);
  });

  test('null responseKind is dropped, not kept as null', () => {
    const namespaces = CORE.items[0]?.versions[0]?.resources[1];
    assert.equal(namespaces !== undefined && 'responseKind' in namespaces, false);
  });

  test('unknown fields are kept', () => {
    const parsed = parseAggregatedDiscovery({
      ...valid,
      items: [
        { metadata: { name: 'x' }, futureField: 1, versions: [{ version: 'v1', resources: [{ resource: 'r', scope: 'Cluster', verbs: [], extra: 'e' }] }] },
      ],
    });
    assert.equal((parsed.items[0] as unknown as Record<string, unknown>)['futureField'], 1);
    assert.equal((parsed.items[0]?.versions[0]?.resources[0] as unknown as Record<string, unknown> | undefined)?.['extra'], 'e');
  });

  test('missing items is an error naming $.items', () => {
    assert.throws(() => parseAggregatedDiscovery({ ...valid, items: undefined }), /at \$\.items: expected an array/);
  });

  test('a non-aggregated APIGroupList is rejected with a hint', () => {
    assert.throws(() => parseAggregatedDiscovery({ kind: 'APIGroupList', apiVersion: 'v1', groups: [] }), /got kind "APIGroupList".*aggregated discovery/);
  });

  test('a wrong apiVersion is rejected', () => {
    assert.throws(() => parseAggregatedDiscovery({ ...valid, apiVersion: 'apidiscovery.k8s.io/v2beta1' }), /apiVersion "apidiscovery\.k8s\.io\/v2beta1"/);
  });

  test('a missing metadata.name of the core group and a null one read as ""', () => {
    const parsed = parseAggregatedDiscovery({ ...valid, items: [{ metadata: { name: null }, versions: [] }, { versions: [] }] });
    assert.deepEqual(
      parsed.items.map((g) => g.metadata.name),
      ['', ''],
    );
  });

  test("an entry without the document's types is dropped and reported with its path; its siblings stay", () => {
    const dropped: DroppedDiscoveryEntry[] = [];
    const parsed = parseAggregatedDiscovery(
      {
        ...valid,
        items: [
          {
            metadata: { name: 'apps' },
            versions: [
              {
                version: 'v1',
                resources: [
                  { resource: 'deployments', scope: 'Global', verbs: [] },
                  { resource: 'replicasets', scope: 'Namespaced', verbs: ['get'] },
                ],
              },
            ],
          },
        ],
      },
      dropped,
    );
    assert.deepEqual(
      parsed.items[0]?.versions[0]?.resources.map((r) => r.resource),
      ['replicasets'],
    );
    assert.deepEqual(dropped, [
      {
        document: '/apis',
        group: 'apps',
        version: 'v1',
        resource: 'deployments',
        path: '$.items[0].versions[0].resources[0].scope',
        reason: 'expected "Cluster" or "Namespaced", got "Global"',
        kind: 'malformed',
      },
    ]);
  });

  test("an entry whose name is not a string is reported under its parent's names only", () => {
    const dropped: DroppedDiscoveryEntry[] = [];
    parseAggregatedDiscovery(
      { ...valid, items: [{ metadata: { name: 'a' }, versions: [{ version: 'v1', resources: [{ resource: 7, scope: 'Cluster', verbs: [] }] }] }] },
      dropped,
    );
    assert.deepEqual(
      dropped.map((d) => [d.group, d.version, d.resource, d.path]),
      [['a', 'v1', undefined, '$.items[0].versions[0].resources[0].resource']],
    );
  });

  test('names are not judged when reading: a resource named "" stays in the document as the apiserver wrote it', () => {
    const dropped: DroppedDiscoveryEntry[] = [];
    const parsed = parseAggregatedDiscovery(
      {
        ...valid,
        items: [{ metadata: { name: 'a.example.com' }, versions: [{ version: 'v1', resources: [{ resource: '', scope: 'Cluster', verbs: ['get'] }] }] }],
      },
      dropped,
    );
    assert.equal(parsed.items[0]?.versions[0]?.resources[0]?.resource, '');
    assert.deepEqual(dropped, []);
  });

  test('a list metadata that is not an object reads as {} and is reported', () => {
    const dropped: DroppedDiscoveryEntry[] = [];
    const parsed = parseAggregatedDiscovery({ ...valid, metadata: 'x' }, dropped);
    assert.deepEqual(parsed.metadata, {});
    assert.equal(dropped[0]?.path, '$.metadata');
  });

  test('a body that is not an object is an error', () => {
    assert.throws(() => parseAggregatedDiscovery('<html>'), /at \$: expected an object/);
  });
});
