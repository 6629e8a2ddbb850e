// The document filter around the merge: what it leaves alone, what the local
// apiserver receives, the cache per format keyed by the local ETag (the
// revalidation and its 304, a 200 whose ETag is the cache's), the client's
// If-None-Match, failing open, and the counters.
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { AGGREGATED_DISCOVERY_NOPEER_JSON } from '../../../src/model/discovery.js';
import type { AggregatedPeerPart } from '../../../src/discovery/peerPart.js';
import { APPS, BATCH, list } from '../../support/discoveryFixtures.js';
import {
  AGG_JSON,
  AGG_PROTOBUF,
  LOCAL_ETAG,
  REQUEST,
  bodyEtag,
  documentHost,
  exchange,
  expectedEtag,
  header,
  localBodies,
  mergedByRule,
  ok,
  valuesOf,
  withHeaders,
} from '../../support/documentFilterHarness.js';
import { leaf, newHost, values, withCert } from '../../support/identityFilterHarness.js';
import type { HeaderList } from '../../support/proxyWasmHost.js';

const LOCAL = list([APPS]);
const PART: AggregatedPeerPart = { document: 'group-discovery', groups: list([BATCH]).items };
const BODY = localBodies(LOCAL).json;
const MERGED = localBodies(mergedByRule(LOCAL, PART)).json;
const MERGED_ETAG = expectedEtag(LOCAL_ETAG, PART);
/** An Accept the filter cannot be sure the apiserver negotiates: no revalidation. */
const DOUBTFUL: HeaderList = [...REQUEST.slice(0, 3), ['accept', `${AGG_JSON};q=0.9,application/json`]];
const NOT_MODIFIED: HeaderList = [
  [':status', '304'],
  ['etag', LOCAL_ETAG],
  ['audit-id', 'audit-304'],
  ['x-kubernetes-pf-flowschema-uid', 'fs-2'],
  ['x-kubernetes-pf-prioritylevel-uid', 'pl-2'],
  ['warning', '299 - "w"'],
];

describe('left alone', () => {
  test('nothing held (empty configuration): requests and answers pass untouched, nothing logged', () => {
    const host = documentHost(new Uint8Array(0));
    assert.equal(host.configured, true);
    const request = withHeaders([['if-none-match', '"x"']]);
    const answer = exchange(host, request, ok(BODY), BODY);
    assert.deepEqual(answer.request.headers, request);
    assert.deepEqual(answer.body, BODY);
    assert.deepEqual(answer.headers, ok(BODY));
    assert.deepEqual(host.logs, []);
  });

  test('profile=nopeer: the request and the answer are the apiserver’s own', () => {
    const request = withHeaders([
      ['accept', AGGREGATED_DISCOVERY_NOPEER_JSON],
      ['if-none-match', '"x"'],
    ]);
    const answer = exchange(documentHost(PART), request, ok(BODY), BODY);
    assert.deepEqual(answer.request.headers, request);
    assert.deepEqual(answer.body, BODY);
    assert.equal(header(answer.headers, 'etag'), LOCAL_ETAG);
  });

  for (const [what, response] of [
    [
      'a 401',
      [
        [':status', '401'],
        ['content-type', 'application/json'],
      ],
    ],
    ['legacy discovery (plain JSON)', ok(BODY, 'application/json')],
    ['a compressed answer', [...ok(BODY), ['content-encoding', 'gzip']]],
  ] as Array<[string, HeaderList]>) {
    test(`${what} passes untouched`, () => {
      const answer = exchange(documentHost(PART), REQUEST, response, BODY);
      assert.deepEqual(answer.headers, response);
      assert.deepEqual(answer.body, BODY);
    });
  }
});

describe('legacy-only nodes (the local built-in groups)', () => {
  test('add nothing to aggregated discovery, in JSON or protobuf: it lists them from the local apiserver itself', () => {
    const builtIn: AggregatedPeerPart = {
      ...PART,
      localBuiltIn: [
        { group: 'policy', versions: ['v1'] },
        { group: 'batch', versions: ['v2'] },
      ],
    };
    const bodies = localBodies(LOCAL);
    const expected = localBodies(mergedByRule(LOCAL, PART));
    const json = exchange(documentHost(builtIn), REQUEST, ok(bodies.json), bodies.json);
    assert.deepEqual(json.body, expected.json);
    assert.equal(header(json.headers, 'etag'), expectedEtag(LOCAL_ETAG, builtIn));
    const protobufRequest: HeaderList = [...REQUEST.slice(0, 3), ['accept', AGG_PROTOBUF]];
    const protobuf = exchange(documentHost(builtIn), protobufRequest, ok(bodies.protobuf, AGG_PROTOBUF), bodies.protobuf);
    assert.deepEqual(protobuf.body, expected.protobuf);
  });
});

describe('what the local apiserver receives', () => {
  test('If-None-Match (every value) and Accept-Encoding are removed; nothing else changes', () => {
    const request = withHeaders([
      ['If-None-Match', '"a"'],
      ['if-none-match', '"b"'],
      ['accept-encoding', 'gzip'],
      ['user-agent', 'kubectl'],
    ]);
    const answer = exchange(documentHost(PART), request, ok(BODY), BODY);
    assert.deepEqual(
      answer.request.headers,
      request.filter(([k]) => !/^(if-none-match|accept-encoding)$/i.test(k)),
    );
  });

  test('once a merged answer is cached, a certain Accept revalidates with the local ETag; a doubtful one does not', () => {
    const host = documentHost(PART);
    exchange(host, REQUEST, ok(BODY), BODY);
    assert.deepEqual(valuesOf(exchange(host, REQUEST, ok(BODY), BODY).request.headers, 'if-none-match'), [LOCAL_ETAG]);
    assert.deepEqual(valuesOf(exchange(host, DOUBTFUL, ok(BODY), BODY).request.headers, 'if-none-match'), []);
    // The cache is per format: protobuf has none yet.
    const protobuf: HeaderList = [...REQUEST.slice(0, 3), ['accept', AGG_PROTOBUF]];
    assert.deepEqual(valuesOf(exchange(host, protobuf, ok(BODY), BODY).request.headers, 'if-none-match'), []);
  });
});

describe('the cache', () => {
  test('the apiserver’s 304 to the revalidation gets the cached merged document, as a local reply with its headers', () => {
    const host = documentHost(PART);
    const spliced = exchange(host, REQUEST, ok(BODY), BODY);
    const cached = exchange(host, REQUEST, NOT_MODIFIED);
    assert.equal(cached.localReply, true);
    assert.equal(cached.status, 200);
    assert.deepEqual(cached.body, spliced.body);
    assert.deepEqual(cached.headers, [
      ['content-type', AGG_JSON],
      ['etag', MERGED_ETAG],
      ['vary', 'Accept'],
      ['cache-control', 'public'],
      ['audit-id', 'audit-304'],
      ['x-kubernetes-pf-flowschema-uid', 'fs-2'],
      ['x-kubernetes-pf-prioritylevel-uid', 'pl-2'],
      ['warning', '299 - "w"'],
    ]);
  });

  test('a 200 whose ETag is the cache’s: its body dropped, the cached one sent in place, the same bytes and ETag as spliced', () => {
    const host = documentHost(PART);
    const spliced = exchange(host, DOUBTFUL, ok(BODY), BODY);
    const cached = exchange(host, DOUBTFUL, ok(BODY), BODY, 100);
    assert.equal(cached.localReply, false);
    assert.deepEqual(cached.body, spliced.body);
    assert.deepEqual(cached.body, MERGED);
    assert.equal(header(cached.headers, 'etag'), MERGED_ETAG);
    assert.equal(header(cached.headers, 'content-length'), String(MERGED.length));
    assert.equal(host.metric('mvproxy_document_merged_cached'), 1n);
    assert.equal(host.metric('mvproxy_document_merged_spliced'), 1n);
  });

  test('a 200 with a new local ETag is spliced again and replaces the entry', () => {
    const host = documentHost(PART);
    exchange(host, REQUEST, ok(BODY), BODY);
    const other = localBodies(list([APPS, BATCH])).json;
    const changed = exchange(host, REQUEST, ok(other, AGG_JSON, '"new"'), other);
    assert.equal(header(changed.headers, 'etag'), expectedEtag('"new"', PART));
    assert.deepEqual(valuesOf(exchange(host, REQUEST, ok(other, AGG_JSON, '"new"'), other).request.headers, 'if-none-match'), ['"new"']);
  });

  test('a 200 without an ETag: the SHA-256 of its body stands for the local ETag, and no revalidation follows', () => {
    const host = documentHost(PART);
    const answer = exchange(host, REQUEST, ok(BODY, AGG_JSON, null), BODY);
    assert.equal(header(answer.headers, 'etag'), expectedEtag(bodyEtag(BODY), PART));
    assert.deepEqual(valuesOf(exchange(host, REQUEST, ok(BODY, AGG_JSON, null), BODY).request.headers, 'if-none-match'), []);
  });
});

describe("the client's If-None-Match", () => {
  const merged = withHeaders([['if-none-match', `"other", W/${MERGED_ETAG}`]]);

  test('naming the merged ETag on a spliced answer: 304 in place, no body, no Content-Length', () => {
    const answer = exchange(documentHost(PART), merged, ok(BODY), BODY);
    assert.equal(answer.localReply, false);
    assert.equal(answer.status, 304);
    assert.equal(answer.body.length, 0);
    assert.equal(header(answer.headers, 'etag'), MERGED_ETAG);
    assert.equal(header(answer.headers, 'content-length'), undefined);
    assert.equal(header(answer.headers, 'audit-id'), 'audit-1');
  });

  test('naming it on the apiserver’s 304 to the revalidation: a 304 local reply', () => {
    const host = documentHost(PART);
    exchange(host, REQUEST, ok(BODY), BODY);
    const answer = exchange(host, merged, NOT_MODIFIED);
    assert.equal(answer.status, 304);
    assert.equal(answer.body.length, 0);
    assert.equal(header(answer.headers, 'etag'), MERGED_ETAG);
    assert.equal(header(answer.headers, 'audit-id'), 'audit-304');
    assert.equal(host.metric('mvproxy_document_answers_not_modified'), 1n);
    assert.equal(host.metric('mvproxy_document_local_not_modified'), 1n);
  });

  test('`*` names any ETag; the local ETag is not the merged one', () => {
    assert.equal(exchange(documentHost(PART), withHeaders([['if-none-match', '*']]), ok(BODY), BODY).status, 304);
    assert.equal(exchange(documentHost(PART), withHeaders([['if-none-match', LOCAL_ETAG]]), ok(BODY), BODY).status, 200);
  });
});

describe('failing open: the local answer exactly as received', () => {
  const cases: Array<[string, Buffer]> = [
    ['malformed JSON', Buffer.from('{"kind":"APIGroupDiscoveryList","items":[{"metadata":')],
    ['truncated JSON', BODY.subarray(0, BODY.length - 5)],
    ['JSON without items', Buffer.from('{"kind":"APIGroupDiscoveryList"}')],
    ['items not an array', Buffer.from('{"items":{}}')],
    ['trailing garbage', Buffer.concat([BODY, Buffer.from('x')])],
  ];
  for (const [what, body] of cases) {
    test(what, () => {
      const host = documentHost(PART);
      const answer = exchange(host, REQUEST, ok(body), body, 11);
      assert.deepEqual(answer.body, body);
      assert.deepEqual(answer.headers, ok(body));
      assert.equal(host.metric('mvproxy_document_failed_open'), 1n);
      assert.equal(host.metric('mvproxy_document_answers_local'), 1n);
      assert.deepEqual(host.logs, []);
    });
  }

  test('a truncated or malformed protobuf body', () => {
    const protobuf = localBodies(LOCAL).protobuf;
    for (const body of [protobuf.subarray(0, protobuf.length - 3), Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x12, 0x7f, 0x01]), Buffer.from('not protobuf')]) {
      const answer = exchange(documentHost(PART), REQUEST, ok(body, AGG_PROTOBUF), body);
      assert.deepEqual(answer.body, body);
      assert.deepEqual(answer.headers, ok(body, AGG_PROTOBUF));
    }
  });

  test('a body over the cap (64 MiB) goes through untouched as it streams', () => {
    const host = documentHost(PART);
    const big = Buffer.alloc(64 * 1024 * 1024 + 10, 0x20);
    big.write('{"items":[', 0);
    const answer = exchange(host, REQUEST, ok(big), big, 4 * 1024 * 1024);
    assert.equal(answer.body.length, big.length);
    assert.ok(answer.body.equals(big));
    assert.equal(header(answer.headers, 'etag'), LOCAL_ETAG);
    assert.equal(host.metric('mvproxy_document_failed_open'), 1n);
  });
});

describe('counters', () => {
  test('each request counts once: merged, not modified, local; spliced and cached say how', () => {
    const host = documentHost(PART);
    exchange(host, REQUEST, ok(BODY), BODY);
    exchange(host, REQUEST, NOT_MODIFIED);
    exchange(host, withHeaders([['if-none-match', MERGED_ETAG]]), NOT_MODIFIED);
    exchange(host, REQUEST, [[':status', '401']]);
    assert.equal(host.metric('mvproxy_document_answers_merged'), 2n);
    assert.equal(host.metric('mvproxy_document_answers_not_modified'), 1n);
    assert.equal(host.metric('mvproxy_document_answers_local'), 1n);
    assert.equal(host.metric('mvproxy_document_local_not_modified'), 2n);
    assert.equal(host.metric('mvproxy_document_merged_spliced'), 1n);
    assert.equal(host.metric('mvproxy_document_merged_cached'), 2n);
    assert.equal(host.metric('mvproxy_document_failed_open'), 0n);
  });
});

describe('two VMs', () => {
  test('a trap in the document module leaves the identity module (another VM) working', async () => {
    const documents = documentHost(PART);
    const stream = documents.openStream();
    documents.sendRequestHeaders(stream, REQUEST);
    documents.sendResponseHeaders(stream, ok(BODY));
    documents.trapOn = 'proxy_get_buffer_bytes';
    assert.throws(() => documents.sendResponseBody(stream, BODY, true), WebAssembly.RuntimeError);
    const identity = newHost();
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    assert.deepEqual(values(identity.request(withCert(cert.certPem)), 'x-remote-user'), ['alice']);
  });
});
