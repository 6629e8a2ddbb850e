import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ApiserverObservation, ClusterModel, LocalOnlyGroupVersion } from '../../src/model/cluster.js';
import type { APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery, ApiserverDiscovery } from '../../src/model/discovery.js';
import { parseAggregatedDiscovery } from '../../src/model/discoveryDocument.js';
import { servedSetFromDiscovery } from '../../src/model/servedSet.js';
import { parseOpenApiV3Index, routableOpenApiIndex, type DroppedOpenApiIndexEntry } from '../../src/model/openapi.js';
import {
  consensusOrder,
  decodeAggregatedProtobuf,
  discoveryResponse,
  mergeDiscovery,
  negotiateDiscovery,
  renderAggregated,
  type DiscoveryReply,
  type MergedDiscovery,
} from '../../src/discovery/index.js';

// ---- fixtures ----------------------------------------------------------------

const NOW = 1_700_000_000_000;

function list(items: unknown[]): APIGroupDiscoveryList {
  return parseAggregatedDiscovery({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items });
}

function resource(name: string, kind: string, verbs: string[], extra: Partial<APIResourceDiscovery> = {}): Record<string, unknown> {
  return {
    resource: name,
    responseKind: { group: '', version: '', kind },
    scope: 'Namespaced',
    singularResource: name.replace(/s$/, ''),
    verbs,
    ...extra,
  };
}

function group(name: string, versions: { version: string; resources: unknown[] }[]): Record<string, unknown> {
  return { metadata: { name }, versions };
}

const CORE_V1 = [
  group('', [
    {
      version: 'v1',
      resources: [
        resource('pods', 'Pod', ['create', 'delete', 'get', 'list'], {
          shortNames: ['po'],
          categories: ['all'],
          subresources: [{ subresource: 'status', responseKind: { group: '', version: 'v1', kind: 'Pod' }, verbs: ['get', 'patch', 'update'] }],
        }),
        resource('namespaces', 'Namespace', ['get', 'list'], { scope: 'Cluster' }),
      ],
    },
  ]),
];

const APPS = group('apps', [
  {
    version: 'v1',
    resources: [
      resource('deployments', 'Deployment', ['get', 'list'], {
        responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' },
        shortNames: ['deploy'],
        subresources: [{ subresource: 'status', responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' }, verbs: ['get'] }],
      }),
    ],
  },
]);

const BATCH = group('batch', [
  {
    version: 'v1',
    resources: [
      resource('jobs', 'Job', ['create', 'get', 'list'], {
        responseKind: { group: 'batch', version: 'v1', kind: 'Job' },
        categories: ['all'],
        subresources: [{ subresource: 'status', responseKind: { group: 'batch', version: 'v1', kind: 'Job' }, verbs: ['get', 'patch', 'update'] }],
      }),
      resource('cronjobs', 'CronJob', ['get', 'list'], { responseKind: { group: 'batch', version: 'v1', kind: 'CronJob' }, shortNames: ['cj'] }),
    ],
  },
]);

const CRD_GROUP = group('stable.example.com', [
  {
    version: 'v1',
    resources: [resource('crontabs', 'CronTab', ['get', 'list'], { responseKind: { group: 'stable.example.com', version: 'v1', kind: 'CronTab' } })],
  },
]);

function discovery(groups: unknown[], core: unknown[] = CORE_V1): ApiserverDiscovery {
  return { core: list(core), groups: list(groups) };
}

function apiserver(name: string, d: ApiserverDiscovery | undefined, extra: Partial<ApiserverObservation> = {}): ApiserverObservation {
  const observation: ApiserverObservation = {
    endpoint: { name, hostname: name, address: { host: `${name}.test`, port: 6443 } },
    lease: { name: `apiserver-${name}`, holderIdentity: `${name}-1`, renewTime: NOW },
    servedSet: d ? servedSetFromDiscovery(d) : [],
    reachable: true,
    ...extra,
  };
  if (d) observation.discovery = d;
  return observation;
}

function model(apiservers: ApiserverObservation[], localOnly: LocalOnlyGroupVersion[] = []): ClusterModel {
  return { now: NOW, apiservers, localOnly };
}

function groupNames(l: APIGroupDiscoveryList): string[] {
  return l.items.map((g) => g.metadata.name);
}

function findGroup(l: APIGroupDiscoveryList, name: string): APIGroupDiscovery {
  const found = l.items.find((g) => g.metadata.name === name);
  assert.ok(found, `group ${name} in merged document`);
  return found;
}

function findResource(l: APIGroupDiscoveryList, groupName: string, version: string, name: string): APIResourceDiscovery {
  const found = findGroup(l, groupName)
    .versions.find((v) => v.version === version)
    ?.resources.find((r) => r.resource === name);
  assert.ok(found, `${groupName}/${version}/${name} in merged document`);
  return found;
}

function isReply(answer: ReturnType<typeof discoveryResponse>): answer is DiscoveryReply {
  return !('passThrough' in answer);
}

const AGG_JSON = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const AGG_JSON_V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';
const AGG_NOPEER = `${AGG_JSON};profile=nopeer`;
const AGG_PROTOBUF = 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

// TestPeerAggregatedDiscovery's skew: A has apps/v1 off, B has batch/v1 off.
function skewedPair(): ClusterModel {
  return model([apiserver('a', discovery([BATCH])), apiserver('b', discovery([APPS]))]);
}

// ---- merge ---------------------------------------------------------------------

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
    assert.deepEqual(groupNames(mergeDiscovery('a', m, NOW, { departedGraceMs: 60_000 }).groups), ['apps']);
    assert.deepEqual(groupNames(mergeDiscovery('a', m, NOW, { departedGraceMs: 300_000 }).groups), ['apps', 'batch'], 'within the grace it still counts');
  });

  test('an apiserver without known discovery contributes nothing', () => {
    const m = model([apiserver('a', discovery([APPS])), apiserver('b', undefined)]);
    const merged = mergeDiscovery('a', m, NOW);
    assert.deepEqual(merged.sources, ['a']);
    assert.deepEqual(groupNames(merged.groups), ['apps']);
  });
});

// ---- rendering -----------------------------------------------------------------

describe('renderAggregated', () => {
  test('JSON is written in Go field order with a trailing newline', () => {
    const doc = renderAggregated(list([APPS]), 'json');
    assert.equal(doc.contentType, 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    const text = doc.body.toString('utf8');
    assert.ok(text.endsWith('}\n'));
    assert.ok(
      text.startsWith(
        '{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"name":"apps"},"versions":[{"version":"v1","resources":[{"resource":"deployments","responseKind":{"group":"apps","version":"v1","kind":"Deployment"},"scope":"Namespaced","singularResource":"deployment","verbs":["get","list"],"shortNames":["deploy"],"subresources":',
      ),
      text,
    );
  });

  test('JSON keeps creationTimestamp null where the apiserver wrote it and omits the core group name', () => {
    const core = list([{ metadata: { creationTimestamp: null }, versions: [{ version: 'v1', resources: [resource('pods', 'Pod', ['get'])] }] }]);
    const text = renderAggregated(core, 'json').body.toString('utf8');
    assert.ok(text.includes('"items":[{"metadata":{"creationTimestamp":null},"versions":'), text);
  });

  test('JSON escapes HTML characters as Go does', () => {
    const odd = list([group('x.example.com', [{ version: 'v1', resources: [resource('things', 'A<B>&C', ['get'])] }])]);
    assert.ok(renderAggregated(odd, 'json').body.toString('utf8').includes('"kind":"A\\u003cB\\u003e\\u0026C"'));
  });

  test('ETag is a quoted hash that changes with content only', () => {
    const one = renderAggregated(list([APPS]), 'json');
    const same = renderAggregated(list([APPS]), 'json');
    const other = renderAggregated(list([APPS, BATCH]), 'json');
    assert.match(one.etag, /^"[0-9A-F]{128}"$/);
    assert.equal(same.etag, one.etag);
    assert.notEqual(other.etag, one.etag);
    assert.equal(renderAggregated(list([APPS]), 'protobuf').etag, one.etag, 'one ETag for both encodings, as upstream');
  });

  test('protobuf is the k8s magic and a runtime.Unknown that decodes to the JSON document', () => {
    const merged = mergeDiscovery('a', skewedPair(), NOW);
    const doc = renderAggregated(merged.groups, 'protobuf');
    assert.equal(doc.contentType, 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    assert.deepEqual([...doc.body.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00]);
    const decoded = decodeAggregatedProtobuf(doc.body);
    assert.deepEqual(
      JSON.parse(renderAggregated(decoded, 'json').body.toString('utf8')),
      JSON.parse(renderAggregated(merged.groups, 'json').body.toString('utf8')),
    );
  });

  test('protobuf writes empty scalar fields as Go does', () => {
    const body = renderAggregated(list([]), 'protobuf').body;
    // Unknown{typeMeta, raw=ListMeta{selfLink:"",resourceVersion:"",continue:""}, contentEncoding:"", contentType:""}
    const typeMeta = Buffer.concat([
      Buffer.from([0x0a, 22]),
      Buffer.from('apidiscovery.k8s.io/v2'),
      Buffer.from([0x12, 21]),
      Buffer.from('APIGroupDiscoveryList'),
    ]);
    const raw = Buffer.from([0x0a, 0x06, 0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00]);
    const expected = Buffer.concat([
      Buffer.from('k8s\0', 'latin1'),
      Buffer.from([0x0a, typeMeta.length]),
      typeMeta,
      Buffer.from([0x12, raw.length]),
      raw,
      Buffer.from([0x1a, 0x00, 0x22, 0x00]),
    ]);
    assert.equal(body.toString('hex'), expected.toString('hex'));
  });
});

// ---- negotiation -----------------------------------------------------------------

describe('negotiateDiscovery', () => {
  const table: [string, string | undefined, ReturnType<typeof negotiateDiscovery>][] = [
    // client-go's acceptDiscoveryFormats (AcceptV2, AcceptV2Beta1, AcceptV1): kubectl and controllers
    ['client-go default', `${AGG_JSON},${AGG_JSON_V2BETA1},application/json`, { kind: 'aggregated', format: 'json' }],
    // client-go with NoPeerDiscovery: AcceptV2NoPeer first
    ['client-go nopeer', `${AGG_NOPEER},${AGG_JSON},${AGG_JSON_V2BETA1},application/json`, { kind: 'nopeer' }],
    // mvproxy's own fetcher and upstream peerproxy: AcceptV2Local (nopeer), AcceptV2, AcceptV1
    ['mvproxy discovery fetcher', `${AGG_NOPEER},${AGG_JSON},application/json`, { kind: 'nopeer' }],
    // client-go with UseLegacyDiscovery (AcceptV1)
    ['client-go legacy', 'application/json', { kind: 'legacy' }],
    // client-go 1.26 to 1.32 era: v2beta1 then JSON
    ['old client-go', `${AGG_JSON_V2BETA1},application/json`, { kind: 'legacy' }],
    ['no Accept header', undefined, { kind: 'legacy' }],
    ['empty Accept header', '', { kind: 'legacy' }],
    ['wildcard', '*/*', { kind: 'legacy' }],
    ['protobuf aggregated', `${AGG_PROTOBUF},${AGG_JSON},application/json`, { kind: 'aggregated', format: 'protobuf' }],
    ['protobuf nopeer', `${AGG_PROTOBUF};profile=nopeer,application/json`, { kind: 'nopeer' }],
    ['q-values reorder', `${AGG_JSON};q=0.5,application/json;q=0.9`, { kind: 'legacy' }],
    ['q=0 is not acceptable', `application/json;q=0,${AGG_JSON}`, { kind: 'aggregated', format: 'json' }],
    [
      'parameters in any order and with spaces',
      'application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io',
      { kind: 'aggregated', format: 'json' },
    ],
    ['quoted parameter values', 'application/json;g="apidiscovery.k8s.io";v="v2";as="APIGroupDiscoveryList"', { kind: 'aggregated', format: 'json' }],
    ['unsupported media type is skipped', `text/html,${AGG_JSON}`, { kind: 'aggregated', format: 'json' }],
    ['a conversion discovery cannot do is skipped', `application/json;as=Table;v=v1;g=meta.k8s.io,${AGG_JSON}`, { kind: 'aggregated', format: 'json' }],
    [
      'aggregated YAML is not rendered; next range wins',
      `application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,${AGG_JSON}`,
      { kind: 'aggregated', format: 'json' },
    ],
    ['media type is case-insensitive', 'Application/JSON;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', { kind: 'aggregated', format: 'json' }],
  ];
  for (const [name, accept, expected] of table) {
    test(`Accept negotiation: ${name}`, () => {
      assert.deepEqual(negotiateDiscovery(accept), expected);
    });
  }
});

// ---- the entry point ---------------------------------------------------------------

describe('discoveryResponse', () => {
  function merged(): MergedDiscovery {
    return mergeDiscovery('a', skewedPair(), NOW);
  }

  test('/apis with the aggregated Accept is the merged document with ETag, Vary and Cache-Control', () => {
    const m = merged();
    const answer = discoveryResponse({ document: 'group-discovery', accept: `${AGG_JSON},${AGG_JSON_V2BETA1},application/json` }, m);
    assert.ok(isReply(answer));
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['content-type'], AGG_JSON);
    assert.equal(answer.headers['vary'], 'Accept');
    assert.equal(answer.headers['cache-control'], 'public');
    assert.equal(answer.headers['etag'], renderAggregated(m.groups, 'json').etag);
    assert.deepEqual(groupNames(parseAggregatedDiscovery(JSON.parse(answer.body.toString('utf8')))), ['batch', 'apps']);
  });

  test('If-None-Match with the current ETag answers 304', () => {
    const m = merged();
    const first = discoveryResponse({ document: 'group-discovery', accept: AGG_JSON }, m);
    assert.ok(isReply(first));
    const etag = first.headers['etag'] as string;
    const again = discoveryResponse({ document: 'group-discovery', accept: AGG_JSON, ifNoneMatch: etag }, m);
    assert.ok(isReply(again));
    assert.equal(again.status, 304);
    assert.equal(again.body.length, 0);
    assert.equal(again.headers['etag'], etag);
  });

  test('a stale ETag after a change gets the new document', () => {
    const before = discoveryResponse({ document: 'group-discovery', accept: AGG_JSON }, merged());
    assert.ok(isReply(before));
    const changed = mergeDiscovery('a', model([apiserver('a', discovery([BATCH])), apiserver('b', discovery([APPS, CRD_GROUP]))]), NOW);
    const after = discoveryResponse({ document: 'group-discovery', accept: AGG_JSON, ifNoneMatch: before.headers['etag'] as string }, changed);
    assert.ok(isReply(after));
    assert.equal(after.status, 200);
    assert.notEqual(after.headers['etag'], before.headers['etag']);
  });

  test('/api with the aggregated Accept is the merged core document', () => {
    const answer = discoveryResponse({ document: 'core-discovery', accept: AGG_JSON }, merged());
    assert.ok(isReply(answer));
    assert.deepEqual(groupNames(parseAggregatedDiscovery(JSON.parse(answer.body.toString('utf8')))), ['']);
  });

  test('protobuf Accept gets the protobuf document', () => {
    const answer = discoveryResponse({ document: 'group-discovery', accept: `${AGG_PROTOBUF},${AGG_JSON}` }, merged());
    assert.ok(isReply(answer));
    assert.equal(answer.headers['content-type'], AGG_PROTOBUF);
    assert.deepEqual(groupNames(decodeAggregatedProtobuf(answer.body)), ['batch', 'apps']);
  });

  test('a repeated request is a cache hit', () => {
    const m = merged();
    const first = discoveryResponse({ document: 'group-discovery', accept: AGG_PROTOBUF }, m);
    const second = discoveryResponse({ document: 'group-discovery', accept: AGG_PROTOBUF }, m);
    assert.ok(isReply(first) && isReply(second));
    assert.equal(first.cache, 'miss');
    assert.equal(second.cache, 'hit');
  });

  test('nopeer and legacy requests pass through to the local apiserver', () => {
    assert.deepEqual(discoveryResponse({ document: 'group-discovery', accept: `${AGG_NOPEER},${AGG_JSON}` }, merged()), {
      passThrough: true,
      reason: 'nopeer',
    });
    assert.deepEqual(discoveryResponse({ document: 'group-discovery', accept: 'application/json' }, merged()), { passThrough: true, reason: 'legacy' });
  });

  test('without the local apiserver discovery the request passes through', () => {
    const m = mergeDiscovery('a', model([apiserver('a', undefined), apiserver('b', discovery([APPS]))]), NOW);
    assert.deepEqual(discoveryResponse({ document: 'group-discovery', accept: AGG_JSON }, m), { passThrough: true, reason: 'no-local-discovery' });
  });
});

// ---- OpenAPI v3 index ------------------------------------------------------------

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
    const merged = mergeDiscovery(local, m, NOW, { departedGraceMs: 300_000 }).openapi;
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

  test("without the local apiserver's index, there is no merged index and the apiserver answers itself", () => {
    const m = model([apiserver('a', discovery([BATCH])), apiserver('b', withIndex(discovery([APPS]), ['apis/apps/v1'], 'B'))]);
    const merged = mergeDiscovery('a', m, NOW);
    assert.equal(merged.openapi, undefined);
    assert.deepEqual(discoveryResponse({ document: 'openapi-index' }, merged), { passThrough: true, reason: 'no-local-discovery' });
  });

  test('/openapi/v3 is answered with the merged index as JSON, with an ETag that answers 304', () => {
    const merged = mergeDiscovery('a', pair(), NOW);
    const answer = discoveryResponse({ document: 'openapi-index' }, merged);
    assert.ok(isReply(answer));
    assert.equal(answer.status, 200);
    assert.equal(answer.document, 'openapi-index');
    assert.deepEqual((JSON.parse(answer.body.toString()) as { paths: unknown }).paths, merged.openapi?.paths);
    const etag = answer.headers['etag'] ?? '';
    const again = discoveryResponse({ document: 'openapi-index', ifNoneMatch: etag }, merged);
    assert.ok(isReply(again));
    assert.equal(again.status, 304);
    assert.equal(again.body.length, 0);
  });
});

// ---- malformed entries in the documents merged --------------------------------------

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
