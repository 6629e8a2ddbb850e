// mergeDiscovery with malformed entries: a peer's malformed entry is left out, the local apiserver's own stays.
// Fixtures: test/support/discoveryFixtures.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { APIGroupDiscoveryList, ApiserverDiscovery } from '../../../src/model/discovery.js';
import { decodeAggregatedProtobuf, mergeDiscovery, renderAggregated } from '../../../src/discovery/index.js';
import { APPS, BATCH, NOW, apiserver, discovery, findGroup, findResource, group, groupNames, model, resource } from '../../support/discoveryFixtures.js';

describe('mergeDiscovery with malformed entries', () => {
  // kube-aggregator copies an extension server's discovery into every /apis unchecked.
  const WIDGETS = group('widgets.example.com', [
    {
      version: 'v1',
      resources: [resource('widgets', 'Widget', ['get', 'list']), resource('', 'Nameless', ['get']), resource('Gadgets', 'Gadget', ['get'])],
    },
  ]);
  const widgetNames = (l: APIGroupDiscoveryList): string[] => findGroup(l, 'widgets.example.com').versions[0]?.resources.map((r) => r.resource) ?? [];

  test("a peer's malformed entry is left out of the merged document; the rest of its document is merged", () => {
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([APPS, WIDGETS]))]), NOW);
    assert.deepEqual(widgetNames(merged.groups), ['widgets']);
    assert.deepEqual(groupNames(merged.groups), ['apps', 'widgets.example.com']);
  });

  test("the local apiserver's own malformed entry stays in its merged document as it listed it", () => {
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS, WIDGETS])), apiserver('b', discovery([APPS]))]), NOW);
    assert.deepEqual(widgetNames(merged.groups), ['widgets', '', 'Gadgets']);
  });

  test('the same malformed entry in every apiserver (an APIService, shared-state-local) appears only as each local apiserver lists it', () => {
    const m = model(
      [apiserver('a', discovery([APPS, WIDGETS])), apiserver('b', discovery([APPS, WIDGETS]))],
      [{ group: 'widgets.example.com', version: 'v1', source: 'APIService' }],
    );
    assert.deepEqual(widgetNames(mergeDiscovery('a', m, NOW).groups), ['widgets', '', 'Gadgets']);
    assert.deepEqual(widgetNames(mergeDiscovery('b', m, NOW).groups), ['widgets', '', 'Gadgets']);
  });

  test("a local malformed entry merged with a peer's valid entries still renders as JSON and protobuf", () => {
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([WIDGETS])), apiserver('b', discovery([BATCH]))]), NOW);
    assert.deepEqual(groupNames(decodeAggregatedProtobuf(renderAggregated(merged.groups, 'protobuf').body)), ['widgets.example.com', 'batch']);
    assert.match(renderAggregated(merged.groups, 'json').body.toString('utf8'), /"resource":""/);
  });

  test('a peer\'s group named "", invalid group, and second entry of a group are left out', () => {
    const bad = [
      group('', [{ version: 'v1', resources: [resource('things', 'Thing', ['get'])] }]),
      group('Bad.Example.com', [{ version: 'v1', resources: [resource('things', 'Thing', ['get'])] }]),
    ];
    const batchAgain = group('batch', [{ version: 'v2', resources: [resource('jobs', 'Job', ['get'])] }]);
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([BATCH, ...bad, batchAgain]))]), NOW);
    assert.deepEqual(groupNames(merged.groups), ['apps', 'batch']);
    assert.deepEqual(
      findGroup(merged.groups, 'batch').versions.map((v) => v.version),
      ['v1'],
    );
  });

  test("a peer's malformed version and subresource are left out; its resource stays", () => {
    const peerBatch = group('batch', [
      {
        version: 'v1',
        resources: [
          resource('jobs', 'Job', ['get'], {
            subresources: [
              { subresource: 'status', verbs: ['get'] },
              { subresource: '', verbs: ['get'] },
            ],
          }),
        ],
      },
      { version: 'V2', resources: [resource('jobs', 'Job', ['get'])] },
    ]);
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([peerBatch]))]), NOW);
    assert.deepEqual(
      findGroup(merged.groups, 'batch').versions.map((v) => v.version),
      ['v1'],
    );
    assert.deepEqual(
      findResource(merged.groups, 'batch', 'v1', 'jobs').subresources?.map((s) => s.subresource),
      ['status'],
    );
  });

  test("a peer's second entry of a resource is not merged: the first one's verbs are", () => {
    const twice = group('batch', [{ version: 'v1', resources: [resource('jobs', 'Job', ['get']), resource('jobs', 'Job', ['delete'])] }]);
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([twice]))]), NOW);
    assert.deepEqual(findResource(merged.groups, 'batch', 'v1', 'jobs').verbs, ['get']);
    assert.equal(findGroup(merged.groups, 'batch').versions[0]?.resources.length, 1);
  });

  test("a peer's OpenAPI index entry whose serverRelativeURL does not name its document is not merged; the peer's other entries are", () => {
    const peer: ApiserverDiscovery = {
      ...discovery([BATCH, APPS]),
      openapi: {
        paths: {
          'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=B' },
          'apis/batch/v1': { serverRelativeURL: 'https://elsewhere.example/openapi/v3/apis/batch/v1?hash=B' },
          'apis/apps/v1': { serverRelativeURL: '/openapi/v3/apis/apps/v1?hash=B' },
        },
      },
    };
    const local: ApiserverDiscovery = { ...discovery([]), openapi: { paths: { 'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=A' } } } };
    const merged = mergeDiscovery('a', model([apiserver('a', local), apiserver('b', peer)]), NOW);
    assert.deepEqual(merged.openapi?.paths, {
      'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=A' },
      'apis/apps/v1': { serverRelativeURL: '/openapi/v3/apis/apps/v1?hash=B' },
    });
  });

  test("the local apiserver's own OpenAPI index entries are kept as it listed them, even those a peer could not offer", () => {
    const paths = {
      'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=A' },
      'apis/batch/v1': { serverRelativeURL: '/somewhere/else?hash=A' },
      version: { serverRelativeURL: '/openapi/v3/version?hash=A' },
    };
    const merged = mergeDiscovery('a', model([apiserver('a', { ...discovery([BATCH]), openapi: { paths } }), apiserver('b', discovery([BATCH]))]), NOW);
    assert.deepEqual(merged.openapi?.paths, paths);
  });

  test("a peer's OpenAPI index entry for a group-version it lists only malformed is not merged", () => {
    const paths = ['api/v1', 'apis/batch/v1', 'apis/batch/V2'];
    const peer: ApiserverDiscovery = {
      ...discovery([
        group('batch', [
          { version: 'v1', resources: [resource('jobs', 'Job', ['get'])] },
          { version: 'V2', resources: [resource('jobs', 'Job', ['get'])] },
        ]),
      ]),
      openapi: { paths: Object.fromEntries(paths.map((p) => [p, { serverRelativeURL: `/openapi/v3/${p}?hash=B` }])) },
    };
    const local: ApiserverDiscovery = { ...discovery([APPS]), openapi: { paths: { 'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=A' } } } };
    const merged = mergeDiscovery('a', model([apiserver('a', local), apiserver('b', peer)]), NOW);
    assert.deepEqual(Object.keys(merged.openapi?.paths ?? {}), ['api/v1', 'apis/batch/v1']);
  });
});
