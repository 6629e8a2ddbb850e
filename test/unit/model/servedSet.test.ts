// servedSetFromDiscovery: what an apiserver serves, read from its aggregated discovery.
// Documents: test/support/discoveryDocuments.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ApiserverDiscovery } from '../../../src/model/discovery.js';
import { servedSetFromDiscovery } from '../../../src/model/servedSet.js';
import { CORE, DISCOVERY, GROUPS } from '../../support/discoveryDocuments.js';

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
