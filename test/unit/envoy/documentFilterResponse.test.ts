// The document filter, response side: when the local
// apiserver's answer is replaced, by which variant, and with which headers
// (as src/discovery/response.ts answers through ext_proc a document over the push budget).
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { encodeDocumentSet } from '../../../src/xds/documentSet.js';
import type { HeaderList } from '../../support/proxyWasmHost.js';
import {
  AGG_JSON,
  AGG_PROTOBUF,
  ETAG,
  GZIP_BODY,
  JSON_BODY,
  OPENAPI_BODY,
  OTHER_ETAG,
  PROTOBUF_BODY,
  REQUEST,
  answer,
  discoveryHost,
  exchange,
  groupSet,
  jsonVariant,
  ok,
  openapiVariant,
  protobufVariant,
  withHeaders,
} from '../../support/documentFilterHarness.js';

const JSON_HEADERS: HeaderList = [
  ['content-type', AGG_JSON],
  ['etag', ETAG],
  ['vary', 'Accept'],
  ['cache-control', 'public'],
];
const NOT_MODIFIED_HEADERS: HeaderList = [
  ['etag', ETAG],
  ['vary', 'Accept'],
  ['cache-control', 'public'],
];

describe('which answers are replaced', () => {
  test('a 200 in aggregated JSON becomes the merged JSON document, as a local response that stops the local one', () => {
    const { response } = exchange(discoveryHost(), REQUEST, ok(AGG_JSON));
    assert.equal(response.action, 'pause');
    assert.equal(response.localResponse?.details, 'mvproxy_merged_document');
    assert.equal(response.localResponse?.grpcStatus, -1);
    assert.deepEqual(answer(response), { status: 200, headers: JSON_HEADERS, body: JSON_BODY });
  });

  test('a 200 in aggregated protobuf becomes the merged protobuf document', () => {
    const { response } = exchange(discoveryHost(), REQUEST, ok(AGG_PROTOBUF));
    assert.deepEqual(answer(response), {
      status: 200,
      headers: [['content-type', AGG_PROTOBUF], ...JSON_HEADERS.slice(1)],
      body: PROTOBUF_BODY,
    });
  });

  test('the Content-Type is compared as a media type: parameter order, spacing and type case do not matter', () => {
    for (const contentType of [
      'application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io',
      'Application/JSON; g=apidiscovery.k8s.io; v=v2; as=APIGroupDiscoveryList',
      'application/json;G=apidiscovery.k8s.io;v="v2";as=APIGroupDiscoveryList',
    ]) {
      assert.deepEqual(answer(exchange(discoveryHost(), REQUEST, ok(contentType)).response)?.body, JSON_BODY, contentType);
    }
    const protobuf = 'APPLICATION/vnd.kubernetes.protobuf ;v=v2 ;as=APIGroupDiscoveryList ;g=apidiscovery.k8s.io';
    assert.deepEqual(answer(exchange(discoveryHost(), REQUEST, ok(protobuf)).response)?.body, PROTOBUF_BODY);
  });

  test('legacy discovery, v2beta1, YAML, other parameters or none pass untouched', () => {
    for (const contentType of [
      'application/json',
      'application/vnd.kubernetes.protobuf',
      'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList',
      'application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
      'application/json;g=apidiscovery.k8s.io;v=v2;as=apigroupdiscoverylist',
      `${AGG_JSON};profile=nopeer`,
      'application/json;g=apidiscovery.k8s.io;v=v2',
      'text/plain',
    ]) {
      const { response } = exchange(discoveryHost(), REQUEST, ok(contentType));
      assert.equal(response.action, 'continue', contentType);
      assert.equal(response.localResponse, undefined, contentType);
      assert.deepEqual(response.headers, ok(contentType));
    }
  });

  test('a response without Content-Type passes untouched', () => {
    const { response } = exchange(discoveryHost(), REQUEST, [[':status', '200']]);
    assert.equal(response.localResponse, undefined);
  });

  test('any status but 200 (401, 403, 304, 500, 503) passes untouched', () => {
    for (const status of ['401', '403', '304', '500', '503']) {
      const headers: HeaderList = [
        [':status', status],
        ['content-type', AGG_JSON],
      ];
      const { response } = exchange(discoveryHost(), REQUEST, headers);
      assert.equal(response.action, 'continue', status);
      assert.equal(response.localResponse, undefined, status);
    }
  });

  test('a format the set does not hold passes untouched', () => {
    const host = discoveryHost(groupSet([jsonVariant()]));
    assert.equal(exchange(host, REQUEST, ok(AGG_PROTOBUF)).response.localResponse, undefined);
    assert.equal(answer(exchange(host, REQUEST, ok(AGG_JSON)).response)?.status, 200);
  });
});

describe('If-None-Match: 304 Not Modified', () => {
  for (const [name, value] of [
    ['the strong ETag', ETAG],
    ['the weak ETag', `W/${ETAG}`],
    ['*', '*'],
    ['in a list', `"x", ${OTHER_ETAG} ,W/${ETAG}`],
  ] as const) {
    test(`${name}: 304 with ETag, Vary and Cache-Control and no body`, () => {
      const { response } = exchange(discoveryHost(), withHeaders([['if-none-match', value]]));
      assert.equal(response.action, 'pause');
      assert.deepEqual(answer(response), { status: 304, headers: NOT_MODIFIED_HEADERS, body: Buffer.alloc(0) });
    });
  }

  test('spread over several If-None-Match headers', () => {
    const { response } = exchange(
      discoveryHost(),
      withHeaders([
        ['if-none-match', OTHER_ETAG],
        ['if-none-match', ETAG],
      ]),
    );
    assert.equal(answer(response)?.status, 304);
  });

  test('another ETag, or the ETag without quotes: 200 with the document', () => {
    for (const value of [OTHER_ETAG, ETAG.slice(1, -1), `w/${ETAG}`]) {
      assert.equal(answer(exchange(discoveryHost(), withHeaders([['if-none-match', value]])).response)?.status, 200, value);
    }
  });

  test('compared with the ETag of the variant that answers', () => {
    const host = discoveryHost(groupSet([jsonVariant(), protobufVariant({ etag: OTHER_ETAG })]));
    const request = withHeaders([['if-none-match', ETAG]]);
    assert.equal(answer(exchange(host, request, ok(AGG_JSON)).response)?.status, 304);
    assert.equal(answer(exchange(host, request, ok(AGG_PROTOBUF)).response)?.status, 200);
  });

  test('a non-200 local answer passes untouched even when If-None-Match matches', () => {
    const { response } = exchange(discoveryHost(), withHeaders([['if-none-match', ETAG]]), [[':status', '403']]);
    assert.equal(response.localResponse, undefined);
  });
});

describe('gzip', () => {
  const zipped = groupSet([jsonVariant(), jsonVariant({ encoding: 'gzip', body: GZIP_BODY }), protobufVariant()]);

  test('the gzip variant when the client accepts gzip, with Content-Encoding and Vary: Accept-Encoding', () => {
    const { response } = exchange(discoveryHost(zipped), withHeaders([['accept-encoding', 'deflate, gzip']]));
    assert.deepEqual(answer(response), {
      status: 200,
      headers: [...JSON_HEADERS, ['content-encoding', 'gzip'], ['vary', 'Accept-Encoding']],
      body: GZIP_BODY,
    });
  });

  test('the identity variant when the client does not accept gzip (as kube-apiserver: a token exactly "gzip")', () => {
    for (const acceptEncoding of [undefined, 'deflate', '*', 'GZIP', 'gzip;q=1', 'x-gzip']) {
      const request = acceptEncoding === undefined ? REQUEST : withHeaders([['accept-encoding', acceptEncoding]]);
      assert.deepEqual(answer(exchange(discoveryHost(zipped), request).response), { status: 200, headers: JSON_HEADERS, body: JSON_BODY }, acceptEncoding);
    }
  });

  test('the identity variant when the format has no gzip variant', () => {
    const { response } = exchange(discoveryHost(zipped), withHeaders([['accept-encoding', 'gzip']]), ok(AGG_PROTOBUF));
    assert.deepEqual(answer(response)?.body, PROTOBUF_BODY);
    assert.equal(
      answer(response)?.headers.find(([k]) => k === 'content-encoding'),
      undefined,
    );
  });

  test('a format held only gzipped passes to a client that does not accept gzip', () => {
    const host = discoveryHost(groupSet([jsonVariant({ encoding: 'gzip', body: GZIP_BODY })]));
    assert.equal(exchange(host, REQUEST).response.localResponse, undefined);
    assert.deepEqual(answer(exchange(host, withHeaders([['accept-encoding', 'gzip']])).response)?.body, GZIP_BODY);
  });

  test('304 for the gzip variant carries no Content-Encoding', () => {
    const { response } = exchange(
      discoveryHost(zipped),
      withHeaders([
        ['accept-encoding', 'gzip'],
        ['if-none-match', ETAG],
      ]),
    );
    assert.deepEqual(answer(response), { status: 304, headers: NOT_MODIFIED_HEADERS, body: Buffer.alloc(0) });
  });
});

describe('the OpenAPI v3 index', () => {
  const openapi = (): Buffer => encodeDocumentSet('openapi-index', [openapiVariant()]);
  const request: HeaderList = [
    [':method', 'GET'],
    [':path', '/openapi/v3'],
    ['accept', 'application/json'],
  ];

  test('a 200 in application/json becomes the merged index with Cache-Control "no-cache, private" and no Vary', () => {
    const { response } = exchange(discoveryHost(openapi()), request, ok('application/json'));
    assert.deepEqual(answer(response), {
      status: 200,
      headers: [
        ['content-type', 'application/json'],
        ['etag', ETAG],
        ['cache-control', 'no-cache, private'],
      ],
      body: OPENAPI_BODY,
    });
  });

  test('304 on a matching If-None-Match, with ETag and Cache-Control', () => {
    const { response } = exchange(discoveryHost(openapi()), [...request, ['if-none-match', ETAG]], ok('application/json; charset=utf-8'));
    assert.deepEqual(answer(response), {
      status: 304,
      headers: [
        ['etag', ETAG],
        ['cache-control', 'no-cache, private'],
      ],
      body: Buffer.alloc(0),
    });
  });

  test("the index is replaced whatever its content type: kube-apiserver's http.ServeContent sniffs its JSON as text/plain", () => {
    assert.deepEqual(answer(exchange(discoveryHost(openapi()), request, ok('text/plain; charset=utf-8')).response)?.body, OPENAPI_BODY);
  });
});

describe('size and memory', () => {
  test('requests allocate nothing that stays: memory stops growing over many requests, open streams included', () => {
    const host = discoveryHost(groupSet([jsonVariant(), jsonVariant({ encoding: 'gzip', body: GZIP_BODY }), protobufVariant()]));
    const request = withHeaders([
      ['if-none-match', `"x", ${ETAG}`],
      ['accept-encoding', 'gzip'],
    ]);
    const round = (): number => {
      // 200 concurrent streams, then 5000 one after the other, all three outcomes.
      const open = Array.from({ length: 200 }, () => host.openStream());
      for (const stream of open) host.sendRequestHeaders(stream, REQUEST);
      for (const stream of open) host.sendResponseHeaders(stream, ok(AGG_PROTOBUF));
      for (const stream of open) host.closeStream(stream);
      for (let i = 0; i < 5000; i++) exchange(host, i % 2 === 0 ? request : REQUEST, ok(i % 3 === 0 ? AGG_PROTOBUF : AGG_JSON));
      return host.memoryBytes();
    };
    const sizes = [round(), round(), round(), round()];
    assert.equal(sizes[3], sizes[1], `memory grew: ${sizes.join(', ')}`);
  });

  test('a 5 MiB body round-trips byte for byte', () => {
    const body = Buffer.alloc(5 * 1024 * 1024);
    for (let i = 0; i < body.length; i += 4) body.writeUInt32LE((i * 2654435761) >>> 0, i);
    const host = discoveryHost(groupSet([jsonVariant({ body })]));
    for (let i = 0; i < 3; i++) assert.ok(answer(exchange(host).response)?.body.equals(body));
  });
});
