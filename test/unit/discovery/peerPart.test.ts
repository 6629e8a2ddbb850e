// The peer part: what only peers add to a sidecar's documents (src/discovery/peerPart.ts),
// the part the control plane pushes and the document filter merges into the local document.
// Fixtures: test/support/discoveryFixtures.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { LocalOnlyGroupVersion } from '../../../src/model/cluster.js';
import type { APIGroupDiscovery } from '../../../src/model/discovery.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import { mergeDiscovery } from '../../../src/discovery/merge.js';
import { peerParts, type AggregatedPeerPart } from '../../../src/discovery/peerPart.js';
import { APPS, BATCH, CRD_GROUP, NOW, apiserver, discovery, group, model, resource } from '../../support/discoveryFixtures.js';

/** The part's resources as group/version/resource, in its order. */
function listed(part: AggregatedPeerPart | undefined): string[] {
  return (part?.groups ?? []).flatMap((g: APIGroupDiscovery) =>
    g.versions.flatMap((v) => v.resources.map((r) => `${g.metadata.name}/${v.version}/${r.resource}`)),
  );
}

const jobs = (verbs: string[], extra = {}) => resource('jobs', 'Job', verbs, extra);
const batchWith = (...resources: unknown[]) => group('batch', [{ version: 'v1', resources }]);

describe('peerParts', () => {
  test('a sidecar whose apiserver discovery is unknown gets no peer part', () => {
    const merged = mergeDiscovery('a', model([apiserver('a', undefined), apiserver('b', discovery([APPS]))]), NOW);
    assert.deepEqual(peerParts(merged), []);
  });

  test('a sidecar whose apiserver discovery is known gets a part for /api and /apis, even an empty one', () => {
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([APPS]))]), NOW);
    assert.deepEqual(
      peerParts(merged).map((p) => [p.document, 'groups' in p ? p.groups.length : -1]),
      [
        ['core-discovery', 0],
        ['group-discovery', 0],
      ],
    );
  });

  test('the OpenAPI part comes only while the local index is known', () => {
    const withIndex = { ...discovery([APPS]), openapi: { paths: { 'apis/apps/v1': { serverRelativeURL: '/openapi/v3/apis/apps/v1?hash=A' } } } };
    const merged = mergeDiscovery('a', model([apiserver('a', withIndex), apiserver('b', discovery([APPS]))]), NOW);
    assert.deepEqual(
      peerParts(merged).map((p) => p.document),
      ['core-discovery', 'group-discovery', 'openapi-index'],
    );
  });
});

describe('the aggregated peer part', () => {
  test('holds a group only a peer serves, whole', () => {
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([APPS, BATCH]))]), NOW);
    assert.deepEqual(listed(merged.peer.groups), ['batch/v1/jobs', 'batch/v1/cronjobs']);
    assert.deepEqual(listed(merged.peer.core), [], 'both list the same core group');
  });

  test('holds, of a group the local lists, only the versions it lacks', () => {
    const local = group('autoscaling', [{ version: 'v1', resources: [resource('horizontalpodautoscalers', 'HPA', ['get'])] }]);
    const peer = group('autoscaling', [
      { version: 'v2', resources: [resource('horizontalpodautoscalers', 'HPA', ['get'])] },
      { version: 'v1', resources: [resource('horizontalpodautoscalers', 'HPA', ['get'])] },
    ]);
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([local])), apiserver('b', discovery([peer]))]), NOW);
    assert.deepEqual(listed(merged.peer.groups), ['autoscaling/v2/horizontalpodautoscalers']);
  });

  test('holds, of a version the local lists, only the resources it lacks', () => {
    const localJobs = jobs(['get'], { subresources: [{ subresource: 'status', verbs: ['get'] }] });
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([batchWith(localJobs)])), apiserver('b', discovery([BATCH]))]), NOW);
    assert.deepEqual(listed(merged.peer.groups), ['batch/v1/cronjobs']);
  });

  test('holds nothing for a resource the local lists with every subresource peers serve', () => {
    const peerJobs = batchWith(jobs(['create', 'delete', 'get'], { subresources: [{ subresource: 'status', verbs: ['get'] }] }));
    const localJobs = batchWith(jobs(['get'], { subresources: [{ subresource: 'status', verbs: ['get', 'patch'] }] }));
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([localJobs])), apiserver('b', discovery([peerJobs]))]), NOW);
    assert.deepEqual(listed(merged.peer.groups), []);
  });

  test("holds, of a resource the local lists, the peers' entry with only the subresources the local lacks", () => {
    const peerJobs = batchWith(
      jobs(['create', 'get'], {
        subresources: [
          { subresource: 'status', verbs: ['get'] },
          { subresource: 'scale', verbs: ['get', 'update'] },
        ],
      }),
    );
    const localJobs = batchWith(jobs(['get'], { subresources: [{ subresource: 'status', verbs: ['get'] }] }));
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([localJobs])), apiserver('b', discovery([peerJobs]))]), NOW);
    const entry = merged.peer.groups?.groups[0]?.versions[0]?.resources[0];
    assert.equal(entry?.resource, 'jobs');
    assert.deepEqual(
      entry?.subresources?.map((s) => s.subresource),
      ['scale'],
    );
  });

  test('never holds a subresource the local apiserver may serve though its discovery entry was dropped', () => {
    const peerJobs = batchWith(jobs(['get'], { subresources: [{ subresource: 'scale', verbs: ['get'] }] }));
    const local = {
      ...discovery([batchWith(jobs(['get']))]),
      dropped: [
        {
          document: '/apis' as const,
          group: 'batch',
          version: 'v1',
          resource: 'jobs',
          subresource: 'scale',
          path: '$.x',
          reason: 'x',
          kind: 'malformed' as const,
        },
      ],
    };
    const merged = mergeDiscovery('a', model([apiserver('a', local), apiserver('b', discovery([peerJobs]))]), NOW);
    assert.deepEqual(listed(merged.peer.groups), []);
  });

  test('never holds a CRD or APIService group-version, even one the local lacks', () => {
    const localOnly: LocalOnlyGroupVersion[] = [{ group: 'stable.example.com', version: 'v1', source: 'CustomResourceDefinition' }];
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([APPS, CRD_GROUP]))], localOnly), NOW);
    assert.deepEqual(listed(merged.peer.groups), []);
  });

  test("carries the local apiserver's built-in group-versions for legacy /apis, never a CRD or APIService one, none of the core group", () => {
    const localOnly: LocalOnlyGroupVersion[] = [{ group: 'stable.example.com', version: 'v1', source: 'CustomResourceDefinition' }];
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS, CRD_GROUP])), apiserver('b', discovery([APPS]))], localOnly), NOW);
    assert.deepEqual(merged.peer.groups?.localBuiltIn, [{ group: 'apps', versions: ['v1'] }]);
    assert.equal(merged.peer.core?.localBuiltIn, undefined);
  });

  test('never holds a peer entry mvproxy does not route on', () => {
    const peer = batchWith(jobs(['get']), resource('Bad_Name', 'Bad', ['get']));
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([peer]))]), NOW);
    assert.deepEqual(listed(merged.peer.groups), ['batch/v1/jobs']);
  });

  test('never holds a resource the local apiserver may serve though its discovery entry was dropped (the routes keep it local)', () => {
    const local = {
      ...discovery([APPS]),
      dropped: [{ document: '/apis' as const, group: 'batch', version: 'v1', path: '$.items[1]', reason: 'x', kind: 'malformed' as const }],
    };
    const merged = mergeDiscovery('a', model([apiserver('a', local), apiserver('b', discovery([APPS, BATCH]))]), NOW);
    assert.deepEqual(listed(merged.peer.groups), []);
  });

  test('leaves out a peer version with no resource', () => {
    const peer = group('batch', [{ version: 'v1', resources: [] }]);
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([peer]))]), NOW);
    assert.deepEqual(merged.peer.groups?.groups, []);
  });

  test('lists the peers in name order, each entry at its first appearance', () => {
    const c = group('batch', [{ version: 'v1', resources: [resource('cronjobs', 'CronJob', ['get']), jobs(['get'])] }]);
    const b = batchWith(jobs(['get']));
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('c', discovery([c])), apiserver('b', discovery([b]))]), NOW);
    assert.deepEqual(listed(merged.peer.groups), ['batch/v1/jobs', 'batch/v1/cronjobs']);
  });

  test('a resource several peers list is the first one entry with the verbs and subresources of all', () => {
    const b = batchWith(jobs(['get'], { shortNames: ['j'], subresources: [{ subresource: 'status', verbs: ['get'] }] }));
    const c = batchWith(jobs(['get', 'list'], { shortNames: ['jb'], subresources: [{ subresource: 'scale', verbs: ['get'] }] }));
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([b])), apiserver('c', discovery([c]))]), NOW);
    const entry = merged.peer.groups?.groups[0]?.versions[0]?.resources[0];
    assert.deepEqual(entry?.verbs, ['get', 'list']);
    assert.deepEqual(entry?.shortNames, ['j']);
    assert.deepEqual(
      entry?.subresources?.map((s) => s.subresource),
      ['status', 'scale'],
    );
  });

  test('an unreachable peer still adds its resources (the routes answer 503 for them)', () => {
    const m = model([apiserver('a', discovery([APPS])), apiserver('b', discovery([BATCH]), { reachable: false })]);
    assert.deepEqual(listed(mergeDiscovery('a', m, NOW).peer.groups), ['batch/v1/jobs', 'batch/v1/cronjobs']);
  });

  test('a peer gone past the departed grace adds nothing', () => {
    const departed = apiserver('b', discovery([BATCH]), { leaseGoneAt: NOW - 120_000, reachable: false });
    delete departed.lease;
    const m = model([apiserver('a', discovery([APPS])), departed]);
    assert.deepEqual(listed(mergeDiscovery('a', m, NOW, { standings: apiserverStandings(m, 60_000) }).peer.groups), []);
  });

  test('the core group part holds the core resources the local lacks', () => {
    const core = [group('', [{ version: 'v1', resources: [resource('pods', 'Pod', ['get']), resource('services', 'Service', ['get'])] }])];
    const merged = mergeDiscovery('a', model([apiserver('a', discovery([])), apiserver('b', discovery([], core))]), NOW);
    assert.deepEqual(listed(merged.peer.core), ['/v1/services']);
  });
});

describe('the OpenAPI peer part', () => {
  const url = (key: string, hash = 'A') => ({ serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` });
  const indexOf = (...keys: string[]) => ({ paths: Object.fromEntries(keys.map((k) => [k, url(k)])) });

  test('holds the group-version entries the local index lacks, sorted, never a local-only one nor another key', () => {
    const localOnly: LocalOnlyGroupVersion[] = [{ group: 'stable.example.com', version: 'v1', source: 'CustomResourceDefinition' }];
    const local = { ...discovery([APPS]), openapi: indexOf('api/v1', 'apis/apps/v1') };
    const peer = {
      ...discovery([APPS, BATCH, CRD_GROUP]),
      openapi: indexOf('version', 'apis/stable.example.com/v1', 'apis/batch/v1', 'api/v1', 'apis/apps/v1'),
    };
    const merged = mergeDiscovery('a', model([apiserver('a', local), apiserver('b', peer)], localOnly), NOW);
    assert.deepEqual(merged.peer.openapi, { document: 'openapi-index', paths: { 'apis/batch/v1': url('apis/batch/v1') } });
  });

  test('takes an entry from the first peer that lists it', () => {
    const local = { ...discovery([APPS]), openapi: indexOf('apis/apps/v1') };
    const b = { ...discovery([BATCH]), openapi: { paths: { 'apis/batch/v1': url('apis/batch/v1', 'B') } } };
    const c = { ...discovery([BATCH]), openapi: { paths: { 'apis/batch/v1': url('apis/batch/v1', 'C') } } };
    const merged = mergeDiscovery('a', model([apiserver('a', local), apiserver('c', c), apiserver('b', b)]), NOW);
    assert.deepEqual(merged.peer.openapi?.paths, { 'apis/batch/v1': url('apis/batch/v1', 'B') });
  });
});
