// The document filter merges at request time: the local apiserver's
// document as it is at the request, plus the peer part's entries it lacks at
// each level (src/discovery/peerPart.ts), in JSON, in protobuf and in the
// OpenAPI index; the local document changing is reflected at once.
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { APIGroupDiscoveryList } from '../../../src/model/discovery.js';
import type { AggregatedPeerPart, OpenApiPeerPart } from '../../../src/discovery/peerPart.js';
import { decodeAggregatedProtobuf } from '../../../src/discovery/protobufDecode.js';
import { APPS, BATCH, CRD_GROUP, group, list, resource } from '../../support/discoveryFixtures.js';
import { CORE, GROUPS } from '../../support/discoveryDocuments.js';
import {
  AGG_JSON,
  AGG_PROTOBUF,
  LOCAL_ETAG,
  REQUEST,
  documentHost,
  exchange,
  expectedEtag,
  header,
  localBodies,
  mergedByRule,
  mergedIndexByRule,
  ok,
  withHeaders,
} from '../../support/documentFilterHarness.js';

const LOCAL = list([APPS, CRD_GROUP]);
/** What only peers serve: batch (a group the local lacks), apps/v1beta1 (a version), apps/v1 statefulsets (a resource). */
const PART: AggregatedPeerPart = {
  document: 'group-discovery',
  groups: list([
    group('apps', [
      {
        version: 'v1',
        resources: [resource('statefulsets', 'StatefulSet', ['get', 'list'], { responseKind: { group: 'apps', version: 'v1', kind: 'StatefulSet' } })],
      },
      { version: 'v1beta1', resources: [resource('replicasets', 'ReplicaSet', ['get'])] },
    ]),
    BATCH,
  ]).items,
};
const PROTOBUF_REQUEST = withHeaders([], [...REQUEST.slice(0, 3), ['accept', AGG_PROTOBUF]]);

function mergeJson(local: APIGroupDiscoveryList, part: AggregatedPeerPart = PART, chunkSize?: number): ReturnType<typeof exchange> {
  const body = localBodies(local).json;
  return exchange(documentHost(part), REQUEST, ok(body), body, chunkSize);
}

function parsed(body: Buffer): unknown {
  return JSON.parse(body.toString('utf8'));
}

describe('aggregated JSON', () => {
  test('the answer parses to the local document plus the peer group, version and resource it lacks, in place', () => {
    const answer = mergeJson(LOCAL);
    assert.equal(answer.status, 200);
    assert.equal(answer.localReply, false, 'the upstream answer modified in place, never a local reply');
    assert.deepEqual(parsed(answer.body), parsed(localBodies(mergedByRule(LOCAL, PART)).json));
  });

  test('Content-Length and ETag are the merged document’s; the ETag is mergedEtag(local ETag, peer digest)', () => {
    const answer = mergeJson(LOCAL);
    assert.equal(header(answer.headers, 'content-length'), String(answer.body.length));
    assert.equal(header(answer.headers, 'etag'), expectedEtag(LOCAL_ETAG, PART));
  });

  test("the apiserver's other headers reach the client as it sent them", () => {
    const answer = mergeJson(LOCAL);
    for (const name of ['audit-id', 'x-kubernetes-pf-flowschema-uid', 'x-kubernetes-pf-prioritylevel-uid', 'cache-control', 'vary', 'content-type']) {
      assert.deepEqual(
        answer.headers.filter(([k]) => k === name),
        ok(Buffer.alloc(0)).filter(([k]) => k === name),
        name,
      );
    }
    assert.deepEqual(
      answer.headers.filter(([k]) => k === 'warning').map(([, v]) => v),
      ['299 - "first"', '299 - "second"'],
    );
  });

  test('local entries keep their bytes and order: the spliced text starts as the local one does', () => {
    const local = localBodies(LOCAL).json.toString('utf8');
    const answer = mergeJson(LOCAL).body.toString('utf8');
    // Up to apps/v1's resources' end the bytes are the local ones.
    const upTo = local.indexOf('],"freshness"') === -1 ? local.indexOf(']}') : local.indexOf('],"freshness"');
    assert.equal(answer.slice(0, upTo), local.slice(0, upTo));
    assert.ok(answer.endsWith('\n'));
  });

  test('a peer entry the local document now lists is not added twice', () => {
    const local = list([APPS, BATCH, CRD_GROUP]);
    const answer = parsed(mergeJson(local).body) as APIGroupDiscoveryList;
    assert.deepEqual(
      answer.items.map((g) => g.metadata.name),
      ['apps', 'batch', 'stable.example.com'],
    );
    assert.deepEqual(answer, parsed(localBodies(mergedByRule(local, PART)).json));
  });

  test('a local version without resources gets the peer resources as a new field', () => {
    const local = list([group('apps', [{ version: 'v1', resources: [] }])]);
    assert.deepEqual(parsed(mergeJson(local).body), parsed(localBodies(mergedByRule(local, PART)).json));
  });

  test('a local group without versions gets the peer versions as a new field', () => {
    const local = list([{ metadata: { name: 'apps' } }]);
    assert.deepEqual(parsed(mergeJson(local).body), parsed(localBodies(mergedByRule(local, PART)).json));
  });

  test('an empty local list gets every peer group', () => {
    const local = list([]);
    const body = Buffer.from('{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[]}\n');
    const answer = exchange(documentHost(PART), REQUEST, ok(body), body);
    assert.deepEqual(parsed(answer.body), parsed(localBodies(mergedByRule(local, PART)).json));
  });

  test('the core document: its unnamed group is the peer part’s unnamed group', () => {
    const part: AggregatedPeerPart = {
      document: 'core-discovery',
      groups: list([group('', [{ version: 'v1', resources: [resource('widgets', 'Widget', ['get'])] }])]).items,
    };
    const answer = exchange(
      documentHost(part),
      [...REQUEST.slice(0, 1), [':path', '/api'], ...REQUEST.slice(2)],
      ok(localBodies(CORE).json),
      localBodies(CORE).json,
    );
    assert.deepEqual(parsed(answer.body), parsed(localBodies(mergedByRule(CORE, part)).json));
  });

  test('a body in many small chunks merges to the same bytes as in one', () => {
    const whole = mergeJson(GROUPS, PART, 1 << 20);
    const small = mergeJson(GROUPS, PART, 7);
    assert.ok(small.bodyActions.length > 50);
    assert.ok(
      small.bodyActions.slice(0, -1).every((action) => action === 3),
      'every chunk but the last stopped without buffering',
    );
    assert.deepEqual(small.body, whole.body);
  });

  test('an empty peer part answers the local document with the merged ETag', () => {
    const part: AggregatedPeerPart = { document: 'group-discovery', groups: [] };
    const body = localBodies(LOCAL).json;
    const answer = exchange(documentHost(part), REQUEST, ok(body), body);
    assert.deepEqual(answer.body, body);
    assert.equal(header(answer.headers, 'etag'), expectedEtag(LOCAL_ETAG, part));
  });
});

describe('the local document changes between requests, reflected at once', () => {
  const host = (): ReturnType<typeof documentHost> => documentHost(PART);
  const run = (h: ReturnType<typeof documentHost>, local: APIGroupDiscoveryList, etag: string): APIGroupDiscoveryList => {
    const body = localBodies(local).json;
    return parsed(exchange(h, REQUEST, ok(body, AGG_JSON, etag), body).body) as APIGroupDiscoveryList;
  };

  test('a new group, a new version, a new resource, a removed group', () => {
    const h = host();
    assert.deepEqual(run(h, LOCAL, '"1"'), parsed(localBodies(mergedByRule(LOCAL, PART)).json));
    const changes: APIGroupDiscoveryList[] = [
      list([APPS, CRD_GROUP, group('new.example.com', [{ version: 'v1', resources: [resource('things', 'Thing', ['get'])] }])]),
      list([group('apps', [...(APPS['versions'] as []), { version: 'v2', resources: [resource('deployments', 'Deployment', ['get'])] }]), CRD_GROUP]),
      list([group('apps', [{ version: 'v1', resources: [resource('deployments', 'Deployment', ['get']), resource('daemonsets', 'DaemonSet', ['get'])] }])]),
      list([APPS]),
    ];
    for (const [i, local] of changes.entries())
      assert.deepEqual(run(h, local, `"${i + 2}"`), parsed(localBodies(mergedByRule(local, PART)).json), `change ${i}`);
  });
});

describe('aggregated protobuf', () => {
  test('the answer decodes to the structure the merge rule gives', () => {
    for (const local of [LOCAL, GROUPS, list([APPS, BATCH]), list([{ metadata: { name: 'apps' } }])]) {
      const body = localBodies(local).protobuf;
      const answer = exchange(documentHost(PART), PROTOBUF_REQUEST, ok(body, AGG_PROTOBUF), body, 5);
      assert.equal(answer.status, 200);
      assert.equal(header(answer.headers, 'content-length'), String(answer.body.length));
      assert.deepEqual(decodeAggregatedProtobuf(answer.body), decodeAggregatedProtobuf(localBodies(mergedByRule(local, PART)).protobuf));
    }
  });

  test('its bytes are the ones Go would write for the merged list', () => {
    const body = localBodies(LOCAL).protobuf;
    const answer = exchange(documentHost(PART), PROTOBUF_REQUEST, ok(body, AGG_PROTOBUF), body);
    assert.deepEqual(answer.body, localBodies(mergedByRule(LOCAL, PART)).protobuf);
  });

  test('JSON and protobuf of one local ETag carry the same merged ETag', () => {
    const json = mergeJson(LOCAL);
    const body = localBodies(LOCAL).protobuf;
    const protobuf = exchange(documentHost(PART), PROTOBUF_REQUEST, ok(body, AGG_PROTOBUF), body);
    assert.equal(header(protobuf.headers, 'etag'), header(json.headers, 'etag'));
  });
});

describe('the OpenAPI v3 index', () => {
  const LOCAL_INDEX = {
    paths: { 'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=A' }, 'apis/batch/v1': { serverRelativeURL: '/openapi/v3/apis/batch/v1?hash=B' } },
  };
  const INDEX_PART: OpenApiPeerPart = {
    document: 'openapi-index',
    paths: {
      'apis/apps/v1': { serverRelativeURL: '/openapi/v3/apis/apps/v1?hash=C' },
      'apis/batch/v1': { serverRelativeURL: '/openapi/v3/apis/batch/v1?hash=PEER' },
      'apis/zzz.example.com/v1': { serverRelativeURL: '/openapi/v3/apis/zzz.example.com/v1?hash=D' },
      'api/aaa': { serverRelativeURL: '/openapi/v3/api/aaa?hash=E' },
    },
  };
  const request: typeof REQUEST = [
    [':method', 'GET'],
    [':path', '/openapi/v3'],
    [':authority', 'kas-a'],
    ['accept', 'application/json'],
  ];

  test('local paths plus the peer paths it lacks, each in sorted position; the local entry wins', () => {
    const body = Buffer.from(`${JSON.stringify(LOCAL_INDEX)}\n`);
    const answer = exchange(documentHost(INDEX_PART), request, ok(body, 'text/plain; charset=utf-8'), body, 3);
    assert.equal(answer.status, 200);
    const merged = mergedIndexByRule(LOCAL_INDEX, INDEX_PART);
    assert.equal(answer.body.toString('utf8'), `${JSON.stringify(merged)}\n`);
    assert.equal(header(answer.headers, 'etag'), expectedEtag(LOCAL_ETAG, INDEX_PART));
  });

  test('an empty local index gets every peer path', () => {
    const body = Buffer.from('{"paths":{}}');
    const answer = exchange(documentHost(INDEX_PART), request, ok(body, 'application/json'), body);
    assert.equal(answer.body.toString('utf8'), JSON.stringify(mergedIndexByRule({ paths: {} }, INDEX_PART)));
  });
});

describe('two VMs, the same inputs', () => {
  test('give the same bytes and ETag', () => {
    const [a, b] = [mergeJson(LOCAL), mergeJson(LOCAL)];
    assert.deepEqual(a.body, b.body);
    assert.equal(header(a.headers, 'etag'), header(b.headers, 'etag'));
  });

  test('the ETag changes when the local ETag or the peer part does', () => {
    const body = localBodies(LOCAL).json;
    const etagOf = (part: AggregatedPeerPart, localEtag: string): string | undefined =>
      header(exchange(documentHost(part), REQUEST, ok(body, AGG_JSON, localEtag), body).headers, 'etag');
    const base = etagOf(PART, '"a"');
    assert.notEqual(etagOf(PART, '"b"'), base);
    assert.notEqual(etagOf({ ...PART, groups: PART.groups.slice(1) }, '"a"'), base);
  });
});
