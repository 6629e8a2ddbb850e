// mergeDiscovery: the union of every live apiserver's aggregated discovery, by upstream's merge rules.
// Malformed entries: discoveryMergeMalformed.test.ts; the OpenAPI v3 index: openApiIndex.test.ts.
// Fixtures: test/support/discoveryFixtures.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { LocalOnlyGroupVersion } from '../../../src/model/cluster.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import { consensusOrder, mergeDiscovery, renderAggregated } from '../../../src/discovery/index.js';
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

  test('merge keeps each server order and puts the preferred version first', () => {
    const a = group('autoscaling', [
      { version: 'v2', resources: [resource('horizontalpodautoscalers', 'HorizontalPodAutoscaler', ['get'])] },
      { version: 'v1', resources: [resource('horizontalpodautoscalers', 'HorizontalPodAutoscaler', ['get'])] },
    ]);
    const b = group('autoscaling', [
      { version: 'v2', resources: [resource('horizontalpodautoscalers', 'HorizontalPodAutoscaler', ['get'])] },
      { version: 'v1', resources: [resource('horizontalpodautoscalers', 'HorizontalPodAutoscaler', ['get'])] },
      { version: 'v2beta2', resources: [resource('horizontalpodautoscalers', 'HorizontalPodAutoscaler', ['get'])] },
    ]);
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS, a, BATCH])), apiserver('b', discovery([APPS, b, CRD_GROUP]))]), NOW);
    assert.deepEqual(groupNames(merged.groups), ['apps', 'autoscaling', 'batch', 'stable.example.com']);
    assert.deepEqual(
      findGroup(merged.groups, 'autoscaling').versions.map((v) => v.version),
      ['v2', 'v1', 'v2beta2'],
    );
  });

  test('consensus order keeps every list relative order and breaks ties by first appearance', () => {
    assert.deepEqual(
      consensusOrder([
        ['a', 'b', 'd'],
        ['a', 'c', 'd'],
      ]),
      ['a', 'b', 'c', 'd'],
    );
    assert.deepEqual(
      consensusOrder([
        ['x', 'z'],
        ['y', 'x'],
      ]),
      ['y', 'x', 'z'],
    );
    // Disagreeing lists (a cycle) still give one deterministic order.
    assert.deepEqual(
      consensusOrder([
        ['p', 'q'],
        ['q', 'p'],
      ]),
      ['p', 'q'],
    );
  });

  test('a resource on several servers is the first entry with verbs and subresources unioned', () => {
    const newer = group('apps', [
      {
        version: 'v1',
        resources: [
          resource('deployments', 'Deployment', ['get', 'list', 'watch'], {
            responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' },
            shortNames: ['dep'],
            subresources: [
              { subresource: 'status', responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' }, verbs: ['get', 'patch'] },
              { subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: ['get', 'update'] },
            ],
          }),
        ],
      },
    ]);
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([newer]))]), NOW);
    const deployments = findResource(merged.groups, 'apps', 'v1', 'deployments');
    assert.deepEqual(deployments.verbs, ['get', 'list', 'watch']);
    assert.deepEqual(deployments.shortNames, ['deploy'], 'the first server (by name) gives the entry');
    assert.deepEqual(
      deployments.subresources?.map((s) => [s.subresource, s.verbs]),
      [
        ['status', ['get', 'patch']],
        ['scale', ['get', 'update']],
      ],
    );
  });

  test('merge gives the same document whichever server builds it', () => {
    const localOnly: LocalOnlyGroupVersion[] = [{ group: 'stable.example.com', version: 'v1', source: 'CustomResourceDefinition' }];
    const m = model(
      [apiserver('a', discovery([APPS, CRD_GROUP])), apiserver('b', discovery([BATCH, CRD_GROUP])), apiserver('c', discovery([APPS, BATCH, CRD_GROUP]))],
      localOnly,
    );
    const rendered = ['a', 'b', 'c'].map((name) => renderAggregated(mergeDiscovery(name, m, NOW).groups, 'json'));
    assert.equal(rendered[1]?.body.toString(), rendered[0]?.body.toString());
    assert.equal(rendered[2]?.body.toString(), rendered[0]?.body.toString());
    assert.equal(rendered[1]?.etag, rendered[0]?.etag);
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
    assert.deepEqual(findResource(merged.core, '', 'v1', 'pods').verbs, ['create', 'delete', 'get', 'list', 'watch']);
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

  test('an apiserver without known discovery contributes nothing', () => {
    const m = model([apiserver('a', discovery([APPS])), apiserver('b', undefined)]);
    const merged = mergeDiscovery('a', m, NOW);
    assert.deepEqual(merged.sources, ['a']);
    assert.deepEqual(groupNames(merged.groups), ['apps']);
  });
});
