// The subresource level of the merge: a local resource the peer part names
// gets the part's subresources it lacks, appended after its own (the field
// made when the local resource has none), in JSON and protobuf; a resource
// the local lacks comes whole. (Upstream found /apis through the sidecar
// lacking a csinodes subresource only the newer apiserver serves.)
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { APIGroupDiscoveryList, APISubresourceDiscovery } from '../../../src/model/discovery.js';
import type { AggregatedPeerPart } from '../../../src/discovery/peerPart.js';
import { decodeAggregatedProtobuf } from '../../../src/discovery/protobufDecode.js';
import { group, list, resource } from '../../support/discoveryFixtures.js';
import { AGG_JSON, AGG_PROTOBUF, REQUEST, documentHost, exchange, localBodies, mergedByRule, ok, withHeaders } from '../../support/documentFilterHarness.js';

const KIND = { group: 'storage.k8s.io', version: 'v1', kind: 'CSINode' };
const STATUS: APISubresourceDiscovery = { subresource: 'status', responseKind: KIND, verbs: ['get', 'patch'] };
const ATTACH: APISubresourceDiscovery = { subresource: 'attach', responseKind: KIND, verbs: ['create'] };

function storage(subresources: APISubresourceDiscovery[] | undefined, more: unknown[] = []): APIGroupDiscoveryList {
  const csinodes = resource('csinodes', 'CSINode', ['get', 'list'], { responseKind: KIND, scope: 'Cluster', ...(subresources ? { subresources } : {}) });
  return list([group('storage.k8s.io', [{ version: 'v1', resources: [csinodes, ...more] }])]);
}

/** What only the newer apiserver serves: csinodes/attach (a subresource), and volumeattributesclasses (a resource, whole). */
const PART: AggregatedPeerPart = {
  document: 'group-discovery',
  groups: storage(
    [ATTACH],
    [
      resource('volumeattributesclasses', 'VolumeAttributesClass', ['get'], {
        responseKind: { ...KIND, kind: 'VolumeAttributesClass' },
        subresources: [STATUS],
      }),
    ],
  ).items,
};
const PROTOBUF_REQUEST = withHeaders([], [...REQUEST.slice(0, 3), ['accept', AGG_PROTOBUF]]);

function mergedJson(local: APIGroupDiscoveryList): unknown {
  const body = localBodies(local).json;
  return JSON.parse(exchange(documentHost(PART), REQUEST, ok(body, AGG_JSON), body, 11).body.toString('utf8'));
}

function mergedProtobuf(local: APIGroupDiscoveryList): Buffer {
  const body = localBodies(local).protobuf;
  return exchange(documentHost(PART), PROTOBUF_REQUEST, ok(body, AGG_PROTOBUF), body, 11).body;
}

function subresourcesOf(merged: APIGroupDiscoveryList, name: string): string[] | undefined {
  const found = merged.items[0]?.versions[0]?.resources.find((r) => r.resource === name);
  return found?.subresources?.map((sub) => sub.subresource);
}

describe('aggregated JSON', () => {
  test('a local resource with subresources gets the peer subresource it lacks after its own', () => {
    const local = storage([STATUS]);
    const merged = mergedJson(local) as APIGroupDiscoveryList;
    assert.deepEqual(subresourcesOf(merged, 'csinodes'), ['status', 'attach']);
    assert.deepEqual(merged, JSON.parse(localBodies(mergedByRule(local, PART)).json.toString('utf8')));
  });

  test('a local resource without the field gets "subresources" made', () => {
    const local = storage(undefined);
    const merged = mergedJson(local) as APIGroupDiscoveryList;
    assert.deepEqual(subresourcesOf(merged, 'csinodes'), ['attach']);
    assert.deepEqual(merged, JSON.parse(localBodies(mergedByRule(local, PART)).json.toString('utf8')));
  });

  test('a subresource the local already lists is not added twice', () => {
    const local = storage([ATTACH, STATUS]);
    assert.deepEqual(subresourcesOf(mergedJson(local) as APIGroupDiscoveryList, 'csinodes'), ['attach', 'status']);
  });

  test('a resource the local lacks comes whole, with its subresources', () => {
    const merged = mergedJson(storage([STATUS])) as APIGroupDiscoveryList;
    assert.deepEqual(subresourcesOf(merged, 'volumeattributesclasses'), ['status']);
  });
});

describe('aggregated protobuf', () => {
  for (const [what, local] of [
    ['field present', storage([STATUS])],
    ['field absent', storage(undefined)],
    ['already listed', storage([ATTACH])],
  ] as const) {
    test(`the subresource is appended (${what}): decodes to the rule's list, bytes as Go writes them`, () => {
      const answer = mergedProtobuf(local);
      const expected = localBodies(mergedByRule(local, PART)).protobuf;
      assert.deepEqual(decodeAggregatedProtobuf(answer), decodeAggregatedProtobuf(expected));
      assert.deepEqual(answer, expected);
    });
  }
});
