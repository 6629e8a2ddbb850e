// Legacy discovery over ext_proc (src/discovery/legacyResponse.ts through
// discoveryResponse): the local legacy answer merged with the peer part by
// the legacy merge rule, in the apiserver's format, without an ETag; the
// local answer goes through whenever it is not what the merge expects.
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { describe, test } from 'node:test';

import { goOrderedLegacy, encodeLegacyProtobuf, decodeLegacyProtobuf, type LegacyBody } from '../../../src/discovery/legacyWire.js';
import { mergeDiscovery } from '../../../src/discovery/merge.js';
import type { AggregatedPeerPart } from '../../../src/discovery/peerPart.js';
import { goJson } from '../../../src/discovery/render.js';
import { discoveryResponse, type DiscoveryReply, type LocalAnswer } from '../../../src/discovery/response.js';
import type { APIGroup } from '../../../src/model/legacyDiscovery.js';
import { APPS, BATCH, NOW, apiserver, discovery, model } from '../../support/discoveryFixtures.js';
import { legacyGroup } from '../../support/legacyBodies.js';

const DIGEST = 'd'.repeat(64);
const PART = (): AggregatedPeerPart => {
  const part = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([APPS, BATCH]))]), NOW).peer.groups;
  assert.ok(part);
  return part;
};
const APPS_GROUP: APIGroup = legacyGroup('apps', 'v1');
const GROUP_LIST: LegacyBody = { kind: 'APIGroupList', document: { kind: 'APIGroupList', apiVersion: 'v1', groups: [APPS_GROUP] } };

function jsonAnswer(body: LegacyBody, text = goJson(goOrderedLegacy(body))): LocalAnswer {
  return {
    headers: new Map([
      ['content-type', ['application/json']],
      ['audit-id', ['x']],
    ]),
    body: Buffer.from(text, 'utf8'),
  };
}

function reply(answer: ReturnType<typeof discoveryResponse>): DiscoveryReply {
  assert.ok(!('passThrough' in answer), JSON.stringify(answer));
  return answer;
}

describe('legacy discovery over ext_proc', () => {
  test('/apis (APIGroupList, JSON): the local groups, then the groups only peers serve, without an ETag', () => {
    const answer = reply(discoveryResponse({ document: 'group-discovery', path: '/apis', accept: 'application/json' }, jsonAnswer(GROUP_LIST), PART(), DIGEST));
    const merged = JSON.parse(answer.body.toString('utf8')) as { groups: APIGroup[] };
    assert.deepEqual(
      merged.groups.map((g) => g.name),
      ['apps', 'batch'],
    );
    assert.equal(answer.status, 200);
    assert.deepEqual(
      answer.headers.filter(([name]) => name !== 'audit-id'),
      [['content-type', 'application/json']],
    );
    assert.ok(answer.body.toString('utf8').endsWith('\n'));
  });

  test('/apis/{g}/{v} (APIResourceList, protobuf): the local list, then the resources and subresources the part adds', () => {
    const local: LegacyBody = { kind: 'APIResourceList', document: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'batch/v1', resources: [] } };
    const answer = reply(
      discoveryResponse(
        { document: 'group-discovery', path: '/apis/batch/v1?timeout=32s', accept: 'application/vnd.kubernetes.protobuf' },
        { headers: new Map([['content-type', ['application/vnd.kubernetes.protobuf']]]), body: encodeLegacyProtobuf(local) },
        PART(),
        DIGEST,
      ),
    );
    const merged = decodeLegacyProtobuf(answer.body);
    assert.equal(merged.kind, 'APIResourceList');
    assert.deepEqual(merged.kind === 'APIResourceList' ? merged.document.resources.map((r) => r.name) : [], ['jobs', 'jobs/status', 'cronjobs']);
  });

  test('a large merged answer is gzipped for a gzip client, as kube-apiserver would', () => {
    const many: LegacyBody = {
      kind: 'APIGroupList',
      document: { kind: 'APIGroupList', apiVersion: 'v1', groups: Array.from({ length: 2000 }, (_, i) => ({ ...APPS_GROUP, name: `g${i}.example.com` })) },
    };
    const answer = reply(discoveryResponse({ document: 'group-discovery', path: '/apis', acceptEncoding: 'gzip' }, jsonAnswer(many), PART(), DIGEST));
    assert.deepEqual(
      answer.headers.filter(([name]) => name === 'content-encoding'),
      [['content-encoding', 'gzip']],
    );
    // The 2,000 listed, then batch (only the peer serves it) and apps (built into the local apiserver, which did not list it).
    assert.equal((JSON.parse(gunzipSync(answer.body).toString('utf8')) as { groups: unknown[] }).groups.length, 2002);
  });

  test('a local document that would not encode back to its very bytes goes through untouched', () => {
    const spaced = jsonAnswer(GROUP_LIST, JSON.stringify(GROUP_LIST.document, null, 1));
    assert.deepEqual(discoveryResponse({ document: 'group-discovery', path: '/apis' }, spaced, PART(), DIGEST), {
      passThrough: true,
      reason: 'unexpected-local-answer',
    });
  });

  test('a body that is not the document the path names goes through untouched', () => {
    assert.deepEqual(discoveryResponse({ document: 'group-discovery', path: '/apis/apps' }, jsonAnswer(GROUP_LIST), PART(), DIGEST), {
      passThrough: true,
      reason: 'unexpected-local-answer',
    });
    assert.deepEqual(discoveryResponse({ document: 'group-discovery', path: '/apis/apps/v1/deployments' }, jsonAnswer(GROUP_LIST), PART(), DIGEST), {
      passThrough: true,
      reason: 'unexpected-local-answer',
    });
  });

  test('/apis/{g} of a group the part does not touch: the local bytes as they were', () => {
    const local: LegacyBody = { kind: 'APIGroup', document: { kind: 'APIGroup', apiVersion: 'v1', ...APPS_GROUP } };
    const answer = jsonAnswer(local);
    assert.deepEqual(reply(discoveryResponse({ document: 'group-discovery', path: '/apis/apps' }, answer, PART(), DIGEST)).body, answer.body);
  });
});
