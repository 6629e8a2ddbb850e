// discoveryResponse: the answer ext_proc gives a discovery request (merged document, 304, or pass-through).
// Fixtures: test/support/discoveryFixtures.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { parseAggregatedDiscovery } from '../../../src/model/discoveryDocument.js';
import { decodeAggregatedProtobuf, discoveryResponse, mergeDiscovery, renderAggregated, type MergedDiscovery } from '../../../src/discovery/index.js';
import {
  AGG_JSON,
  AGG_JSON_V2BETA1,
  AGG_NOPEER,
  AGG_PROTOBUF,
  APPS,
  BATCH,
  CRD_GROUP,
  NOW,
  apiserver,
  discovery,
  groupNames,
  isReply,
  model,
  skewedPair,
} from '../../support/discoveryFixtures.js';

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
