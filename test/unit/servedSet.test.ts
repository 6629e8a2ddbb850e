import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { APIGroupDiscoveryList, ApiserverDiscovery } from '../../src/model/discovery.js';
import { parseAggregatedDiscovery, servedSetFromDiscovery } from '../../src/model/servedSet.js';

function list(items: unknown[]): APIGroupDiscoveryList {
  return parseAggregatedDiscovery({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items });
}

// Shapes as kube-apiserver writes them: the core entry has no name, Go writes nil slices as null.
const CORE = list([
  {
    metadata: { creationTimestamp: null },
    versions: [
      {
        version: 'v1',
        resources: [
          {
            resource: 'pods',
            responseKind: { group: '', version: 'v1', kind: 'Pod' },
            scope: 'Namespaced',
            singularResource: 'pod',
            verbs: ['list', 'get', 'create', 'delete'],
            subresources: [
              { subresource: 'status', verbs: ['get', 'patch', 'update'] },
              { subresource: 'exec', verbs: ['create', 'get'] },
              { subresource: 'binding', verbs: ['create'] },
            ],
          },
          { resource: 'namespaces', scope: 'Cluster', singularResource: 'namespace', verbs: ['get', 'list'], responseKind: null },
        ],
      },
    ],
  },
]);

const GROUPS = list([
  {
    metadata: { name: 'batch', creationTimestamp: null },
    versions: [{ version: 'v1', resources: [{ resource: 'jobs', scope: 'Namespaced', verbs: ['get'], subresources: [{ subresource: 'status', verbs: null }] }] }],
  },
  {
    metadata: { name: 'apps' },
    versions: [
      { version: 'v1', resources: [{ resource: 'deployments', scope: 'Namespaced', verbs: ['get'] }] },
      { version: 'v1beta1', freshness: 'Stale' },
    ],
  },
  {
    metadata: { name: 'rbac.authorization.k8s.io' },
    versions: [{ version: 'v1', resources: [{ resource: 'clusterroles', scope: 'Cluster', verbs: ['get'] }] }],
  },
]);

const DISCOVERY: ApiserverDiscovery = { core: CORE, groups: GROUPS };

describe('servedSetFromDiscovery', () => {
  test('core resources come from /api with group ""', () => {
    const core = servedSetFromDiscovery(DISCOVERY).filter((r) => r.group === '');
    assert.deepEqual(
      core.map((r) => `${r.version}/${r.resource}`),
      ['v1/namespaces', 'v1/pods'],
    );
  });

  test('subresources are listed by name, sorted', () => {
    const pods = servedSetFromDiscovery(DISCOVERY).find((r) => r.resource === 'pods');
    assert.deepEqual(pods?.subresources, ['binding', 'exec', 'status']);
    const namespaces = servedSetFromDiscovery(DISCOVERY).find((r) => r.resource === 'namespaces');
    assert.deepEqual(namespaces?.subresources, []);
  });

  test('namespaced follows the scope', () => {
    const set = servedSetFromDiscovery(DISCOVERY);
    assert.equal(set.find((r) => r.resource === 'pods')?.namespaced, true);
    assert.equal(set.find((r) => r.resource === 'namespaces')?.namespaced, false);
    assert.equal(set.find((r) => r.resource === 'clusterroles')?.namespaced, false);
  });

  test('verbs are sorted', () => {
    const pods = servedSetFromDiscovery(DISCOVERY).find((r) => r.resource === 'pods');
    assert.deepEqual(pods?.verbs, ['create', 'delete', 'get', 'list']);
  });

  test('result is sorted by group, version, resource whatever the document order', () => {
    const set = servedSetFromDiscovery(DISCOVERY);
    assert.deepEqual(
      set.map((r) => `${r.group}/${r.version}/${r.resource}`),
      ['/v1/namespaces', '/v1/pods', 'apps/v1/deployments', 'batch/v1/jobs', 'rbac.authorization.k8s.io/v1/clusterroles'],
    );
    const reversed: ApiserverDiscovery = {
      core: CORE,
      groups: { ...GROUPS, items: [...GROUPS.items].reverse() },
    };
    assert.deepEqual(servedSetFromDiscovery(reversed), set);
  });
});

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
      items: [{ metadata: { name: 'x' }, futureField: 1, versions: [{ version: 'v1', resources: [{ resource: 'r', scope: 'Cluster', verbs: [], extra: 'e' }] }] }],
    });
    assert.equal((parsed.items[0] as unknown as Record<string, unknown>)['futureField'], 1);
    assert.equal((parsed.items[0]?.versions[0]?.resources[0] as unknown as Record<string, unknown>)['extra'], 'e');
  });

  test('missing items is an error naming $.items', () => {
    assert.throws(() => parseAggregatedDiscovery({ ...valid, items: undefined }), /at \$\.items: expected an array/);
  });

  test('a non-aggregated APIGroupList is rejected with a hint', () => {
    assert.throws(
      () => parseAggregatedDiscovery({ kind: 'APIGroupList', apiVersion: 'v1', groups: [] }),
      /got kind "APIGroupList".*aggregated discovery/,
    );
  });

  test('a wrong apiVersion is rejected', () => {
    assert.throws(() => parseAggregatedDiscovery({ ...valid, apiVersion: 'apidiscovery.k8s.io/v2beta1' }), /apiVersion "apidiscovery\.k8s\.io\/v2beta1"/);
  });

  test('non-array versions is an error naming its path', () => {
    assert.throws(
      () => parseAggregatedDiscovery({ ...valid, items: [{ metadata: { name: 'apps' }, versions: { v1: {} } }] }),
      /at \$\.items\[0\]\.versions: expected an array, got an object/,
    );
  });

  test('an unknown scope is an error naming its path', () => {
    assert.throws(
      () =>
        parseAggregatedDiscovery({
          ...valid,
          items: [{ metadata: { name: 'apps' }, versions: [{ version: 'v1', resources: [{ resource: 'deployments', scope: 'Global', verbs: [] }] }] }],
        }),
      /at \$\.items\[0\]\.versions\[0\]\.resources\[0\]\.scope: expected "Cluster" or "Namespaced", got "Global"/,
    );
  });

  test('a resource without a name is an error', () => {
    assert.throws(
      () => parseAggregatedDiscovery({ ...valid, items: [{ metadata: { name: 'a' }, versions: [{ version: 'v1', resources: [{ scope: 'Cluster', verbs: [] }] }] }] }),
      /resources\[0\]\.resource: expected a string, got nothing/,
    );
  });

  test('a non-string verb is an error', () => {
    assert.throws(
      () =>
        parseAggregatedDiscovery({
          ...valid,
          items: [{ metadata: { name: 'a' }, versions: [{ version: 'v1', resources: [{ resource: 'r', scope: 'Cluster', verbs: ['get', 7] }] }] }],
        }),
      /verbs\[1\]: expected a string, got number 7/,
    );
  });

  test('a body that is not an object is an error', () => {
    assert.throws(() => parseAggregatedDiscovery('<html>'), /at \$: expected an object/);
  });
});
