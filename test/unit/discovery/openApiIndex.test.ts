// The OpenAPI v3 index: reading one, the entries a sidecar may take from a peer, and the merged index.
// Fixtures: test/support/discoveryFixtures.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ApiserverObservation, ClusterModel } from '../../../src/model/cluster.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import type { ApiserverDiscovery } from '../../../src/model/discovery.js';
import { groupVersionOfIndexPath, parseOpenApiV3Index, routableOpenApiIndex, type DroppedOpenApiIndexEntry } from '../../../src/model/openapi.js';
import { mergeDiscovery } from '../../../src/discovery/index.js';
import { APPS, BATCH, CRD_GROUP, NOW, apiserver, discovery, model } from '../../support/discoveryFixtures.js';

describe('groupVersionOfIndexPath', () => {
  // Names are read as written (routableOpenApiIndex judges them); a key of another shape, or with an empty name, names none.
  const cases: Array<[string, { group: string; version: string } | undefined]> = [
    ['api/v1', { group: '', version: 'v1' }],
    ['apis/batch/v1', { group: 'batch', version: 'v1' }],
    ['apis/Bad_Group/V1', { group: 'Bad_Group', version: 'V1' }],
    ...['version', 'apis/batch', 'api', 'api/', 'apis//v1', 'apis/batch/', 'api/v1/x', 'apis/batch/v1/', '/api/v1', '.well-known/openid-configuration'].map(
      (key): [string, undefined] => [key, undefined],
    ),
  ];
  for (const [key, expected] of cases) {
    test(`${key}: ${expected === undefined ? 'no group-version' : `${expected.group}/${expected.version}`}`, () => {
      assert.deepEqual(groupVersionOfIndexPath(key), expected);
    });
  }

  test('an entry with an empty name is dropped as a malformed group-version, not kept as another key', () => {
    const { index, dropped } = routableOpenApiIndex({
      paths: { 'apis//v1': { serverRelativeURL: '/openapi/v3/apis//v1' }, 'apis/batch/': { serverRelativeURL: '/openapi/v3/apis/batch/' } },
    });
    assert.deepEqual(index.paths, {});
    assert.deepEqual(dropped, [
      { key: 'apis//v1', reason: 'group "" is not a DNS-1123 subdomain' },
      { key: 'apis/batch/', reason: 'version "" is not a DNS-1035 label' },
    ]);
  });
});

describe('parseOpenApiV3Index', () => {
  const url = (key: string) => ({ serverRelativeURL: `/openapi/v3/${key}?hash=A` });

  test('an entry that is not an object is dropped alone; the rest of the index is kept', () => {
    const dropped: DroppedOpenApiIndexEntry[] = [];
    const index = parseOpenApiV3Index({ paths: { 'api/v1': url('api/v1'), 'apis/batch/v1': '/openapi/v3/apis/batch/v1', version: url('version') } }, dropped);
    assert.deepEqual(index, { paths: { 'api/v1': url('api/v1'), version: url('version') } });
    assert.deepEqual(
      dropped.map((d) => d.key),
      ['apis/batch/v1'],
    );
    assert.match(dropped[0]?.reason ?? '', /expected an object/);
  });

  test('an entry whose serverRelativeURL is not a string is dropped alone', () => {
    const dropped: DroppedOpenApiIndexEntry[] = [];
    const index = parseOpenApiV3Index({ paths: { 'api/v1': url('api/v1'), 'apis/batch/v1': { serverRelativeURL: 42 }, 'apis/apps/v1': {} } }, dropped);
    assert.deepEqual(Object.keys(index.paths), ['api/v1']);
    assert.deepEqual(
      dropped.map((d) => [d.key, d.reason]),
      [
        ['apis/batch/v1', 'serverRelativeURL: expected a string, got 42'],
        ['apis/apps/v1', 'serverRelativeURL: expected a string, got nothing'],
      ],
    );
  });

  test("every key is kept as listed, group-version or not, whatever its names and URL: the apiserver's own clients read it so", () => {
    const paths = {
      version: url('version'),
      'apis/apps': url('apis/apps'),
      '.well-known/openid-configuration': url('.well-known/openid-configuration'),
      'apis/Bad_Group/v1': url('apis/Bad_Group/v1'),
      'apis/batch/v1': { serverRelativeURL: 'https://elsewhere.example/openapi/v3/apis/batch/v1' },
    };
    const dropped: DroppedOpenApiIndexEntry[] = [];
    assert.deepEqual(parseOpenApiV3Index({ paths }, dropped), { paths });
    assert.deepEqual(dropped, []);
  });

  test('a key named "__proto__" stays a key', () => {
    const index = parseOpenApiV3Index(JSON.parse('{"paths": {"__proto__": {"serverRelativeURL": "/openapi/v3/x"}}}'));
    assert.deepEqual(Object.keys(index.paths), ['__proto__']);
    assert.equal(Object.getPrototypeOf(index.paths), Object.prototype);
  });

  test('a body without a "paths" object is not an index: it throws', () => {
    assert.throws(() => parseOpenApiV3Index({ swagger: '2.0' }), /no "paths" object/);
    assert.throws(() => parseOpenApiV3Index({ paths: [] }), /no "paths" object/);
    assert.throws(() => parseOpenApiV3Index('<html>'), /no "paths" object/);
  });
});

describe('routableOpenApiIndex: the entries a sidecar may take from a peer', () => {
  const index = (paths: Record<string, string>) => ({ paths: Object.fromEntries(Object.entries(paths).map(([k, u]) => [k, { serverRelativeURL: u }])) });

  test('group-version entries with valid names whose URL names that very document are kept', () => {
    const listed = index({
      'api/v1': '/openapi/v3/api/v1?hash=A',
      'apis/batch/v1': '/openapi/v3/apis/batch/v1?hash=B',
      'apis/stable.example.com/v1beta1': '/openapi/v3/apis/stable.example.com/v1beta1',
    });
    const routable = routableOpenApiIndex(listed);
    assert.equal(routable.index, listed, 'the same object when nothing is dropped');
    assert.deepEqual(routable.dropped, []);
  });

  test('a group-version entry with a group that is not a DNS-1123 subdomain or a version that is not a DNS-1035 label is dropped alone', () => {
    const routable = routableOpenApiIndex(
      index({
        'apis/batch/v1': '/openapi/v3/apis/batch/v1?hash=B',
        'apis/Bad_Group/v1': '/openapi/v3/apis/Bad_Group/v1?hash=C',
        'apis//v1': '/openapi/v3/apis//v1',
        'api/V1': '/openapi/v3/api/V1',
        'apis/batch/1v': '/openapi/v3/apis/batch/1v',
      }),
    );
    assert.deepEqual(Object.keys(routable.index.paths), ['apis/batch/v1']);
    assert.deepEqual(
      routable.dropped.map((d) => d.key),
      ['apis/Bad_Group/v1', 'apis//v1', 'api/V1', 'apis/batch/1v'],
    );
    assert.match(routable.dropped[0]?.reason ?? '', /not a DNS-1123 subdomain/);
    assert.match(routable.dropped[2]?.reason ?? '', /not a DNS-1035 label/);
  });

  test('a group-version entry whose serverRelativeURL does not name that document (absolute, another document, outside /openapi/v3/) is dropped alone', () => {
    const routable = routableOpenApiIndex(
      index({
        'api/v1': '/openapi/v3/api/v1?hash=A',
        'apis/a.example.com/v1': 'https://elsewhere.example/openapi/v3/apis/a.example.com/v1',
        'apis/b.example.com/v1': '/openapi/v3/apis/batch/v1?hash=B',
        'apis/c.example.com/v1': '/api/v1/secrets',
        'apis/d.example.com/v1': '//elsewhere.example/openapi/v3/apis/d.example.com/v1',
        'apis/e.example.com/v1': '/openapi/v3/apis/e.example.com/v1/../../../../api/v1/secrets',
      }),
    );
    assert.deepEqual(Object.keys(routable.index.paths), ['api/v1']);
    assert.equal(routable.dropped.length, 5);
    for (const d of routable.dropped) assert.match(d.reason, /is not the relative URL of this document/);
  });

  test('keys that name no group-version are kept and not reported: the merge never takes them from a peer', () => {
    const listed = index({
      version: 'anything',
      'apis/apps': '/openapi/v3/apis/apps',
      api: '/openapi/v3/api',
      'openid/v1/jwks': '/openapi/v3/openid/v1/jwks',
      'apis/a/b/c': 'x',
    });
    const routable = routableOpenApiIndex(listed);
    assert.equal(routable.index, listed);
    assert.deepEqual(routable.dropped, []);
  });
});

describe('merged OpenAPI v3 index', () => {
  const entry = (path: string, hash: string) => ({ serverRelativeURL: `/openapi/v3/${path}?hash=${hash}` });
  const withIndex = (d: ApiserverDiscovery, paths: string[], hash: string): ApiserverDiscovery => ({
    ...d,
    openapi: { paths: Object.fromEntries(paths.map((p) => [p, entry(p, hash)])) },
  });
  // A has batch (and lists it in its index), B has apps; both have the core group.
  const pair = (): ClusterModel =>
    model([
      apiserver('a', withIndex(discovery([BATCH]), ['api/v1', 'apis/batch/v1', 'version'], 'A')),
      apiserver('b', withIndex(discovery([APPS]), ['api/v1', 'apis/apps/v1', 'apis/apps', 'version', 'openid/v1/jwks'], 'B')),
    ]);
  const indexOf = (m: ClusterModel, local: string) => {
    const merged = mergeDiscovery(local, m, NOW, { standings: apiserverStandings(m, 300_000) }).openapi;
    assert.ok(merged, 'a merged index');
    return merged.paths;
  };

  test("the local apiserver's own entries are kept, hashes included: it serves those documents", () => {
    const paths = indexOf(pair(), 'a');
    assert.deepEqual(paths['api/v1'], entry('api/v1', 'A'));
    assert.deepEqual(paths['version'], entry('version', 'A'));
    assert.deepEqual(paths['apis/batch/v1'], entry('apis/batch/v1', 'A'));
  });

  test("a group-version only a peer lists is added with that peer's entry", () => {
    assert.deepEqual(indexOf(pair(), 'a')['apis/apps/v1'], entry('apis/apps/v1', 'B'));
    assert.deepEqual(indexOf(pair(), 'b')['apis/batch/v1'], entry('apis/batch/v1', 'A'));
  });

  test('only group-version entries come from peers: not their group or other documents', () => {
    const paths = indexOf(pair(), 'a');
    assert.equal(paths['apis/apps'], undefined);
    assert.equal(paths['openid/v1/jwks'], undefined);
  });

  test('of two peers listing the same group-version, the first by name gives the entry, whichever sidecar merges', () => {
    const m = model([
      apiserver('c', withIndex(discovery([]), ['api/v1'], 'C')),
      apiserver('b', withIndex(discovery([BATCH]), ['api/v1', 'apis/batch/v1'], 'B')),
      apiserver('a', withIndex(discovery([BATCH]), ['api/v1', 'apis/batch/v1'], 'A')),
    ]);
    assert.deepEqual(indexOf(m, 'c')['apis/batch/v1'], entry('apis/batch/v1', 'A'));
  });

  test('a CRD group-version is never taken from a peer (shared-state-local)', () => {
    const m = model(
      [
        apiserver('a', withIndex(discovery([]), ['api/v1'], 'A')),
        apiserver('b', withIndex(discovery([CRD_GROUP]), ['api/v1', 'apis/stable.example.com/v1'], 'B')),
      ],
      [{ group: 'stable.example.com', version: 'v1', source: 'CustomResourceDefinition' }],
    );
    assert.equal(indexOf(m, 'a')['apis/stable.example.com/v1'], undefined);
  });

  test('a peer whose lease is gone past the grace period contributes nothing', () => {
    const m = pair();
    const b = m.apiservers[1] as ApiserverObservation;
    delete b.lease;
    b.leaseGoneAt = NOW - 300_001;
    assert.equal(indexOf(m, 'a')['apis/apps/v1'], undefined);
  });

  test('keys are sorted, so equal indexes render equal bytes', () => {
    const keys = Object.keys(indexOf(pair(), 'a'));
    assert.deepEqual(keys, [...keys].sort());
  });

  test("without the local apiserver's index, there is no merged index nor peer part: the apiserver answers itself", () => {
    const m = model([apiserver('a', discovery([BATCH])), apiserver('b', withIndex(discovery([APPS]), ['apis/apps/v1'], 'B'))]);
    const merged = mergeDiscovery('a', m, NOW);
    assert.equal(merged.openapi, undefined);
    assert.equal(merged.peer.openapi, undefined);
  });
});
