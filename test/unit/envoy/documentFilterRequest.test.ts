// The document filter, request side: which requests it
// leaves alone, and what it holds back from the local apiserver.
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { AGGREGATED_DISCOVERY_ACCEPT, AGGREGATED_DISCOVERY_NOPEER_JSON } from '../../../src/model/discovery.js';
import { AGG_JSON, ETAG, REQUEST, answer, discoveryHost, exchange, ok, valuesOf, withHeaders } from '../../support/documentFilterHarness.js';

describe('no documents held', () => {
  test('an empty configuration is accepted and logs nothing', () => {
    const host = discoveryHost(new Uint8Array(0));
    assert.equal(host.configured, true);
    assert.deepEqual(host.logs, []);
  });

  test('requests and responses pass untouched both ways', () => {
    const host = discoveryHost(new Uint8Array(0));
    const request = withHeaders([
      ['if-none-match', ETAG],
      ['accept-encoding', 'gzip'],
    ]);
    const { request: req, response } = exchange(host, request, ok());
    assert.equal(req.action, 'continue');
    assert.deepEqual(req.headers, request);
    assert.equal(response.action, 'continue');
    assert.equal(response.localResponse, undefined);
    assert.deepEqual(response.headers, ok());
    assert.deepEqual(host.logs, []);
  });
});

describe("profile=nopeer (the apiserver's own document)", () => {
  for (const accept of [
    AGGREGATED_DISCOVERY_NOPEER_JSON,
    AGGREGATED_DISCOVERY_ACCEPT,
    'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList; Profile = "nopeer"',
    `application/json, ${AGGREGATED_DISCOVERY_NOPEER_JSON};q=0.9`,
  ]) {
    test(`is left to the local apiserver: ${accept}`, () => {
      const request = withHeaders([
        ['accept', accept],
        ['if-none-match', ETAG],
        ['accept-encoding', 'gzip'],
      ]);
      const { request: req, response } = exchange(discoveryHost(), request);
      assert.deepEqual(req.headers, request, 'request untouched');
      assert.equal(response.action, 'continue');
      assert.equal(response.localResponse, undefined);
    });
  }

  test('in a second Accept header counts too', () => {
    const { response } = exchange(discoveryHost(), withHeaders([['accept', AGGREGATED_DISCOVERY_NOPEER_JSON]]));
    assert.equal(response.localResponse, undefined);
  });

  test('profile=nopeer as a media type, or nopeer as another parameter, is not the opt-out', () => {
    for (const accept of [`${AGG_JSON},profile=nopeer`, `${AGG_JSON};peer=nopeer`, `${AGG_JSON};profile="nopeer,x"`]) {
      const { response } = exchange(discoveryHost(), [...REQUEST.slice(0, 3), ['accept', accept]]);
      assert.equal(answer(response)?.status, 200, accept);
    }
  });
});

describe('what the local apiserver receives', () => {
  test('If-None-Match is removed (every value), so it answers 200 in full', () => {
    const request = withHeaders([
      ['If-None-Match', ETAG],
      ['if-none-match', '"other"'],
    ]);
    const { request: req } = exchange(discoveryHost(), request);
    assert.equal(req.action, 'continue');
    assert.deepEqual(valuesOf(req.headers, 'if-none-match'), []);
  });

  test('Accept-Encoding is removed, so it answers uncompressed', () => {
    const { request: req } = exchange(discoveryHost(), withHeaders([['Accept-Encoding', 'gzip, deflate']]));
    assert.deepEqual(valuesOf(req.headers, 'accept-encoding'), []);
  });

  test('every other header, Accept included, goes through unchanged and in order', () => {
    const request = withHeaders([
      ['authorization', 'Bearer t'],
      ['if-none-match', ETAG],
      ['user-agent', 'kubectl'],
      ['accept-encoding', 'gzip'],
    ]);
    const { request: req } = exchange(discoveryHost(), request);
    assert.deepEqual(
      req.headers,
      request.filter(([k]) => k !== 'if-none-match' && k !== 'accept-encoding'),
    );
  });

  test('a request without either header is not changed at all', () => {
    const { request: req } = exchange(discoveryHost(), REQUEST);
    assert.deepEqual(req.headers, REQUEST);
  });

  test('nothing is logged per request', () => {
    const host = discoveryHost();
    for (let i = 0; i < 10; i++) exchange(host, withHeaders([['if-none-match', ETAG]]));
    assert.deepEqual(host.logs, []);
  });
});
