// The document filter gzips a merged discovery document as kube-apiserver
// would (a client whose first Accept-Encoding lists `gzip`, a body over
// 128 KiB, level 1; Content-Encoding gzip and a second Vary), in place on the
// 200 path and in the local reply to the apiserver's 304; the cache keeps
// the gzip form once made. The gzip (envoy/filters/assembly/deflate.ts) is
// read back with Node's zlib, which checks the CRC-32 and size trailer.
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';

import type { AggregatedPeerPart, OpenApiPeerPart } from '../../../src/discovery/peerPart.js';
import { APPS, BATCH, list } from '../../support/discoveryFixtures.js';
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
  ok,
  valuesOf,
  withHeaders,
} from '../../support/documentFilterHarness.js';
import type { HeaderList } from '../../support/proxyWasmHost.js';

const PART: AggregatedPeerPart = { document: 'group-discovery', groups: list([BATCH]).items };
const MERGED_ETAG = expectedEtag(LOCAL_ETAG, PART);
const THRESHOLD = 128 * 1024;
const GZIP_REQUEST = withHeaders([['accept-encoding', 'gzip']]);
const NOT_MODIFIED: HeaderList = [
  [':status', '304'],
  ['etag', LOCAL_ETAG],
  ['audit-id', 'audit-304'],
];

/** A deterministic stream of bytes (xorshift32). */
function pseudoRandom(n: number, seed = 0x9e3779b9): Buffer {
  const bytes = Buffer.alloc(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    bytes[i] = x & 0xff;
  }
  return bytes;
}

/** Filler a JSON string may hold as it is: no quote, backslash or control byte. */
function asJsonString(bytes: Buffer): Buffer {
  return Buffer.from(bytes.map((b) => (b < 0x20 ? b + 0x60 : b === 0x22 || b === 0x5c ? b + 1 : b)));
}

/** The local /apis (apps) in JSON with a leading member of `padding` bytes (kept by the merge, as any member it does not read). */
function localWithPadding(padding: Buffer): Buffer {
  const body = localBodies(list([APPS])).json;
  return Buffer.concat([Buffer.from('{"padding":"'), padding, Buffer.from('",'), body.subarray(1)]);
}

/** The merged document a client without gzip gets for a local body (a fresh host: spliced). */
function identityAnswer(local: Buffer): Buffer {
  const answer = exchange(documentHost(PART), REQUEST, ok(local), local);
  assert.equal(header(answer.headers, 'content-encoding'), undefined);
  return answer.body;
}

const REPETITIVE = localWithPadding(Buffer.from('xabcabcabd'.repeat(60_000)));
const RANDOM = localWithPadding(asJsonString(pseudoRandom(300_000)));

describe('gzip on the 200 path (in place)', () => {
  for (const [what, local] of [
    ['repetitive', REPETITIVE],
    ['random', RANDOM],
  ] as Array<[string, Buffer]>) {
    test(`a ${what} document over 128 KiB gunzips to exactly the identity answer, and shrinks when it repeats`, () => {
      const answer = exchange(documentHost(PART), GZIP_REQUEST, ok(local), local);
      assert.equal(answer.localReply, false);
      const identity = identityAnswer(local);
      assert.ok(identity.length > THRESHOLD);
      assert.deepEqual(gunzipSync(answer.body), identity);
      assert.equal(header(answer.headers, 'content-length'), String(answer.body.length));
      if (what === 'repetitive') assert.ok(answer.body.length < identity.length / 10, `${answer.body.length} bytes`);
      else assert.ok(answer.body.length < identity.length * 1.13, `${answer.body.length} bytes`);
    });
  }

  test('the headers are kube-apiserver’s: Content-Encoding gzip and a second Vary, the merged ETag, the local headers kept', () => {
    const answer = exchange(documentHost(PART), GZIP_REQUEST, ok(REPETITIVE), REPETITIVE);
    assert.equal(answer.status, 200);
    assert.deepEqual(valuesOf(answer.headers, 'content-encoding'), ['gzip']);
    assert.deepEqual(valuesOf(answer.headers, 'vary'), ['Accept', 'Accept-Encoding']);
    assert.equal(header(answer.headers, 'etag'), MERGED_ETAG);
    assert.equal(header(answer.headers, 'audit-id'), 'audit-1');
    assert.deepEqual(valuesOf(answer.headers, 'warning'), ['299 - "first"', '299 - "second"']);
  });

  test('the gzip header says deflate at the fastest level, no name, no time', () => {
    const answer = exchange(documentHost(PART), GZIP_REQUEST, ok(REPETITIVE), REPETITIVE);
    assert.deepEqual([...answer.body.subarray(0, 10)], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255]);
  });

  test('protobuf is gzipped the same way', () => {
    const local = localBodies(list(Array.from({ length: 1500 }, (_, i) => ({ ...APPS, metadata: { name: `apps${i}.example.com` } })))).protobuf;
    assert.ok(local.length > THRESHOLD);
    const protobuf: HeaderList = [...GZIP_REQUEST.slice(0, 3), ['accept', AGG_PROTOBUF], ['accept-encoding', 'gzip']];
    const zipped = exchange(documentHost(PART), protobuf, ok(local, AGG_PROTOBUF), local);
    const plain = exchange(documentHost(PART), protobuf.slice(0, 4), ok(local, AGG_PROTOBUF), local);
    assert.equal(header(zipped.headers, 'content-encoding'), 'gzip');
    assert.deepEqual(gunzipSync(zipped.body), plain.body);
  });

  test('sizes across the threshold and up to several MiB gunzip whole (CRC-32 and size checked by zlib)', () => {
    for (const size of [THRESHOLD + 1, THRESHOLD + 7, 1024 * 1024 + 3, 6 * 1024 * 1024]) {
      const local = localWithPadding(asJsonString(pseudoRandom(size, size)));
      const identity = identityAnswer(local);
      const answer = exchange(documentHost(PART), GZIP_REQUEST, ok(local), local, 1024 * 1024);
      assert.deepEqual(gunzipSync(answer.body), identity, `${size} bytes`);
    }
  });

  test('long runs (matches of 258 bytes at distance 1) and matches 32 KiB back', () => {
    const block = asJsonString(pseudoRandom(32 * 1024, 7));
    for (const padding of [Buffer.alloc(200_000, 0x61), Buffer.concat([block, block, block, block, block])]) {
      const local = localWithPadding(padding);
      const answer = exchange(documentHost(PART), GZIP_REQUEST, ok(local), local);
      assert.deepEqual(gunzipSync(answer.body), identityAnswer(local));
      assert.ok(answer.body.length < local.length / 3, `${answer.body.length} bytes`);
    }
  });
  test('skewed byte frequencies (a Huffman tree deeper than 15 bits, limited) gunzip whole', () => {
    // Bytes A..Z drawn with Fibonacci weights: an unlimited code would run to 18 bits.
    const weights = [1, 1];
    while (weights.length < 26) weights.push((weights.at(-1) ?? 0) + (weights.at(-2) ?? 0));
    const total = weights.reduce((a, b) => a + b, 0);
    const draws = pseudoRandom(1_200_000, 3);
    const padding = Buffer.alloc(400_000);
    for (let i = 0; i < padding.length; i++) {
      let r = draws.readUIntBE(3 * i, 3) % total;
      let k = 0;
      while (r >= (weights[k] ?? 0)) r -= weights[k++] ?? 0;
      padding[i] = 0x41 + k;
    }
    const local = localWithPadding(padding);
    const answer = exchange(documentHost(PART), GZIP_REQUEST, ok(local), local);
    assert.deepEqual(gunzipSync(answer.body), identityAnswer(local));
    assert.ok(answer.body.length < local.length / 2, `${answer.body.length} bytes`);
  });
});

describe('when the filter does not gzip', () => {
  test('a body of 128 KiB or less goes identity, even to a client that takes gzip', () => {
    const small = localBodies(list([APPS])).json;
    const answer = exchange(documentHost(PART), GZIP_REQUEST, ok(small), small);
    assert.equal(header(answer.headers, 'content-encoding'), undefined);
    assert.deepEqual(valuesOf(answer.headers, 'vary'), ['Accept']);
    assert.deepEqual(answer.body, identityAnswer(small));
  });

  for (const [what, request] of [
    ['without Accept-Encoding', REQUEST],
    ['with Accept-Encoding: identity', withHeaders([['accept-encoding', 'identity']])],
    [
      'whose first Accept-Encoding lacks gzip (kube-apiserver reads the first only)',
      withHeaders([
        ['accept-encoding', 'deflate'],
        ['accept-encoding', 'gzip'],
      ]),
    ],
    ['with gzip only as a prefix (`gzipx`)', withHeaders([['accept-encoding', 'gzipx, br']])],
  ] as Array<[string, HeaderList]>) {
    test(`a client ${what} gets identity`, () => {
      const answer = exchange(documentHost(PART), request, ok(REPETITIVE), REPETITIVE);
      assert.equal(header(answer.headers, 'content-encoding'), undefined);
      assert.deepEqual(answer.body, identityAnswer(REPETITIVE));
    });
  }

  test('gzip among other codings, spaced, is taken', () => {
    const answer = exchange(documentHost(PART), withHeaders([['accept-encoding', 'br,  gzip ,deflate']]), ok(REPETITIVE), REPETITIVE);
    assert.equal(header(answer.headers, 'content-encoding'), 'gzip');
  });

  test('the OpenAPI index (kube-apiserver never gzips it) goes identity', () => {
    const part: OpenApiPeerPart = { document: 'openapi-index', paths: { 'apis/batch/v1': { serverRelativeURL: '/openapi/v3/apis/batch/v1?hash=1' } } };
    const paths = Object.fromEntries(
      Array.from({ length: 3000 }, (_, i) => [
        `apis/g${String(i).padStart(5, '0')}.example.com/v1`,
        { serverRelativeURL: `/openapi/v3/apis/g${i}/v1?hash=${'0'.repeat(64)}` },
      ]),
    );
    const local = Buffer.from(JSON.stringify({ paths }));
    assert.ok(local.length > THRESHOLD);
    const answer = exchange(documentHost(part), withHeaders([['accept-encoding', 'gzip']]), ok(local, 'text/plain; charset=utf-8'), local);
    assert.equal(header(answer.headers, 'content-encoding'), undefined);
    assert.ok(answer.body.includes('apis/batch/v1'));
  });

  test('a 304 for the client’s If-None-Match has no body and no Content-Encoding', () => {
    const answer = exchange(
      documentHost(PART),
      withHeaders([
        ['if-none-match', MERGED_ETAG],
        ['accept-encoding', 'gzip'],
      ]),
      ok(REPETITIVE),
      REPETITIVE,
    );
    assert.equal(answer.status, 304);
    assert.equal(header(answer.headers, 'content-encoding'), undefined);
    assert.equal(answer.body.length, 0);
  });
});

describe('the cache and the revalidation', () => {
  test('the apiserver’s 304 to the revalidation: the cached document gzipped, as a local reply with kube-apiserver’s headers', () => {
    const host = documentHost(PART);
    const identity = exchange(host, REQUEST, ok(REPETITIVE), REPETITIVE).body;
    const cached = exchange(host, GZIP_REQUEST, NOT_MODIFIED);
    assert.equal(cached.localReply, true);
    assert.equal(cached.status, 200);
    assert.deepEqual(gunzipSync(cached.body), identity);
    assert.deepEqual(cached.headers.slice(0, 6), [
      ['content-type', AGG_JSON],
      ['etag', MERGED_ETAG],
      ['vary', 'Accept'],
      ['cache-control', 'public'],
      ['content-encoding', 'gzip'],
      ['vary', 'Accept-Encoding'],
    ]);
    assert.equal(header(cached.headers, 'audit-id'), 'audit-304');
  });

  test('the revalidation answers a client without gzip in identity after a gzip one', () => {
    const host = documentHost(PART);
    const zipped = exchange(host, GZIP_REQUEST, ok(REPETITIVE), REPETITIVE);
    const plain = exchange(host, REQUEST, NOT_MODIFIED);
    assert.equal(header(plain.headers, 'content-encoding'), undefined);
    assert.deepEqual(gunzipSync(zipped.body), plain.body);
  });

  test('the gzip form is made once per entry: the same bytes from the cache, in place and as a local reply', () => {
    const host = documentHost(PART);
    const first = exchange(host, GZIP_REQUEST, ok(REPETITIVE), REPETITIVE);
    const inPlace = exchange(host, [...GZIP_REQUEST.slice(0, 3), ['accept', `${AGG_JSON};q=0.9`], ['accept-encoding', 'gzip']], ok(REPETITIVE), REPETITIVE);
    const reply = exchange(host, GZIP_REQUEST, NOT_MODIFIED);
    assert.equal(inPlace.localReply, false);
    assert.deepEqual(inPlace.body, first.body);
    assert.deepEqual(reply.body, first.body);
    assert.equal(host.metric('mvproxy_document_merged_cached'), 2n);
  });

  test('a new local document replaces the gzip form with the entry', () => {
    const host = documentHost(PART);
    exchange(host, GZIP_REQUEST, ok(REPETITIVE), REPETITIVE);
    const changed = exchange(host, GZIP_REQUEST, ok(RANDOM, undefined, '"new"'), RANDOM);
    assert.deepEqual(gunzipSync(changed.body), identityAnswer(RANDOM));
    const again = exchange(
      host,
      GZIP_REQUEST,
      NOT_MODIFIED.map(([k, v]): [string, string] => [k, k === 'etag' ? '"new"' : v]),
    );
    assert.deepEqual(again.body, changed.body);
  });
});
