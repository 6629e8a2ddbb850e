// Legacy discovery (meta/v1) through the document filter: /api
// (APIVersions), /apis (APIGroupList), /apis/{g} (APIGroup), /api/{v} and
// /apis/{g}/{v} (APIResourceList), in JSON and protobuf, merged by the same
// rule from the same peer part (the nodes' legacy fragments): the local
// document untouched, then what the part adds that the local lacks by name.
// No ETag, no cache; a part that holds nothing for the path: the local
// answer untouched, its body never collected; a body the splicer refuses:
// failed open.
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim), test/support/legacyBodies.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';

import type { AggregatedPeerPart } from '../../../src/discovery/peerPart.js';
import type { APIGroup, APIGroupList, APIResourceList, APIVersions } from '../../../src/model/legacyDiscovery.js';
import { BATCH, group, list, resource } from '../../support/discoveryFixtures.js';
import { documentHost, exchange, header, ok, setNodes } from '../../support/documentFilterHarness.js';
import {
  LEGACY_JSON,
  LEGACY_PROTOBUF,
  type LegacyNode,
  groupByRule,
  groupListByRule,
  groupListProtobuf,
  groupListProtobufByRule,
  groupProtobuf,
  groupProtobufByRule,
  jsonBody,
  legacyGroup,
  readGroup,
  readGroupList,
  readResourceList,
  readVersions,
  resourceListByRule,
  resourceListProtobuf,
  resourceListProtobufByRule,
  versionsByRule,
  versionsProtobuf,
  versionsProtobufByRule,
} from '../../support/legacyBodies.js';
import type { HeaderList } from '../../support/proxyWasmHost.js';

const APPS_KIND = { group: 'apps', version: 'v1', kind: 'Deployment' };
/** What only peers serve: apps/v1 statefulsets and deployments/scale, apps/v1beta1, the batch group. */
const GROUPS_PART: AggregatedPeerPart = {
  document: 'group-discovery',
  groups: list([
    group('apps', [
      {
        version: 'v1',
        resources: [
          resource('deployments', 'Deployment', ['get'], {
            responseKind: APPS_KIND,
            subresources: [{ subresource: 'scale', responseKind: { ...APPS_KIND, kind: 'Scale' }, verbs: ['get'] }],
          }),
          resource('statefulsets', 'StatefulSet', ['get', 'list'], { responseKind: { ...APPS_KIND, kind: 'StatefulSet' } }),
          // No responseKind: client-go drops it, and so does the legacy merge.
          resource('ghosts', 'Ghost', ['get'], { responseKind: undefined }),
        ],
      },
      {
        version: 'v1beta1',
        resources: [resource('replicasets', 'ReplicaSet', ['get'], { responseKind: { ...APPS_KIND, version: 'v1beta1', kind: 'ReplicaSet' } })],
      },
    ]),
    BATCH,
  ]).items,
};
const CORE_PART: AggregatedPeerPart = {
  document: 'core-discovery',
  groups: list([
    group('', [{ version: 'v2', resources: [resource('widgets', 'Widget', ['get'], { responseKind: { group: '', version: 'v2', kind: 'Widget' } })] }]),
  ]).items,
};
const GROUP_NODES = setNodes(GROUPS_PART);
/** The same, with the local apiserver's built-in groups: storage.k8s.io v1 and v2, and policy/v1, which its answer may lack. */
const BUILT_IN_PART: AggregatedPeerPart = {
  ...GROUPS_PART,
  localBuiltIn: [
    { group: 'storage.k8s.io', versions: ['v1', 'v2'] },
    { group: 'policy', versions: ['v1'] },
  ],
};
const BUILT_IN_NODES = setNodes(BUILT_IN_PART);
const CORE_NODES = setNodes(CORE_PART);

function nodeOf(nodes: LegacyNode[], ...names: string[]): LegacyNode {
  let found: LegacyNode | undefined;
  let level = nodes;
  for (const name of names) {
    found = level.find((n) => n.name === name);
    if (!found) throw new Error(`no node ${names.join('/')}`);
    level = found.children;
  }
  if (!found) throw new Error('no names');
  return found;
}

function request(path: string, accept: string, extra: HeaderList = []): HeaderList {
  return [[':method', 'GET'], [':path', path], [':authority', 'kas-a'], ['accept', accept], ...extra];
}

/** kube-apiserver's legacy answers carry no ETag. */
function legacyOk(body: Buffer, contentType: string): HeaderList {
  return ok(body, contentType, null);
}

function merge(part: AggregatedPeerPart, path: string, body: Buffer, contentType: string, chunkSize = 13): ReturnType<typeof exchange> {
  return exchange(documentHost(part), request(path, contentType), legacyOk(body, contentType), body, chunkSize);
}

function parsed<T>(body: Buffer): T {
  return JSON.parse(body.toString('utf8')) as T;
}

const LOCAL_VERSIONS: APIVersions = {
  kind: 'APIVersions',
  versions: ['v1'],
  serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '10.0.0.1:6443' }],
};
const LOCAL_APPS: APIGroup = legacyGroup('apps', 'v1');
const LOCAL_GROUP_LIST: APIGroupList = { kind: 'APIGroupList', apiVersion: 'v1', groups: [LOCAL_APPS, legacyGroup('storage.k8s.io', 'v1')] };
const LOCAL_APPS_V1: APIResourceList = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: 'apps/v1',
  resources: [
    { name: 'deployments', singularName: 'deployment', namespaced: true, kind: 'Deployment', verbs: ['get', 'list'] },
    { name: 'deployments/status', singularName: 'deployment', namespaced: true, kind: 'Deployment', verbs: ['get'] },
  ],
};
const LOCAL_CORE_V2: APIResourceList = { kind: 'APIResourceList', groupVersion: 'v2', resources: [] };

describe('JSON', () => {
  test('/api (APIVersions): the core group versions the local lacks, after its own', () => {
    const answer = merge(CORE_PART, '/api', jsonBody(LOCAL_VERSIONS), LEGACY_JSON);
    assert.equal(answer.status, 200);
    assert.deepEqual(parsed<APIVersions>(answer.body).versions, ['v1', 'v2']);
    assert.deepEqual(parsed(answer.body), versionsByRule(LOCAL_VERSIONS, CORE_NODES[0]));
  });

  test('/apis (APIGroupList): each local group its unseen versions, then the unseen groups; preferred versions as they are', () => {
    const answer = merge(GROUPS_PART, '/apis', jsonBody(LOCAL_GROUP_LIST), LEGACY_JSON);
    const merged = parsed<APIGroupList>(answer.body);
    assert.deepEqual(
      merged.groups.map((g) => [g.name, g.versions.map((v) => v.version), g.preferredVersion?.version]),
      [
        ['apps', ['v1', 'v1beta1'], 'v1'],
        ['storage.k8s.io', ['v1'], 'v1'],
        ['batch', ['v1'], 'v1'],
      ],
    );
    assert.deepEqual(merged, groupListByRule(LOCAL_GROUP_LIST, GROUP_NODES));
  });

  test('/apis: the built-in groups and versions the local answer lacks (their APIServices deleted by another apiserver) are added', () => {
    const answer = merge(BUILT_IN_PART, '/apis', jsonBody(LOCAL_GROUP_LIST), LEGACY_JSON);
    const merged = parsed<APIGroupList>(answer.body);
    assert.deepEqual(
      merged.groups.map((g) => [g.name, g.versions.map((v) => v.version), g.preferredVersion?.version]),
      [
        ['apps', ['v1', 'v1beta1'], 'v1'],
        ['storage.k8s.io', ['v1', 'v2'], 'v1'],
        ['batch', ['v1'], 'v1'],
        ['policy', ['v1'], 'v1'],
      ],
    );
    assert.deepEqual(merged, groupListByRule(LOCAL_GROUP_LIST, BUILT_IN_NODES));
  });

  test('/apis/{g}: the built-in versions the local group lacks are added', () => {
    const local: APIGroup = { kind: 'APIGroup', apiVersion: 'v1', ...legacyGroup('storage.k8s.io', 'v1') };
    const answer = merge(BUILT_IN_PART, '/apis/storage.k8s.io', jsonBody(local), LEGACY_JSON);
    assert.deepEqual(
      parsed<APIGroup>(answer.body).versions.map((v) => v.version),
      ['v1', 'v2'],
    );
  });

  test('/apis/{g} (APIGroup): the versions the local group lacks', () => {
    const local: APIGroup = { kind: 'APIGroup', apiVersion: 'v1', ...LOCAL_APPS };
    const answer = merge(GROUPS_PART, '/apis/apps', jsonBody(local), LEGACY_JSON);
    assert.deepEqual(parsed(answer.body), groupByRule(local, nodeOf(GROUP_NODES, 'apps')));
  });

  test('/apis/{g}/{v} (APIResourceList): resources then their subresources the local lacks, none without a responseKind', () => {
    const answer = merge(GROUPS_PART, '/apis/apps/v1/', jsonBody(LOCAL_APPS_V1), LEGACY_JSON);
    const merged = parsed<APIResourceList>(answer.body);
    assert.deepEqual(
      merged.resources.map((r) => r.name),
      ['deployments', 'deployments/status', 'deployments/scale', 'statefulsets'],
    );
    assert.deepEqual(merged, resourceListByRule(LOCAL_APPS_V1, nodeOf(GROUP_NODES, 'apps', 'v1')));
  });

  test('/api/{v} (APIResourceList of the core group), query string stripped', () => {
    const answer = merge(CORE_PART, '/api/v2?timeout=32s', jsonBody(LOCAL_CORE_V2), LEGACY_JSON);
    assert.deepEqual(parsed(answer.body), resourceListByRule(LOCAL_CORE_V2, nodeOf(CORE_NODES, '', 'v2')));
    assert.deepEqual(
      parsed<APIResourceList>(answer.body).resources.map((r) => r.name),
      ['widgets'],
    );
  });

  test('a local group with no versions listed gets the unseen ones, comma-correct', () => {
    const local: APIGroupList = { ...LOCAL_GROUP_LIST, groups: [{ name: 'apps', versions: [] }] };
    const answer = merge(GROUPS_PART, '/apis', jsonBody(local), LEGACY_JSON);
    assert.deepEqual(parsed(answer.body), groupListByRule(local, GROUP_NODES));
  });

  test('headers: Content-Length the merged body’s, no ETag, the local ones otherwise', () => {
    const body = jsonBody(LOCAL_GROUP_LIST);
    const answer = exchange(documentHost(GROUPS_PART), request('/apis', LEGACY_JSON), ok(body, LEGACY_JSON, '"local"'), body);
    assert.equal(header(answer.headers, 'content-length'), String(answer.body.length));
    assert.equal(header(answer.headers, 'etag'), undefined);
    assert.equal(header(answer.headers, 'audit-id'), 'audit-1');
    assert.equal(header(answer.headers, 'content-type'), LEGACY_JSON);
  });

  test('never cached: the local document changing is reflected at the next request', () => {
    const host = documentHost(GROUPS_PART);
    const first = jsonBody(LOCAL_GROUP_LIST);
    exchange(host, request('/apis', LEGACY_JSON), legacyOk(first, LEGACY_JSON), first);
    const changed: APIGroupList = {
      ...LOCAL_GROUP_LIST,
      groups: [...LOCAL_GROUP_LIST.groups, { name: 'batch', versions: [{ groupVersion: 'batch/v2', version: 'v2' }] }],
    };
    const second = jsonBody(changed);
    const answer = exchange(host, request('/apis', LEGACY_JSON), legacyOk(second, LEGACY_JSON), second);
    assert.deepEqual(parsed(answer.body), groupListByRule(changed, GROUP_NODES));
  });

  test('gzip over 128 KiB, as the aggregated answers', () => {
    const many: APIGroupList = {
      ...LOCAL_GROUP_LIST,
      groups: Array.from({ length: 2000 }, (_, i) => ({ name: `g${i}.example.com`, versions: [{ groupVersion: `g${i}.example.com/v1`, version: 'v1' }] })),
    };
    const body = jsonBody(many);
    const answer = exchange(
      documentHost(GROUPS_PART),
      request('/apis', LEGACY_JSON, [['accept-encoding', 'gzip']]),
      legacyOk(body, LEGACY_JSON),
      body,
      64 * 1024,
    );
    assert.equal(header(answer.headers, 'content-encoding'), 'gzip');
    assert.equal(header(answer.headers, 'content-length'), String(answer.body.length));
    assert.deepEqual(parsed(gunzipSync(answer.body)), groupListByRule(many, GROUP_NODES));
  });
});

describe('protobuf', () => {
  test('/api (APIVersions)', () => {
    const answer = merge(CORE_PART, '/api', versionsProtobuf(LOCAL_VERSIONS), LEGACY_PROTOBUF, 5);
    assert.deepEqual(readVersions(answer.body), versionsByRule(LOCAL_VERSIONS, CORE_NODES[0]).versions);
    assert.deepEqual(answer.body, versionsProtobufByRule(LOCAL_VERSIONS, CORE_NODES[0]));
    assert.equal(header(answer.headers, 'content-length'), String(answer.body.length));
  });

  test('/apis: the built-in groups the local answer lacks are added, as in JSON', () => {
    const answer = merge(BUILT_IN_PART, '/apis', groupListProtobuf(LOCAL_GROUP_LIST), LEGACY_PROTOBUF, 5);
    assert.deepEqual(answer.body, groupListProtobufByRule(LOCAL_GROUP_LIST, BUILT_IN_NODES));
  });

  test('/apis (APIGroupList): bytes as the encoder writes the merged list', () => {
    const answer = merge(GROUPS_PART, '/apis', groupListProtobuf(LOCAL_GROUP_LIST), LEGACY_PROTOBUF, 5);
    const expected = groupListByRule(LOCAL_GROUP_LIST, GROUP_NODES);
    assert.deepEqual(readGroupList(answer.body), expected.groups);
    assert.deepEqual(answer.body, groupListProtobufByRule(LOCAL_GROUP_LIST, GROUP_NODES));
  });

  test('/apis/{g} (APIGroup): the unseen version before preferredVersion', () => {
    const answer = merge(GROUPS_PART, '/apis/apps', groupProtobuf(LOCAL_APPS), LEGACY_PROTOBUF, 5);
    const expected = groupByRule(LOCAL_APPS, nodeOf(GROUP_NODES, 'apps'));
    assert.deepEqual(readGroup(answer.body), expected);
    assert.deepEqual(answer.body, groupProtobufByRule(LOCAL_APPS, nodeOf(GROUP_NODES, 'apps')));
  });

  test('/api/{v} (APIResourceList of the core group)', () => {
    const answer = merge(CORE_PART, '/api/v2', resourceListProtobuf(LOCAL_CORE_V2), LEGACY_PROTOBUF, 5);
    assert.deepEqual(answer.body, resourceListProtobufByRule(LOCAL_CORE_V2, nodeOf(CORE_NODES, '', 'v2')));
    assert.deepEqual(
      readResourceList(answer.body).map((r) => r.name),
      ['widgets'],
    );
  });

  test('/apis/{g}/{v} (APIResourceList)', () => {
    const answer = merge(GROUPS_PART, '/apis/apps/v1', resourceListProtobuf(LOCAL_APPS_V1), LEGACY_PROTOBUF, 5);
    const expected = resourceListByRule(LOCAL_APPS_V1, nodeOf(GROUP_NODES, 'apps', 'v1'));
    assert.deepEqual(
      readResourceList(answer.body).map((r) => r.name),
      expected.resources.map((r) => r.name),
    );
    assert.deepEqual(answer.body, resourceListProtobufByRule(LOCAL_APPS_V1, nodeOf(GROUP_NODES, 'apps', 'v1')));
  });
});

describe('left alone', () => {
  const untouched = (part: AggregatedPeerPart, path: string, body: Buffer, contentType: string): void => {
    const host = documentHost(part);
    const req = request(path, contentType, [['accept-encoding', 'gzip']]);
    const answer = exchange(host, req, legacyOk(body, contentType), body, 7);
    assert.deepEqual(answer.request.headers, req, 'the request untouched (Accept-Encoding kept)');
    assert.ok(
      answer.bodyActions.every((action) => action === 0),
      'no chunk held: the body is not collected',
    );
    assert.deepEqual(answer.body, body);
    assert.deepEqual(answer.headers, legacyOk(body, contentType));
    assert.equal(host.metric('mvproxy_document_answers_local'), 1n);
  };

  test('/apis/{g} of a group the part lacks', () => {
    untouched(GROUPS_PART, '/apis/storage.k8s.io', jsonBody(LOCAL_GROUP_LIST.groups[1] ?? {}), LEGACY_JSON);
  });

  test('/apis/{g}/{v} of a group-version the part lacks', () => {
    untouched(GROUPS_PART, '/apis/apps/v2', jsonBody({ ...LOCAL_APPS_V1, groupVersion: 'apps/v2' }), LEGACY_JSON);
    untouched(GROUPS_PART, '/apis/storage.k8s.io/v1', jsonBody({ ...LOCAL_APPS_V1, groupVersion: 'storage.k8s.io/v1' }), LEGACY_PROTOBUF);
  });

  test('/api/{v} of a core version the part lacks', () => {
    untouched(CORE_PART, '/api/v1', jsonBody({ ...LOCAL_CORE_V2, groupVersion: 'v1' }), LEGACY_JSON);
  });

  test('a malformed legacy body fails open: the local headers and body as received', () => {
    for (const [path, body, type] of [
      ['/apis', Buffer.from('{"kind":"APIGroupList","groups":[{"name":"apps",'), LEGACY_JSON],
      ['/apis/apps/v1', Buffer.from('{"kind":"APIResourceList","groupVersion":"apps/v1"}'), LEGACY_JSON],
      ['/apis/apps', Buffer.from('k8s\0\x12\xff'), LEGACY_PROTOBUF],
    ] as const) {
      const host = documentHost(GROUPS_PART);
      const answer = exchange(host, request(path, type), legacyOk(body, type), body, 4);
      assert.deepEqual(answer.body, body, path);
      assert.deepEqual(answer.headers, legacyOk(body, type), path);
      assert.equal(host.metric('mvproxy_document_failed_open'), 1n, path);
    }
  });

  test('a legacy Content-Type on /apis/{g} never takes the aggregated cache or revalidation', () => {
    const host = documentHost(GROUPS_PART);
    const req = request('/apis/apps', 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    const answer = exchange(host, req, legacyOk(jsonBody(LOCAL_APPS), LEGACY_JSON), jsonBody(LOCAL_APPS));
    assert.deepEqual(parsed(answer.body), groupByRule(LOCAL_APPS, nodeOf(GROUP_NODES, 'apps')));
    assert.equal(host.metric('mvproxy_document_merged_spliced'), 1n);
  });
});
