// The document filter revalidating with the local
// apiserver's own ETag: when the set holds it and the client's Accept leaves
// no doubt which format kube-apiserver negotiates, the filter asks with that
// ETag, and the apiserver's 304 (the request authorized, no document encoded)
// is answered with the merged document in that format.
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { HeaderList } from '../../support/proxyWasmHost.js';
import {
  AGG_JSON,
  AGG_PROTOBUF,
  ETAG,
  GZIP_BODY,
  JSON_BODY,
  LOCAL_ETAG,
  PROTOBUF_BODY,
  REQUEST,
  answer,
  discoveryHost,
  exchange,
  groupSet,
  jsonVariant,
  ok,
  protobufVariant,
  valuesOf,
} from '../../support/documentFilterHarness.js';

const revalidating = (): ReturnType<typeof discoveryHost> => discoveryHost(groupSet(undefined, LOCAL_ETAG));
const NOT_MODIFIED: HeaderList = [[':status', '304']];

function requestAccepting(accept: string, extra: HeaderList = []): HeaderList {
  return [...REQUEST.filter(([k]) => k !== 'accept'), ['accept', accept], ...extra];
}

describe('what the local apiserver is asked with', () => {
  for (const accept of [
    AGG_JSON,
    AGG_PROTOBUF,
    `${AGG_JSON},application/json`,
    // client-go's discovery Accept
    `${AGG_JSON},application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json`,
    'application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io',
    `${AGG_PROTOBUF}, ${AGG_JSON};q=0.9, application/json;q=0`,
  ]) {
    test(`its own ETag as the only If-None-Match, for a certain Accept: ${accept}`, () => {
      const { request } = exchange(revalidating(), requestAccepting(accept, [['if-none-match', ETAG]]));
      assert.deepEqual(valuesOf(request.headers, 'if-none-match'), [LOCAL_ETAG]);
    });
  }

  for (const [why, headers] of [
    ['no Accept', REQUEST.filter(([k]) => k !== 'accept')],
    ['legacy discovery first', requestAccepting(`application/json,${AGG_JSON}`)],
    ['v2beta1 first', requestAccepting('application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList')],
    ['a range that may outrank the first', requestAccepting(`${AGG_JSON},${AGG_PROTOBUF};q=1`)],
    ['a quality it cannot read', requestAccepting(`${AGG_JSON},${AGG_PROTOBUF};q=.5`)],
    ['a parameter more', requestAccepting(`${AGG_JSON};pretty=1`)],
    ['a parameter named in another case', requestAccepting('application/json;G=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList')],
    ['a media type in another case', requestAccepting('Application/JSON;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList')],
    ['a quoted value', requestAccepting('application/json;g=apidiscovery.k8s.io;v="v2";as=APIGroupDiscoveryList')],
    ['a tab', requestAccepting('application/json;\tg=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList')],
    ['twelve ranges (sorted unstably)', requestAccepting([AGG_JSON, ...Array.from({ length: 11 }, () => 'application/json')].join(','))],
    ['two Accept headers', requestAccepting(AGG_JSON, [['accept', AGG_PROTOBUF]])],
  ] as const) {
    test(`no If-None-Match with ${why}: the apiserver answers 200 in full`, () => {
      const { request } = exchange(revalidating(), headers);
      assert.deepEqual(valuesOf(request.headers, 'if-none-match'), []);
    });
  }

  test('no If-None-Match when the set holds no local ETag', () => {
    const { request } = exchange(discoveryHost(), requestAccepting(AGG_JSON));
    assert.deepEqual(valuesOf(request.headers, 'if-none-match'), []);
  });

  test('no If-None-Match when the set holds the format only gzipped', () => {
    const host = discoveryHost(groupSet([jsonVariant({ encoding: 'gzip', body: GZIP_BODY }), protobufVariant()], LOCAL_ETAG));
    const { request } = exchange(host, requestAccepting(AGG_JSON, [['accept-encoding', 'gzip']]));
    assert.deepEqual(valuesOf(request.headers, 'if-none-match'), []);
  });
});

describe("the local apiserver's 304", () => {
  test('becomes the merged document in the format the Accept asked for', () => {
    assert.deepEqual(answer(exchange(revalidating(), requestAccepting(AGG_JSON), NOT_MODIFIED).response)?.body, JSON_BODY);
    assert.deepEqual(answer(exchange(revalidating(), requestAccepting(AGG_PROTOBUF), NOT_MODIFIED).response)?.body, PROTOBUF_BODY);
  });

  test("becomes a 304 when the client's own If-None-Match names the merged ETag", () => {
    const { response } = exchange(revalidating(), requestAccepting(AGG_JSON, [['if-none-match', ETAG]]), NOT_MODIFIED);
    assert.equal(answer(response)?.status, 304);
  });

  test('is answered gzipped when the client takes gzip and the set holds it', () => {
    const host = discoveryHost(groupSet([jsonVariant(), jsonVariant({ encoding: 'gzip', body: GZIP_BODY })], LOCAL_ETAG));
    const { response } = exchange(host, requestAccepting(AGG_JSON, [['accept-encoding', 'gzip']]), NOT_MODIFIED);
    assert.deepEqual(answer(response)?.body, GZIP_BODY);
  });

  test('passes untouched when the filter did not revalidate', () => {
    const { response } = exchange(revalidating(), requestAccepting(`application/json,${AGG_JSON}`), NOT_MODIFIED);
    assert.equal(response.localResponse, undefined);
  });
});

describe("the local apiserver's 200 to a revalidation (its document changed since the ETag was pushed)", () => {
  test('is replaced by its Content-Type, as any 200', () => {
    const { response } = exchange(revalidating(), requestAccepting(AGG_JSON), ok(AGG_PROTOBUF));
    assert.deepEqual(answer(response)?.body, PROTOBUF_BODY);
  });

  test('an error status still passes untouched', () => {
    const { response } = exchange(revalidating(), requestAccepting(AGG_JSON), [[':status', '403']]);
    assert.equal(response.localResponse, undefined);
  });
});
