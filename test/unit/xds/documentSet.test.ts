// The document set (version 4): a peer part pre-encoded for the document
// filter to splice, and its digest, which the merged ETag takes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';

import type { AggregatedPeerPart, OpenApiPeerPart } from '../../../src/discovery/peerPart.js';
import { encodeAggregatedProtobuf } from '../../../src/discovery/protobufEncode.js';
import { DOCUMENT_SET_VERSION, decodeDocumentSet, documentSetDigest, encodeDocumentSet } from '../../../src/xds/documentSet.js';
import { encodeGroupMessage, encodeResourceMessage } from '../../../src/discovery/legacyWire.js';
import { APPS, BATCH, group, list, resource } from '../../support/discoveryFixtures.js';

const PART: AggregatedPeerPart = { document: 'group-discovery', groups: list([APPS, BATCH]).items };
const PART_JSON = (i: number): string => decodeDocumentSet(encodeDocumentSet(PART))?.groups[i]?.json ?? '';

describe('encodeDocumentSet', () => {
  test('header: MVPD, version 4, the kind, the digest of the sections', () => {
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
    assert.deepEqual(
      decoded?.groups[1]?.children[0]?.children.map((r) => [r.name, r.children.map((s) => s.name)]),
      [
        ['jobs', ['status']],
        ['cronjobs', []],
      ],
      'a resource node holds its subresources',
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

  test("a subresource node carries its aggregated entry as JSON and as the message of its resource's field 8", () => {
    const status = decodeDocumentSet(encodeDocumentSet(PART))?.groups[1]?.children[0]?.children[0]?.children[0];
    const expected = PART.groups[1]?.versions[0]?.resources[0]?.subresources?.[0];
    assert.deepEqual(JSON.parse(status?.json ?? ''), JSON.parse(JSON.stringify(expected)));
    const message = status?.protobuf ?? Buffer.alloc(0);
    assert.ok(message.length > 0);
    assert.ok(encodeAggregatedProtobuf(list([BATCH])).includes(Buffer.concat([Buffer.from([0x42, message.length]), message])));
  });

  test('legacy fragments: APIGroup of a group, GroupVersionForDiscovery of a version, APIResource of a resource and subresource', () => {
    const batch = decodeDocumentSet(encodeDocumentSet(PART))?.groups[1];
    const v1 = batch?.children[0];
    const jobs = v1?.children[0];
    assert.equal(
      batch?.legacyJson,
      '{"name":"batch","versions":[{"groupVersion":"batch/v1","version":"v1"}],"preferredVersion":{"groupVersion":"batch/v1","version":"v1"}}',
    );
    assert.deepEqual(batch?.legacyProtobuf, encodeGroupMessage(JSON.parse(batch?.legacyJson ?? '{}')));
    assert.equal(v1?.legacyJson, '{"groupVersion":"batch/v1","version":"v1"}');
    assert.equal(
      jobs?.legacyJson,
      '{"name":"jobs","singularName":"job","namespaced":true,"group":"batch","version":"v1","kind":"Job","verbs":["create","get","list"],"categories":["all"]}',
    );
    assert.deepEqual(jobs?.legacyProtobuf, encodeResourceMessage(JSON.parse(jobs?.legacyJson ?? '{}')));
    assert.equal(
      jobs?.children[0]?.legacyJson,
      '{"name":"jobs/status","singularName":"job","namespaced":true,"group":"batch","version":"v1","kind":"Job","verbs":["get","patch","update"]}',
    );
  });

  test('legacy fragments of the core group: none for the group, the bare version for a version', () => {
    const core = list([group('', [{ version: 'v2', resources: [resource('pods', 'Pod', ['get'])] }])]).items;
    const decoded = decodeDocumentSet(encodeDocumentSet({ document: 'core-discovery', groups: core }))?.groups[0];
    assert.equal(decoded?.legacyJson, '');
    assert.equal(decoded?.legacyProtobuf.length, 0);
    assert.equal(decoded?.children[0]?.legacyJson, '"v2"');
    assert.deepEqual(decoded?.children[0]?.legacyProtobuf, Buffer.from('v2'));
  });

  test('a resource or subresource without a response kind, and anything of a stale version, has empty legacy fragments', () => {
    const bare = list([
      group('x.io', [
        { version: 'v1', resources: [{ resource: 'things', scope: 'Cluster', verbs: ['get'], subresources: [{ subresource: 's', verbs: ['get'] }] }] },
      ]),
    ]).items;
    const things = decodeDocumentSet(encodeDocumentSet({ document: 'group-discovery', groups: bare }))?.groups[0]?.children[0]?.children[0];
    assert.deepEqual([things?.legacyJson, things?.legacyProtobuf.length, things?.children[0]?.legacyJson], ['', 0, '']);
    const stale = list([BATCH]).items.map((g) => ({ ...g, versions: g.versions.map((v) => ({ ...v, freshness: 'Stale' as const })) }));
    const batch = decodeDocumentSet(encodeDocumentSet({ document: 'group-discovery', groups: stale }))?.groups[0];
    assert.deepEqual([batch?.legacyJson, batch?.children[0]?.legacyJson, batch?.children[0]?.children[0]?.legacyJson], ['', '', '']);
  });

  test("local built-in versions and groups are legacy-only nodes: no aggregated fragments, after the peer part's", () => {
    const part: AggregatedPeerPart = {
      ...PART,
      localBuiltIn: [
        { group: 'batch', versions: ['v2'] },
        { group: 'policy', versions: ['v1'] },
      ],
    };
    const decoded = decodeDocumentSet(encodeDocumentSet(part));
    assert.deepEqual(
      decoded?.groups.map((g) => [g.name, g.json, g.children.map((v) => [v.name, v.json === '' ? 'legacy only' : 'aggregated', v.legacyJson])]),
      [
        ['apps', PART_JSON(0), [['v1', 'aggregated', '{"groupVersion":"apps/v1","version":"v1"}']]],
        [
          'batch',
          PART_JSON(1),
          [
            ['v1', 'aggregated', '{"groupVersion":"batch/v1","version":"v1"}'],
            ['v2', 'legacy only', '{"groupVersion":"batch/v2","version":"v2"}'],
          ],
        ],
        ['policy', '', [['v1', 'legacy only', '{"groupVersion":"policy/v1","version":"v1"}']]],
      ],
    );
    assert.equal(decoded?.groups[2]?.protobuf.length, 0);
    assert.equal(
      decoded?.groups[1]?.legacyJson,
      '{"name":"batch","versions":[{"groupVersion":"batch/v1","version":"v1"},{"groupVersion":"batch/v2","version":"v2"}],"preferredVersion":{"groupVersion":"batch/v2","version":"v2"}}',
      'the group prefers its built-in version',
    );
    assert.notEqual(documentSetDigest(part), documentSetDigest(PART));
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
