// The document set (version 3): a peer part pre-encoded for the document
// filter to splice, and its digest, which the merged ETag takes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';

import type { AggregatedPeerPart, OpenApiPeerPart } from '../../../src/discovery/peerPart.js';
import { encodeAggregatedProtobuf } from '../../../src/discovery/protobufEncode.js';
import { DOCUMENT_SET_VERSION, decodeDocumentSet, documentSetDigest, encodeDocumentSet } from '../../../src/xds/documentSet.js';
import { APPS, BATCH, list } from '../../support/discoveryFixtures.js';

const PART: AggregatedPeerPart = { document: 'group-discovery', groups: list([APPS, BATCH]).items };

describe('encodeDocumentSet', () => {
  test('header: MVPD, version 3, the kind, the digest of the sections', () => {
    const set = encodeDocumentSet(PART);
    assert.equal(set.toString('latin1', 0, 4), 'MVPD');
    assert.equal(set[4], DOCUMENT_SET_VERSION);
    assert.equal(set[5], 1);
    assert.equal(set.toString('latin1', 6, 70), createHash('sha256').update(set.subarray(70)).digest('hex'));
    assert.equal(documentSetDigest(PART), set.toString('latin1', 6, 70));
  });

  test('each group, version and resource carries its name and its JSON as Go writes it', () => {
    const decoded = decodeDocumentSet(encodeDocumentSet(PART));
    assert.deepEqual(
      decoded?.groups.map((g) => [g.name, g.children.map((v) => [v.name, v.children.map((r) => r.name)])]),
      [
        ['apps', [['v1', ['deployments']]]],
        ['batch', [['v1', ['jobs', 'cronjobs']]]],
      ],
    );
    const batch = decoded?.groups[1];
    assert.deepEqual(JSON.parse(batch?.json ?? ''), JSON.parse(JSON.stringify(PART.groups[1])));
    assert.ok(!(batch?.json ?? '').endsWith('\n'));
    assert.deepEqual(JSON.parse(batch?.children[0]?.children[1]?.json ?? ''), JSON.parse(JSON.stringify(PART.groups[1]?.versions[0]?.resources[1])));
  });

  test('the protobuf fragment of a group is the message kube-apiserver writes for it, as an item of its list', () => {
    const group = decodeDocumentSet(encodeDocumentSet(PART))?.groups[1]?.protobuf ?? Buffer.alloc(0);
    const varint = (n: number): number[] => (n < 0x80 ? [n] : [(n & 0x7f) | 0x80, ...varint(n >>> 7)]);
    const item = Buffer.concat([Buffer.from([0x12, ...varint(group.length)]), group]);
    assert.ok(group.length > 0);
    assert.ok(encodeAggregatedProtobuf(list([BATCH])).includes(item));
  });

  test('the OpenAPI index part: paths in ascending order, keys as JSON writes them', () => {
    const part: OpenApiPeerPart = {
      document: 'openapi-index',
      paths: { 'apis/b/v1': { serverRelativeURL: '/b' }, 'apis/a/v1': { serverRelativeURL: '/a?x=<&>' } },
    };
    const decoded = decodeDocumentSet(encodeDocumentSet(part));
    assert.deepEqual(decoded?.paths, [
      { key: 'apis/a/v1', value: '{"serverRelativeURL":"/a?x=\\u003c\\u0026\\u003e"}' },
      { key: 'apis/b/v1', value: '{"serverRelativeURL":"/b"}' },
    ]);
  });

  test('an empty part is a set; the digest changes with the part', () => {
    const empty: AggregatedPeerPart = { document: 'group-discovery', groups: [] };
    assert.deepEqual(decodeDocumentSet(encodeDocumentSet(empty))?.groups, []);
    assert.notEqual(documentSetDigest(empty), documentSetDigest(PART));
    assert.notEqual(documentSetDigest({ ...PART, document: 'core-discovery' }), undefined);
  });

  test('empty bytes decode as nothing held', () => {
    assert.equal(decodeDocumentSet(Buffer.alloc(0)), undefined);
  });
});
