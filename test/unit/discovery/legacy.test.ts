// Legacy discovery from the peer part, and the merge rule on legacy
// documents (src/discovery/legacy.ts): the local document as listed, then
// what the part adds that it lacks by name. Fixtures: test/support/discoveryFixtures.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  legacyDocumentOfPath,
  legacyGroupOf,
  legacyResourceOf,
  legacyResourcesOf,
  legacySubresourceOf,
  mergeGroup,
  mergeGroupList,
  mergeResourceList,
  mergeVersions,
} from '../../../src/discovery/legacy.js';
import type { APIGroupDiscovery, APIResourceDiscovery } from '../../../src/model/discovery.js';
import type { APIGroup, APIResourceList } from '../../../src/model/legacyDiscovery.js';
import { APPS, BATCH, group, list, resource } from '../../support/discoveryFixtures.js';
import { legacyGroup } from '../../support/legacyBodies.js';

const [apps, batch] = list([APPS, BATCH]).items as [APIGroupDiscovery, APIGroupDiscovery];
const jobs = batch.versions[0]?.resources[0] as APIResourceDiscovery;
const coreV2 = list([
  group('', [{ version: 'v2', resources: [resource('pods', 'Pod', ['get'], { responseKind: { group: '', version: 'v2', kind: 'Pod' } })] }]),
]).items[0] as APIGroupDiscovery;
const LOCAL_BATCH: APIGroup = legacyGroup('batch', 'v1beta1');

describe('legacy entries of aggregated ones (as client-go derives them)', () => {
  test('a resource: its names, scope as namespaced, its response kind, verbs, short names and categories', () => {
    assert.deepEqual(legacyResourceOf(jobs), {
      name: 'jobs',
      singularName: 'job',
      namespaced: true,
      group: 'batch',
      version: 'v1',
      kind: 'Job',
      verbs: ['create', 'get', 'list'],
      categories: ['all'],
    });
  });

  test('a subresource: "resource/subresource", its resource singular name and scope, its own response kind and verbs', () => {
    const status = jobs.subresources?.[0];
    assert.ok(status);
    assert.deepEqual(legacySubresourceOf(jobs, status), {
      name: 'jobs/status',
      singularName: 'job',
      namespaced: true,
      group: 'batch',
      version: 'v1',
      kind: 'Job',
      verbs: ['get', 'patch', 'update'],
    });
  });

  test('a resource or subresource without a response kind has no legacy entry', () => {
    const { responseKind: _, ...bare } = jobs;
    assert.equal(legacyResourceOf(bare), undefined);
    assert.equal(legacySubresourceOf(jobs, { subresource: 'scale', verbs: ['get'] }), undefined);
  });

  test("a version's entries: each resource followed by its subresources; a stale version has none", () => {
    const v1 = batch.versions[0];
    assert.ok(v1);
    assert.deepEqual(
      legacyResourcesOf(v1).map((r) => r.name),
      ['jobs', 'jobs/status', 'cronjobs'],
    );
    assert.deepEqual(legacyResourcesOf({ ...v1, freshness: 'Stale' }), []);
  });

  test('a group: its versions that are not stale, the first one preferred', () => {
    const twoVersions = {
      ...batch,
      versions: [{ version: 'v2', resources: [], freshness: 'Stale' as const }, ...batch.versions, { version: 'v1beta1', resources: [] }],
    };
    assert.deepEqual(legacyGroupOf(twoVersions), {
      name: 'batch',
      versions: [
        { groupVersion: 'batch/v1', version: 'v1' },
        { groupVersion: 'batch/v1beta1', version: 'v1beta1' },
      ],
      preferredVersion: { groupVersion: 'batch/v1', version: 'v1' },
    });
  });
});

describe('the legacy merge rule', () => {
  test('/api: the local versions, then the core versions the part adds', () => {
    assert.deepEqual(mergeVersions({ kind: 'APIVersions', versions: ['v1'] }, { groups: [coreV2] }).versions, ['v1', 'v2']);
  });

  test('/api: a part that adds nothing gives the local document itself', () => {
    const local = { kind: 'APIVersions' as const, versions: ['v1', 'v2'] };
    assert.equal(mergeVersions(local, { groups: [coreV2] }), local);
  });

  test('/apis: the local groups as listed, their missing versions appended, then the groups only the part has', () => {
    const merged = mergeGroupList({ kind: 'APIGroupList', apiVersion: 'v1', groups: [LOCAL_BATCH] }, { groups: [apps, batch] });
    assert.deepEqual(
      merged.groups.map((g) => [g.name, g.versions.map((v) => v.version), g.preferredVersion?.version]),
      [
        ['batch', ['v1beta1', 'v1'], 'v1beta1'],
        ['apps', ['v1'], 'v1'],
      ],
    );
  });

  test("/apis/{g}: the local group's preferred version is kept, though the part's version comes first in aggregated discovery", () => {
    const merged = mergeGroup(LOCAL_BATCH, { groups: [batch] });
    assert.deepEqual(merged.preferredVersion, LOCAL_BATCH.preferredVersion);
    assert.deepEqual(
      merged.versions.map((v) => v.groupVersion),
      ['batch/v1beta1', 'batch/v1'],
    );
  });

  test('/apis/{g}: a group the part does not hold is the local document itself', () => {
    assert.equal(mergeGroup(LOCAL_BATCH, { groups: [apps] }), LOCAL_BATCH);
  });

  test('/apis: a built-in group the local apiserver serves but does not list (its APIService deleted by another apiserver) is added', () => {
    const merged = mergeGroupList(
      { kind: 'APIGroupList', apiVersion: 'v1', groups: [LOCAL_BATCH] },
      { groups: [], localBuiltIn: [{ group: 'apps', versions: ['v1'] }] },
    );
    assert.deepEqual(
      merged.groups.map((g) => [g.name, g.versions.map((v) => v.version), g.preferredVersion?.version]),
      [
        ['batch', ['v1beta1'], 'v1beta1'],
        ['apps', ['v1'], 'v1'],
      ],
    );
  });

  test("/apis: a built-in version missing from a listed group is appended after the peers' versions", () => {
    const merged = mergeGroupList(
      { kind: 'APIGroupList', apiVersion: 'v1', groups: [legacyGroup('batch', 'v2')] },
      { groups: [batch], localBuiltIn: [{ group: 'batch', versions: ['v2', 'v1beta1'] }] },
    );
    assert.deepEqual(
      merged.groups.map((g) => g.versions.map((v) => v.version)),
      [['v2', 'v1', 'v1beta1']],
    );
  });

  test("/apis: a group both built in and peer-served, listed by nobody, prefers the local apiserver's version", () => {
    const merged = mergeGroupList(
      { kind: 'APIGroupList', apiVersion: 'v1', groups: [] },
      { groups: [batch], localBuiltIn: [{ group: 'batch', versions: ['v1beta1'] }] },
    );
    assert.deepEqual(
      merged.groups.map((g) => [g.name, g.versions.map((v) => v.version), g.preferredVersion?.version]),
      [['batch', ['v1', 'v1beta1'], 'v1beta1']],
    );
  });

  test('/apis/{g}: the built-in versions the local group lacks are appended', () => {
    assert.deepEqual(
      mergeGroup(LOCAL_BATCH, { groups: [], localBuiltIn: [{ group: 'batch', versions: ['v1beta1', 'v1'] }] }).versions.map((v) => v.version),
      ['v1beta1', 'v1'],
    );
  });

  test('/apis/{g}/{v}: the local entries, then the resources and subresources the part adds whose names the local lacks', () => {
    const local: APIResourceList = {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: 'batch/v1',
      resources: [{ name: 'jobs', singularName: 'job', namespaced: true, kind: 'Job', verbs: ['get'], storageVersionHash: 'abc' }],
    };
    const merged = mergeResourceList(local, { groups: [batch] });
    assert.deepEqual(
      merged.resources.map((r) => r.name),
      ['jobs', 'jobs/status', 'cronjobs'],
    );
    assert.equal(merged.resources[0], local.resources[0], 'the local entry untouched');
  });

  test('/api/{v}: the core group-version is read from groupVersion without a group', () => {
    const local: APIResourceList = { groupVersion: 'v2', resources: [] };
    assert.deepEqual(
      mergeResourceList(local, { groups: [coreV2] }).resources.map((r) => r.name),
      ['pods'],
    );
    assert.equal(mergeResourceList({ groupVersion: 'v1', resources: [] }, { groups: [coreV2] }).resources.length, 0);
  });
});

describe('legacyDocumentOfPath', () => {
  test('names the five legacy documents, a trailing slash allowed', () => {
    assert.deepEqual(legacyDocumentOfPath('/api'), { kind: 'versions' });
    assert.deepEqual(legacyDocumentOfPath('/apis/'), { kind: 'group-list' });
    assert.deepEqual(legacyDocumentOfPath('/apis/batch'), { kind: 'group', group: 'batch' });
    assert.deepEqual(legacyDocumentOfPath('/api/v1/'), { kind: 'resource-list', group: '', version: 'v1' });
    assert.deepEqual(legacyDocumentOfPath('/apis/batch/v1'), { kind: 'resource-list', group: 'batch', version: 'v1' });
  });

  test('names nothing else', () => {
    for (const path of ['/api/v1/pods', '/apis/batch/v1/jobs', '/apis//v1', '/openapi/v3', '/', '/api//'])
      assert.equal(legacyDocumentOfPath(path), undefined, path);
  });
});
