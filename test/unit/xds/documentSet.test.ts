// The document set: a document filter's plugin configuration (src/xds/documentSet.ts), byte for byte.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { decodeDocumentSet, encodeDocumentSet, type DocumentVariant } from '../../../src/xds/documentSet.js';

const JSON_VARIANT: DocumentVariant = { format: 'aggregated-json', encoding: 'identity', etag: '"E"', contentType: 'ct', body: Buffer.from('body') };

describe('encodeDocumentSet', () => {
  test('writes magic, version, kind, the length-prefixed local ETag, count, then format, encoding and length-prefixed ETag, Content-Type and body, little-endian', () => {
    const bytes = encodeDocumentSet(
      'group-discovery',
      [JSON_VARIANT, { ...JSON_VARIANT, format: 'aggregated-protobuf', encoding: 'gzip', body: Buffer.from([0, 1]) }],
      '"L"',
    );
    const expected = Buffer.concat([
      Buffer.from('MVPD', 'latin1'),
      Buffer.from([2, 1, 3, 0, 0, 0]),
      Buffer.from('"L"'),
      Buffer.from([2, 0, 0, 0]),
      Buffer.from([0, 0, 3, 0, 0, 0]),
      Buffer.from('"E"'),
      Buffer.from([2, 0, 0, 0]),
      Buffer.from('ct'),
      Buffer.from([4, 0, 0, 0]),
      Buffer.from('body'),
      Buffer.from([1, 1, 3, 0, 0, 0]),
      Buffer.from('"E"'),
      Buffer.from([2, 0, 0, 0]),
      Buffer.from('ct'),
      Buffer.from([2, 0, 0, 0, 0, 1]),
    ]);
    assert.deepEqual(bytes, expected);
  });

  test('numbers the kinds 0 core, 1 groups, 2 OpenAPI index, and the plain JSON format 2', () => {
    assert.equal(encodeDocumentSet('core-discovery', [])[5], 0);
    assert.equal(encodeDocumentSet('group-discovery', [])[5], 1);
    const openapi = encodeDocumentSet('openapi-index', [{ ...JSON_VARIANT, format: 'json' }]);
    assert.equal(openapi[5], 2);
    assert.equal(openapi[14], 2);
  });

  test('refuses what the filter would refuse: a format the kind does not take, a repeated variant, a bad header value', () => {
    assert.throws(() => encodeDocumentSet('openapi-index', [JSON_VARIANT]), /cannot be in format/);
    assert.throws(() => encodeDocumentSet('core-discovery', [{ ...JSON_VARIANT, format: 'json' }]), /cannot be in format/);
    assert.throws(() => encodeDocumentSet('core-discovery', [JSON_VARIANT, JSON_VARIANT]), /two aggregated-json\/identity/);
    assert.throws(() => encodeDocumentSet('core-discovery', [{ ...JSON_VARIANT, etag: '' }]), /not a header value/);
    assert.throws(() => encodeDocumentSet('core-discovery', [{ ...JSON_VARIANT, contentType: 'a\r\nb' }]), /not a header value/);
    assert.throws(() => encodeDocumentSet('core-discovery', [JSON_VARIANT], '"a\nb"'), /local ETag is empty or not a header value/);
  });

  test('decodeDocumentSet reads back what was encoded; empty bytes are no documents', () => {
    const variants = [JSON_VARIANT, { ...JSON_VARIANT, encoding: 'gzip' as const, body: Buffer.alloc(70_000, 7) }];
    assert.deepEqual(decodeDocumentSet(encodeDocumentSet('core-discovery', variants)), { kind: 'core-discovery', variants });
    assert.deepEqual(decodeDocumentSet(encodeDocumentSet('core-discovery', variants, '"L"')), { kind: 'core-discovery', localEtag: '"L"', variants });
    assert.equal(decodeDocumentSet(Buffer.alloc(0)), undefined);
  });

  test('decodeDocumentSet refuses truncated and trailing bytes', () => {
    const bytes = encodeDocumentSet('core-discovery', [JSON_VARIANT]);
    assert.throws(() => decodeDocumentSet(bytes.subarray(0, bytes.length - 1)), /past the end/);
    assert.throws(() => decodeDocumentSet(Buffer.concat([bytes, Buffer.from([0])])), /after the last variant/);
    assert.throws(() => decodeDocumentSet(Buffer.from('MVPX\u0002\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000', 'latin1')), /not a document set/);
  });
});
