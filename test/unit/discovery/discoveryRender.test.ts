// renderAggregated: the merged document as Go writes it, in JSON and protobuf, with its ETag.
// Fixtures: test/support/discoveryFixtures.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { decodeAggregatedProtobuf, mergeDiscovery, renderAggregated } from '../../../src/discovery/index.js';
import { APPS, BATCH, NOW, group, list, resource, skewedPair } from '../../support/discoveryFixtures.js';

describe('renderAggregated', () => {
  test('JSON is written in Go field order with a trailing newline', () => {
    const doc = renderAggregated(list([APPS]), 'json');
    assert.equal(doc.contentType, 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    const text = doc.body.toString('utf8');
    assert.ok(text.endsWith('}\n'));
    assert.ok(
      text.startsWith(
        '{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"name":"apps"},"versions":[{"version":"v1","resources":[{"resource":"deployments","responseKind":{"group":"apps","version":"v1","kind":"Deployment"},"scope":"Namespaced","singularResource":"deployment","verbs":["get","list"],"shortNames":["deploy"],"subresources":',
      ),
      text,
    );
  });

  test('JSON keeps creationTimestamp null where the apiserver wrote it and omits the core group name', () => {
    const core = list([{ metadata: { creationTimestamp: null }, versions: [{ version: 'v1', resources: [resource('pods', 'Pod', ['get'])] }] }]);
    const text = renderAggregated(core, 'json').body.toString('utf8');
    assert.ok(text.includes('"items":[{"metadata":{"creationTimestamp":null},"versions":'), text);
  });

  test('JSON escapes HTML characters as Go does', () => {
    const odd = list([group('x.example.com', [{ version: 'v1', resources: [resource('things', 'A<B>&C', ['get'])] }])]);
    assert.ok(renderAggregated(odd, 'json').body.toString('utf8').includes('"kind":"A\\u003cB\\u003e\\u0026C"'));
  });

  test('ETag is a quoted hash that changes with content only', () => {
    const one = renderAggregated(list([APPS]), 'json');
    const same = renderAggregated(list([APPS]), 'json');
    const other = renderAggregated(list([APPS, BATCH]), 'json');
    assert.match(one.etag, /^"[0-9A-F]{128}"$/);
    assert.equal(same.etag, one.etag);
    assert.notEqual(other.etag, one.etag);
    assert.equal(renderAggregated(list([APPS]), 'protobuf').etag, one.etag, 'one ETag for both encodings, as upstream');
  });

  test('protobuf is the k8s magic and a runtime.Unknown that decodes to the JSON document', () => {
    const merged = mergeDiscovery('a', skewedPair(), NOW);
    const doc = renderAggregated(merged.groups, 'protobuf');
    assert.equal(doc.contentType, 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    assert.deepEqual([...doc.body.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00]);
    const decoded = decodeAggregatedProtobuf(doc.body);
    assert.deepEqual(
      JSON.parse(renderAggregated(decoded, 'json').body.toString('utf8')),
      JSON.parse(renderAggregated(merged.groups, 'json').body.toString('utf8')),
    );
  });

  test('protobuf writes empty scalar fields as Go does', () => {
    const body = renderAggregated(list([]), 'protobuf').body;
    // Unknown{typeMeta, raw=ListMeta{selfLink:"",resourceVersion:"",continue:""}, contentEncoding:"", contentType:""}
    const typeMeta = Buffer.concat([
      Buffer.from([0x0a, 22]),
      Buffer.from('apidiscovery.k8s.io/v2'),
      Buffer.from([0x12, 21]),
      Buffer.from('APIGroupDiscoveryList'),
    ]);
    const raw = Buffer.from([0x0a, 0x06, 0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00]);
    const expected = Buffer.concat([
      Buffer.from('k8s\0', 'latin1'),
      Buffer.from([0x0a, typeMeta.length]),
      typeMeta,
      Buffer.from([0x12, raw.length]),
      raw,
      Buffer.from([0x1a, 0x00, 0x22, 0x00]),
    ]);
    assert.equal(body.toString('hex'), expected.toString('hex'));
  });
});
