// The document filter's configuration: a peer part encoded by
// src/xds/documentSet.ts (version 4); what it refuses (Envoy then NACKs) and
// that a refused configuration keeps the part held before.
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';

import type { AggregatedPeerPart, OpenApiPeerPart } from '../../../src/discovery/peerPart.js';
import { DOCUMENT_FILTER_ROOT_ID } from '../../../src/translator/names.js';
import { APPS, BATCH, list } from '../../support/discoveryFixtures.js';
import {
  LOCAL_ETAG,
  REQUEST,
  documentHost,
  encodeSet as encodeDocumentSet,
  exchange,
  expectedEtag,
  header,
  localBodies,
  ok,
} from '../../support/documentFilterHarness.js';

const PART: AggregatedPeerPart = { document: 'group-discovery', groups: list([BATCH]).items };
const BODY = localBodies(list([APPS])).json;

/** A set with its sections replaced and the digest made right again (unless `keepDigest`). */
function withSections(sections: Buffer, keepDigest = false): Buffer {
  const set = encodeDocumentSet(PART);
  const digest = keepDigest ? set.subarray(6, 70) : Buffer.from(createHash('sha256').update(sections).digest('hex'), 'latin1');
  return Buffer.concat([set.subarray(0, 6), digest, sections]);
}

describe('accepted', () => {
  test('an encoded peer part, and an empty configuration (nothing held)', () => {
    assert.equal(documentHost(PART).configured, true);
    assert.equal(documentHost(new Uint8Array(0)).configured, true);
    assert.equal(documentHost({ document: 'openapi-index', paths: {} } satisfies OpenApiPeerPart).configured, true);
  });
});

describe('refused, with a warning naming the field and offset', () => {
  const set = encodeDocumentSet(PART);
  const cases: Array<[string, Buffer, RegExp]> = [
    ['bad magic', Buffer.concat([Buffer.from('XXXX'), set.subarray(4)]), /bad magic/],
    ['an older version', Buffer.concat([set.subarray(0, 4), Buffer.from([2]), set.subarray(5)]), /unsupported version 2/],
    [
      'version 3 (no legacy fragments): the control plane and the module ship together',
      Buffer.concat([set.subarray(0, 4), Buffer.from([3]), set.subarray(5)]),
      /unsupported version 3 \(this module reads version 4/,
    ],
    ['an unknown kind', Buffer.concat([set.subarray(0, 5), Buffer.from([7]), set.subarray(6)]), /unknown document kind 7/],
    ['a digest that is not the sections’', withSections(set.subarray(70, set.length - 1), true), /not the SHA-256/],
    ['a truncated header', set.subarray(0, 20), /truncated header/],
    ['a length past the end', withSections(Buffer.from([1, 0, 0, 0, 0xff, 0, 0, 0])), /runs past the end/],
    ['bytes after the part', withSections(Buffer.concat([set.subarray(70), Buffer.from([0])])), /after the peer part/],
  ];
  for (const [what, bytes, warning] of cases) {
    test(what, () => {
      const host = documentHost(bytes);
      assert.equal(host.configured, false);
      assert.match(host.warnings().join('\n'), warning);
    });
  }

  test('OpenAPI paths out of order', () => {
    const entry = (key: string): Buffer[] => {
      const k = Buffer.from(key);
      const v = Buffer.from('{}');
      const len = (b: Buffer): Buffer => Buffer.from(Uint32Array.of(b.length).buffer);
      return [len(k), k, len(v), v];
    };
    const sections = Buffer.concat([Buffer.from(Uint32Array.of(2).buffer), ...entry('b'), ...entry('a')]);
    const index = encodeDocumentSet({ document: 'openapi-index', paths: {} });
    const digest = Buffer.from(createHash('sha256').update(sections).digest('hex'), 'latin1');
    const host = documentHost(Buffer.concat([index.subarray(0, 6), digest, sections]));
    assert.equal(host.configured, false);
    assert.match(host.warnings().join('\n'), /ascending/);
  });

  test('a refused reconfiguration keeps the part held before', () => {
    const host = documentHost(PART);
    assert.equal(host.reconfigurePluginContext(host.pluginContextId, Buffer.from('MVPD')), false);
    const answer = exchange(host, REQUEST, ok(BODY), BODY);
    assert.equal(header(answer.headers, 'etag'), expectedEtag(LOCAL_ETAG, PART));
  });
});

describe('reconfiguring', () => {
  test('a new part applies to new streams; one in flight finishes with the part it started with', () => {
    const host = documentHost(PART);
    const stream = host.openStream();
    host.sendRequestHeaders(stream, REQUEST);
    const other: AggregatedPeerPart = { document: 'group-discovery', groups: [] };
    host.reconfigurePluginContext(host.pluginContextId, encodeDocumentSet(other));
    host.sendResponseHeaders(stream, ok(BODY));
    const inFlight = host.sendResponseBody(stream, BODY, true);
    host.closeStream(stream);
    assert.equal(header(inFlight.headers, 'etag'), expectedEtag(LOCAL_ETAG, PART));
    assert.equal(header(exchange(host, REQUEST, ok(BODY), BODY).headers, 'etag'), expectedEtag(LOCAL_ETAG, other));
  });

  test('a plugin per document kind in one VM: each merges its own part', () => {
    const host = documentHost(PART);
    const core: AggregatedPeerPart = { document: 'core-discovery', groups: [] };
    const root = host.addPluginContext(encodeDocumentSet(core), DOCUMENT_FILTER_ROOT_ID);
    const stream = host.openStream(root);
    host.sendRequestHeaders(stream, REQUEST);
    host.sendResponseHeaders(stream, ok(BODY));
    const answer = host.sendResponseBody(stream, BODY, true);
    host.closeStream(stream);
    assert.equal(header(answer.headers, 'etag'), expectedEtag(LOCAL_ETAG, core));
  });

  test('memory stays bounded over many merged requests and reconfigurations', () => {
    const host = documentHost(PART);
    const round = (): number => {
      for (let i = 0; i < 500; i++) {
        const body = localBodies(list([APPS])).json;
        exchange(host, REQUEST, ok(body, undefined, `"${i}"`), body, 64);
      }
      host.reconfigurePluginContext(host.pluginContextId, encodeDocumentSet(PART));
      return host.memoryBytes();
    };
    const sizes = [round(), round(), round(), round()];
    assert.equal(sizes[3], sizes[1], `memory grew: ${sizes.join(', ')}`);
  });
});
