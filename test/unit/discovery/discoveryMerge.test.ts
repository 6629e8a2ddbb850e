// mergeDiscovery: the local apiserver's aggregated discovery plus what only peers add, by the merge rule (src/discovery/peerPart.ts).
// The peer part itself: peerPart.ts.
// Malformed entries: discoveryMergeMalformed.test.ts; the OpenAPI v3 index: openApiIndex.test.ts.
// Fixtures: test/support/discoveryFixtures.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { LocalOnlyGroupVersion } from '../../../src/model/cluster.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import { mergeDiscovery } from '../../../src/discovery/index.js';
import {
  APPS,
  BATCH,
  CRD_GROUP,
  NOW,
  apiserver,
  discovery,
  findGroup,
  findResource,
  group,
  groupNames,
  model,
  resource,
  skewedPair,
} from '../../support/discoveryFixtures.js';

describe('mergeDiscovery', () => {
  test('merged document lists the groups of every live apiserver', () => {
    const merged = mergeDiscovery('a', skewedPair(), NOW);
    assert.deepEqual(groupNames(merged.groups).sort(), ['apps', 'batch']);
    assert.deepEqual(merged.sources, ['a', 'b']);
  });

  test("the local document comes first as it is, then what it lacks at each level, in the peers' order", () => {
    const a = group('autoscaling', [{ version: 'v1', resources: [resource('horizontalpodautoscalers', 'HorizontalPodAutoscaler', ['get'])] }]);
    const b = group('autoscaling', [
      { version: 'v2', resources: [resource('horizontalpodautoscalers', 'HorizontalPodAutoscaler', ['get'])] },
      { version: 'v1', resources: [resource('horizontalpodautoscalers', 'HorizontalPodAutoscaler', ['get'])] },
    ]);
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([BATCH, a])), apiserver('b', discovery([APPS, b, BATCH]))]), NOW);
    assert.deepEqual(groupNames(merged.groups), ['batch', 'autoscaling', 'apps']);
    assert.deepEqual(
      findGroup(merged.groups, 'autoscaling').versions.map((v) => v.version),
      ['v1', 'v2'],
      'the local preferred version stays first',
    );
  });

  test('an entry the local lists keeps its own fields: no verbs, short names or subresource of peers replace its own', () => {
    const newer = group('apps', [
      {
        version: 'v1',
        resources: [
          resource('deployments', 'Deployment', ['get', 'list', 'watch'], {
            responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' },
            shortNames: ['dep'],
            subresources: [{ subresource: 'status', responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' }, verbs: ['get', 'patch'] }],
          }),
        ],
      },
    ]);
    const own = discovery([APPS]);
    const merged = mergeDiscovery('a', model([apiserver('a', own), apiserver('b', discovery([newer]))]), NOW);
    assert.equal(merged.groups, own.groups, 'nothing to add: the local list itself');
    assert.deepEqual(findResource(merged.groups, 'apps', 'v1', 'deployments').verbs, ['get', 'list']);
  });

  test('a resource the local lists gets the subresources only peers serve, after its own', () => {
    const newer = group('apps', [
      {
        version: 'v1',
        resources: [
          resource('deployments', 'Deployment', ['get', 'list', 'watch'], {
            responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' },
            subresources: [
              { subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: ['get', 'update'] },
              { subresource: 'status', responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' }, verbs: ['get', 'patch'] },
            ],
          }),
        ],
      },
    ]);
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([newer]))]), NOW);
    const deployments = findResource(merged.groups, 'apps', 'v1', 'deployments');
    assert.deepEqual(
      deployments.subresources?.map((s) => [s.subresource, s.verbs]),
      [
        ['status', ['get']],
        ['scale', ['get', 'update']],
      ],
    );
    assert.deepEqual(deployments.verbs, ['get', 'list'], 'the local verbs');
  });

  test('a resource the local lists without subresources gets the field for those only peers serve', () => {
    const localCore = [group('', [{ version: 'v1', resources: [resource('namespaces', 'Namespace', ['get', 'list'], { scope: 'Cluster' })] }])];
    const peerCore = [
      group('', [
        {
          version: 'v1',
          resources: [
            resource('namespaces', 'Namespace', ['get', 'list'], {
              scope: 'Cluster',
              subresources: [{ subresource: 'finalize', responseKind: { group: '', version: 'v1', kind: 'Namespace' }, verbs: ['update'] }],
            }),
          ],
        },
      ]),
    ];
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([], localCore)), apiserver('b', discovery([], peerCore))]), NOW);
    assert.deepEqual(
      findResource(merged.core, '', 'v1', 'namespaces').subresources?.map((s) => s.subresource),
      ['finalize'],
    );
  });

  test('each sidecar answers its own apiserver document plus what only its peers add', () => {
    const m = model([apiserver('a', discovery([APPS])), apiserver('b', discovery([BATCH, APPS]))]);
    assert.deepEqual(groupNames(mergeDiscovery('a', m, NOW).groups), ['apps', 'batch']);
    assert.deepEqual(groupNames(mergeDiscovery('b', m, NOW).groups), ['batch', 'apps']);
  });

  test('the core group is merged for /api', () => {
    const newerCore = [
      group('', [
        { version: 'v1', resources: [resource('pods', 'Pod', ['create', 'delete', 'get', 'list', 'watch']), resource('services', 'Service', ['get'])] },
      ]),
    ];
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([])), apiserver('b', discovery([], newerCore))]), NOW);
    assert.deepEqual(
      findGroup(merged.core, '').versions[0]?.resources.map((r) => r.resource),
      ['pods', 'namespaces', 'services'],
    );
    assert.deepEqual(findResource(merged.core, '', 'v1', 'pods').verbs, ['create', 'delete', 'get', 'list'], 'the local entry');
  });

  test('a CRD group-version from a peer is not merged', () => {
    const localOnly: LocalOnlyGroupVersion[] = [{ group: 'stable.example.com', version: 'v1', source: 'CustomResourceDefinition' }];
    const m = model([apiserver('a', discovery([APPS])), apiserver('b', discovery([APPS, CRD_GROUP]))], localOnly);
    assert.deepEqual(groupNames(mergeDiscovery('a', m, NOW).groups), ['apps']);
    assert.deepEqual(groupNames(mergeDiscovery('b', m, NOW).groups), ['apps', 'stable.example.com'], 'the local document is always used');
  });

  test('a deleted CRD within its grace period is still excluded from peers', () => {
    const localOnly: LocalOnlyGroupVersion[] = [
      { group: 'stable.example.com', version: 'v1', source: 'CustomResourceDefinition', excludedUntil: NOW + 60_000 },
    ];
    // a already dropped the deleted CRD; b's document is stale.
    const m = model([apiserver('a', discovery([APPS])), apiserver('b', discovery([APPS, CRD_GROUP]))], localOnly);
    assert.deepEqual(groupNames(mergeDiscovery('a', m, NOW).groups), ['apps']);
    assert.deepEqual(groupNames(mergeDiscovery('a', m, NOW + 60_000).groups), ['apps', 'stable.example.com'], 'after the grace period the exclusion ends');
  });

  test('an unreachable peer with a lease still contributes its resources', () => {
    const m = model([apiserver('a', discovery([APPS])), apiserver('b', discovery([BATCH]), { reachable: false })]);
    assert.deepEqual(groupNames(mergeDiscovery('a', m, NOW).groups), ['apps', 'batch']);
  });

  test('a peer whose lease is gone past the departed grace does not contribute', () => {
    const departed = apiserver('b', discovery([BATCH]), { leaseGoneAt: NOW - 120_000, reachable: false });
    delete departed.lease;
    const m = model([apiserver('a', discovery([APPS])), departed]);
    assert.deepEqual(groupNames(mergeDiscovery('a', m, NOW, { standings: apiserverStandings(m, 60_000) }).groups), ['apps']);
    assert.deepEqual(
      groupNames(mergeDiscovery('a', m, NOW, { standings: apiserverStandings(m, 300_000) }).groups),
      ['apps', 'batch'],
      'within the grace it still counts',
    );
  });

  test('a sidecar whose apiserver discovery is unknown has nothing to merge into', () => {
    const merged = mergeDiscovery('a', model([apiserver('a', undefined), apiserver('b', discovery([APPS]))]), NOW);
    assert.equal(merged.local, undefined);
    assert.deepEqual(groupNames(merged.groups), []);
    assert.deepEqual(merged.peer, {});
  });

  test('an apiserver without known discovery contributes nothing', () => {
    const m = model([apiserver('a', discovery([APPS])), apiserver('b', undefined)]);
    const merged = mergeDiscovery('a', m, NOW);
    assert.deepEqual(merged.sources, ['a']);
    assert.deepEqual(groupNames(merged.groups), ['apps']);
  });
});
