// What an apiserver serves, read from its own aggregated discovery.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { servedFromDiscovery } from '../../../../src/tools/upgradeTest/servedSets.js';

// As kube-apiserver writes them: the core group's name omitted, every resource with its scope and verbs.
const group = (name: string | undefined, version: string, resources: string[]) => ({
  metadata: name === undefined ? {} : { name },
  versions: [{ version, resources: resources.map((resource) => ({ resource, scope: 'Namespaced', verbs: ['get', 'list'] })) }],
});
const list = (...items: unknown[]): string => JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items });
const core = list(group(undefined, 'v1', ['configmaps', 'pods']));

describe('upgrade test served sets', () => {
  it('lists the test resources an apiserver serves, from /api and /apis, and every group', () => {
    const apis = list(
      group('apps', 'v1', ['deployments']),
      group('batch', 'v1', ['jobs']),
      group('storagemigration.k8s.io', 'v1', ['storageversionmigrations']),
    );
    const served = servedFromDiscovery(core, apis);
    assert.deepEqual([...(served?.resources ?? [])].sort(), ['configmaps', 'deployments', 'jobs', 'storageversionmigrations']);
    assert.deepEqual([...(served?.groups ?? [])].sort(), ['apps', 'batch', 'storagemigration.k8s.io']);
  });

  it('a group listed at another version does not serve the resource at the test version', () => {
    const served = servedFromDiscovery(core, list(group('storagemigration.k8s.io', 'v1beta1', ['storageversionmigrations'])));
    assert.equal(served?.resources.has('storageversionmigrations'), false);
    assert.equal(served?.groups.has('storagemigration.k8s.io'), true);
  });

  it('a document that is not an aggregated list is no reading', () => {
    assert.equal(servedFromDiscovery(core, JSON.stringify({ kind: 'APIGroupList', groups: [{ name: 'apps' }] })), undefined);
    assert.equal(servedFromDiscovery('not json', list()), undefined);
  });
});
