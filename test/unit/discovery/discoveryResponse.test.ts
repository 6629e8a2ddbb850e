// discoveryResponse: the ext_proc tier's answer, the local apiserver's current 200 merged with the peer part
// (or the local answer untouched). Fixtures: test/support/discoveryFixtures.ts.
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { describe, test } from 'node:test';

import { discoveryResponse, type DiscoveryReply, type LocalAnswer } from '../../../src/discovery/response.js';
import { mergeDiscovery } from '../../../src/discovery/merge.js';
import { mergedEtag, type AggregatedPeerPart, type OpenApiPeerPart } from '../../../src/discovery/peerPart.js';
import { decodeAggregatedProtobuf, renderAggregated } from '../../../src/discovery/index.js';
import type { APIGroupDiscoveryList } from '../../../src/model/discovery.js';
import { parseAggregatedDiscovery } from '../../../src/model/discoveryDocument.js';
import {
  AGG_JSON,
  AGG_NOPEER,
  AGG_PROTOBUF,
  APPS,
  BATCH,
  NOW,
  apiserver,
  discovery,
  group,
  groupNames,
  isReply,
  list,
  model,
  resource,
} from '../../support/discoveryFixtures.js';

const DIGEST = 'd'.repeat(64);
const LOCAL_ETAG = '"LOCAL"';

/** The peer part of /apis for a sidecar of `a` serving apps while `b` serves batch. */
function batchPart(): AggregatedPeerPart {
  const part = mergeDiscovery('a', model([apiserver('a', discovery([APPS])), apiserver('b', discovery([APPS, BATCH]))]), NOW).peer.groups;
  assert.ok(part);
  return part;
}

/** The local apiserver's 200 with this document, as it sends it. */
function localAnswer(doc: APIGroupDiscoveryList, format: 'json' | 'protobuf', extra: Array<[string, string[]]> = []): LocalAnswer {
  const rendered = renderAggregated(doc, format);
  return {
    headers: new Map<string, string[]>([['content-type', [rendered.contentType]], ['etag', [LOCAL_ETAG]], ['vary', ['Accept']], ...extra]),
    body: rendered.body,
  };
}

function reply(answer: ReturnType<typeof discoveryResponse>): DiscoveryReply {
  assert.ok(isReply(answer), JSON.stringify(answer));
  return answer;
}

function header(answer: DiscoveryReply, name: string): string[] {
  return answer.headers.filter(([n]) => n === name).map(([, v]) => v);
}

describe('discoveryResponse', () => {
  test('the local JSON document as the apiserver sent it now, plus the peer part after its own groups', () => {
    const local = localAnswer(list([APPS]), 'json');
    const answer = reply(discoveryResponse({ document: 'group-discovery', accept: AGG_JSON }, local, batchPart(), DIGEST));
    assert.equal(answer.status, 200);
    assert.deepEqual(header(answer, 'content-type'), [AGG_JSON]);
    assert.deepEqual(groupNames(parseAggregatedDiscovery(JSON.parse(answer.body.toString('utf8')))), ['apps', 'batch']);
  });

  test('merges into what the local apiserver answers at this request, not into what the control plane last read', () => {
    const newer = group('stable.example.com', [{ version: 'v1', resources: [resource('crontabs', 'CronTab', ['get'])] }]);
    const answer = reply(discoveryResponse({ document: 'group-discovery', accept: AGG_JSON }, localAnswer(list([APPS, newer]), 'json'), batchPart(), DIGEST));
    assert.deepEqual(groupNames(parseAggregatedDiscovery(JSON.parse(answer.body.toString('utf8')))), ['apps', 'stable.example.com', 'batch']);
  });

  test('a protobuf local answer is answered in protobuf', () => {
    const answer = reply(
      discoveryResponse({ document: 'group-discovery', accept: `${AGG_PROTOBUF},${AGG_JSON}` }, localAnswer(list([APPS]), 'protobuf'), batchPart(), DIGEST),
    );
    assert.deepEqual(header(answer, 'content-type'), [AGG_PROTOBUF]);
    assert.deepEqual(groupNames(decodeAggregatedProtobuf(answer.body)), ['apps', 'batch']);
  });

  test('the ETag is mergedEtag of the local ETag and the peer digest, the same for JSON and protobuf', () => {
    const json = reply(discoveryResponse({ document: 'group-discovery', accept: AGG_JSON }, localAnswer(list([APPS]), 'json'), batchPart(), DIGEST));
    const protobuf = reply(
      discoveryResponse({ document: 'group-discovery', accept: AGG_PROTOBUF }, localAnswer(list([APPS]), 'protobuf'), batchPart(), DIGEST),
    );
    assert.deepEqual(header(json, 'etag'), [mergedEtag(LOCAL_ETAG, DIGEST)]);
    assert.deepEqual(header(protobuf, 'etag'), header(json, 'etag'));
  });

  test("If-None-Match naming the merged ETag answers 304 with the local apiserver's headers", () => {
    const etag = mergedEtag(LOCAL_ETAG, DIGEST);
    const local = localAnswer(list([APPS]), 'json', [['audit-id', ['a1']]]);
    const answer = reply(discoveryResponse({ document: 'group-discovery', accept: AGG_JSON, ifNoneMatch: `"x", ${etag}` }, local, batchPart(), DIGEST));
    assert.equal(answer.status, 304);
    assert.equal(answer.body.length, 0);
    assert.deepEqual(header(answer, 'etag'), [etag]);
    assert.deepEqual(header(answer, 'audit-id'), ['a1']);
  });

  test('keeps the local headers (Audit-Id, priority and fairness, every Warning), replaces only what describes the body', () => {
    const local = localAnswer(list([APPS]), 'json', [
      ['audit-id', ['a1']],
      ['x-kubernetes-pf-flowschema-uid', ['f1']],
      ['warning', ['299 - "one"', '299 - "two"']],
      ['content-length', ['12']],
    ]);
    const answer = reply(discoveryResponse({ document: 'group-discovery', accept: AGG_JSON }, local, batchPart(), DIGEST));
    assert.deepEqual(header(answer, 'audit-id'), ['a1']);
    assert.deepEqual(header(answer, 'x-kubernetes-pf-flowschema-uid'), ['f1']);
    assert.deepEqual(header(answer, 'warning'), ['299 - "one"', '299 - "two"']);
    assert.deepEqual(header(answer, 'vary'), ['Accept']);
    assert.deepEqual(header(answer, 'content-length'), []);
  });

  test('gzips a merged document over 128 KiB at level 1 when the client accepts gzip, as kube-apiserver', () => {
    const many = Array.from({ length: 2000 }, (_, i) => resource(`widgets${i}`, `Widget${i}`, ['get', 'list']));
    const big = group('big.example.com', [{ version: 'v1', resources: many }]);
    const local = localAnswer(list([big]), 'json');
    const gzip = reply(discoveryResponse({ document: 'group-discovery', accept: AGG_JSON, acceptEncoding: 'gzip, deflate' }, local, batchPart(), DIGEST));
    assert.deepEqual(header(gzip, 'content-encoding'), ['gzip']);
    assert.deepEqual(groupNames(parseAggregatedDiscovery(JSON.parse(gunzipSync(gzip.body).toString('utf8')))), ['big.example.com', 'batch']);
    const plain = reply(discoveryResponse({ document: 'group-discovery', accept: AGG_JSON }, local, batchPart(), DIGEST));
    assert.deepEqual(header(plain, 'content-encoding'), []);
    const small = reply(
      discoveryResponse({ document: 'group-discovery', accept: AGG_JSON, acceptEncoding: 'gzip' }, localAnswer(list([APPS]), 'json'), batchPart(), DIGEST),
    );
    assert.deepEqual(header(small, 'content-encoding'), [], 'under the threshold');
  });

  test('without an ETag from the apiserver, the local body digest stands for it', () => {
    const local = localAnswer(list([APPS]), 'json');
    local.headers = new Map([...local.headers].filter(([name]) => name !== 'etag'));
    const answer = reply(discoveryResponse({ document: 'group-discovery', accept: AGG_JSON }, local, batchPart(), DIGEST));
    assert.equal(header(answer, 'etag').length, 1);
    assert.notEqual(header(answer, 'etag')[0], mergedEtag(LOCAL_ETAG, DIGEST));
  });

  test('nopeer requests, and a sidecar without a peer part, let the local answer through', () => {
    const local = localAnswer(list([APPS]), 'json');
    assert.deepEqual(discoveryResponse({ document: 'group-discovery', accept: `${AGG_NOPEER},${AGG_JSON}` }, local, batchPart(), DIGEST), {
      passThrough: true,
      reason: 'nopeer',
    });
    assert.deepEqual(discoveryResponse({ document: 'group-discovery', accept: AGG_JSON }, local, undefined, DIGEST), {
      passThrough: true,
      reason: 'no-peer-part',
    });
  });

  test('a local answer the merge does not expect goes through: not aggregated, encoded, unreadable, or with entries the model drops', () => {
    const unexpected = { passThrough: true, reason: 'unexpected-local-answer' };
    const request = { document: 'group-discovery' as const, accept: AGG_JSON };
    const ok = localAnswer(list([APPS]), 'json');
    const withHeaders = (headers: Array<[string, string[]]>, body = ok.body): LocalAnswer => ({ headers: new Map(headers), body });
    assert.deepEqual(discoveryResponse(request, withHeaders([['content-type', ['application/json']]]), batchPart(), DIGEST), unexpected);
    assert.deepEqual(
      discoveryResponse(
        request,
        withHeaders([
          ['content-type', [AGG_JSON]],
          ['content-encoding', ['gzip']],
        ]),
        batchPart(),
        DIGEST,
      ),
      unexpected,
    );
    assert.deepEqual(discoveryResponse(request, withHeaders([['content-type', [AGG_JSON]]], Buffer.from('{not json')), batchPart(), DIGEST), unexpected);
    const typeless = Buffer.from(JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', items: [{ metadata: { name: 7 } }] }));
    assert.deepEqual(discoveryResponse(request, withHeaders([['content-type', [AGG_JSON]]], typeless), batchPart(), DIGEST), unexpected);
  });

  test('the OpenAPI index: the local paths plus the part, keys sorted, with the merged ETag', () => {
    const url = (key: string) => ({ serverRelativeURL: `/openapi/v3/${key}?hash=A` });
    const part: OpenApiPeerPart = { document: 'openapi-index', paths: { 'apis/batch/v1': url('apis/batch/v1') } };
    const local: LocalAnswer = {
      headers: new Map([
        ['content-type', ['application/json']],
        ['etag', [LOCAL_ETAG]],
      ]),
      body: Buffer.from(JSON.stringify({ paths: { 'apis/apps/v1': url('apis/apps/v1'), version: url('version') } })),
    };
    const answer = reply(discoveryResponse({ document: 'openapi-index' }, local, part, DIGEST));
    assert.deepEqual(Object.keys((JSON.parse(answer.body.toString()) as { paths: object }).paths), ['apis/apps/v1', 'apis/batch/v1', 'version']);
    assert.deepEqual(header(answer, 'etag'), [mergedEtag(LOCAL_ETAG, DIGEST)]);
  });
});
