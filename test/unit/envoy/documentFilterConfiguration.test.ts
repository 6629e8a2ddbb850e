// The document filter: its plugin configuration (the
// document set), reconfiguration, and several plugins in one VM.
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { IDENTITY_FILTER } from '../../../src/translator/names.js';
import { encodeDocumentSet } from '../../../src/xds/documentSet.js';
import { outcome, leaf, withCert } from '../../support/identityFilterHarness.js';
import {
  ETAG,
  JSON_BODY,
  OPENAPI_BODY,
  REQUEST,
  addDiscoveryPlugin,
  answer,
  discoveryHost,
  exchange,
  groupSet,
  jsonVariant,
  ok,
  openapiVariant,
  protobufVariant,
} from '../../support/documentFilterHarness.js';
import { ProxyWasmHost } from '../../support/proxyWasmHost.js';
import { filterModule } from '../../support/identityFilterHarness.js';

const GOOD = groupSet();

/** The good set with bytes [at, at + bytes.length) overwritten. */
function patched(at: number, bytes: number[]): Buffer {
  const out = Buffer.from(GOOD);
  Buffer.from(bytes).copy(out, at);
  return out;
}

describe('malformed configuration is refused (Envoy NACKs it), with a warning naming the field and offset', () => {
  const cases: Array<[string, Buffer, RegExp]> = [
    ['truncated header', GOOD.subarray(0, 13), /truncated header: 13 bytes, 14 needed.*offset 0/],
    ['bad magic', patched(0, [0x4d, 0x56, 0x50, 0x58]), /bad magic.*offset 0/],
    ['an older version', patched(4, [1]), /unsupported version 1.*offset 4/],
    ['unknown kind', patched(5, [3]), /unknown document kind 3.*offset 5/],
    ['a local ETag length past the end', patched(6, [0xff, 0xff, 0, 0]), /local ETag length 65535 runs past the end.*offset 6/],
    ['too many variants', patched(10, [7, 0, 0, 0]), /variant count 7.*offset 10/],
    ['truncated in a body', GOOD.subarray(0, GOOD.length - 1), /variant 1: body length \d+ runs past the end/],
    ['an ETag length past the end', patched(16, [0xff, 0xff, 0xff, 0xff]), /variant 0: ETag length 4294967295 runs past the end.*offset 16/],
    ['trailing bytes', Buffer.concat([GOOD, Buffer.from([0])]), /1 bytes after the last variant/],
    ['a format the kind does not take', patched(14, [2]), /variant 0: format 2 not valid for document kind 1.*offset 14/],
    ['unknown encoding', patched(15, [2]), /variant 0: unknown encoding 2.*offset 15/],
  ];
  for (const [name, bytes, warning] of cases) {
    test(name, () => {
      const host = discoveryHost(bytes);
      assert.equal(host.configured, false);
      const warnings = host.warnings();
      assert.equal(warnings.length, 1);
      assert.match(warnings[0] as string, /^mvproxy discovery filter: configuration refused: /);
      assert.match(warnings[0] as string, warning);
    });
  }

  test('a repeated format and encoding', () => {
    const one = encodeDocumentSet('core-discovery', [jsonVariant()]);
    const twice = Buffer.concat([one, one.subarray(14)]);
    twice.writeUInt32LE(2, 10);
    const host = discoveryHost(twice);
    assert.equal(host.configured, false);
    assert.match(host.warnings()[0] as string, /variant 1: format and encoding repeated/);
  });

  test('an ETag that is not a header value', () => {
    const bytes = encodeDocumentSet('core-discovery', [jsonVariant({ etag: '"AB"' })]);
    bytes[21] = 0x0a; // inside the ETag
    const host = discoveryHost(bytes);
    assert.equal(host.configured, false);
    assert.match(host.warnings()[0] as string, /variant 0: ETag is empty or not a header value/);
  });

  test('a local ETag that is not a header value', () => {
    const bytes = encodeDocumentSet('core-discovery', [jsonVariant()], '"LOCAL"');
    bytes[12] = 0x0d; // inside the local ETag
    const host = discoveryHost(bytes);
    assert.equal(host.configured, false);
    assert.match(host.warnings()[0] as string, /the local ETag is not a header value.*offset 10/);
  });

  test('streams of a plugin whose configuration was refused pass untouched (never get the identity filter)', () => {
    const host = discoveryHost(Buffer.from('nonsense'));
    const request = [...REQUEST, ['x-remote-user', 'someone'], ['if-none-match', ETAG]] as typeof REQUEST;
    const { request: req, response } = exchange(host, request);
    assert.deepEqual(req.headers, request);
    assert.equal(response.localResponse, undefined);
  });

  test('a later good configuration of the same plugin works', () => {
    const host = discoveryHost(GOOD.subarray(0, 20));
    assert.equal(host.configured, false);
    assert.equal(host.reconfigurePluginContext(host.pluginContextId, GOOD), true);
    assert.deepEqual(answer(exchange(host).response)?.body, JSON_BODY);
  });

  test('a refused reconfiguration keeps the documents held', () => {
    const host = discoveryHost();
    assert.equal(host.reconfigurePluginContext(host.pluginContextId, Buffer.from('nonsense')), false);
    assert.deepEqual(answer(exchange(host).response)?.body, JSON_BODY);
  });

  test('a configuration with no variants holds no documents', () => {
    const host = discoveryHost(encodeDocumentSet('group-discovery', []));
    assert.equal(host.configured, true);
    const { request, response } = exchange(host, [...REQUEST, ['if-none-match', ETAG]]);
    assert.deepEqual(request.headers, [...REQUEST, ['if-none-match', ETAG]]);
    assert.equal(response.localResponse, undefined);
  });
});

describe('reconfiguration', () => {
  const NEW_BODY = Buffer.from('{"new":true}\n');
  const NEW_SET = groupSet([jsonVariant({ etag: '"NEW"', body: NEW_BODY })]);

  test('proxy_on_configure again replaces the documents', () => {
    const host = discoveryHost();
    assert.equal(host.reconfigurePluginContext(host.pluginContextId, NEW_SET), true);
    assert.deepEqual(answer(exchange(host).response), {
      status: 200,
      headers: [
        ['content-type', jsonVariant().contentType],
        ['etag', '"NEW"'],
        ['vary', 'Accept'],
        ['cache-control', 'public'],
      ],
      body: NEW_BODY,
    });
  });

  test('an empty configuration drops the documents: the local apiserver answers again', () => {
    const host = discoveryHost();
    assert.equal(host.reconfigurePluginContext(host.pluginContextId, new Uint8Array(0)), true);
    assert.equal(exchange(host).response.localResponse, undefined);
  });

  test('a stream in flight keeps the documents it started with, across a reconfigure', () => {
    const host = discoveryHost();
    const stream = host.openStream();
    host.sendRequestHeaders(stream, [...REQUEST, ['if-none-match', '"NEW"']]);
    host.reconfigurePluginContext(host.pluginContextId, NEW_SET);
    // Churn the allocator so freed documents would be overwritten.
    for (let i = 0; i < 3; i++) host.reconfigurePluginContext(host.pluginContextId, groupSet([jsonVariant({ body: Buffer.alloc(JSON_BODY.length, 0x41) })]));
    assert.deepEqual(answer(host.sendResponseHeaders(stream, ok())), {
      status: 200,
      headers: answer(exchange(discoveryHost()).response)?.headers,
      body: JSON_BODY,
    });
    host.closeStream(stream);
  });

  test('a stream in flight keeps the documents when its plugin context is replaced (an Envoy update)', () => {
    const host = discoveryHost();
    const oldRoot = host.pluginContextId;
    const stream = host.openStream(oldRoot);
    host.sendRequestHeaders(stream, REQUEST);
    host.configure(NEW_SET);
    assert.notEqual(host.pluginContextId, oldRoot);
    assert.deepEqual(answer(host.sendResponseHeaders(stream, ok()))?.body, JSON_BODY);
    host.closeStream(stream);
    assert.deepEqual(answer(exchange(host).response)?.body, NEW_BODY);
  });

  test('memory stays bounded over many reconfigurations with large documents', () => {
    const host = discoveryHost();
    const sizes: number[] = [];
    for (let i = 0; i < 30; i++) {
      const body = Buffer.alloc(2 * 1024 * 1024, i);
      host.reconfigurePluginContext(host.pluginContextId, groupSet([jsonVariant({ body }), protobufVariant({ body })]));
      assert.equal(answer(exchange(host).response)?.body[0], i);
      sizes.push(host.memoryBytes());
    }
    assert.equal(sizes[29], sizes[9], `memory grew: ${sizes.join(', ')}`);
  });
});

describe('several plugins in one VM', () => {
  test('two discovery plugins of different kinds and an identity plugin each do their own work', async () => {
    const host = ProxyWasmHost.load(filterModule(), { rootId: IDENTITY_FILTER });
    const identityRoot = host.pluginContextId;
    const groups = addDiscoveryPlugin(host, 'group-discovery', [jsonVariant()]);
    const openapi = addDiscoveryPlugin(host, 'openapi-index', [openapiVariant()]);
    assert.equal(host.configured, true);

    assert.deepEqual(answer(exchange(host, REQUEST, ok(), groups).response)?.body, JSON_BODY);
    assert.deepEqual(answer(exchange(host, [...REQUEST, ['accept', 'application/json']], ok('application/json'), openapi).response)?.body, OPENAPI_BODY);
    // The group plugin does not answer the OpenAPI index's content type.
    assert.equal(exchange(host, REQUEST, ok('application/json'), groups).response.localResponse, undefined);

    const cert = await leaf({ name: [{ O: ['g'] }, { CN: ['alice'] }] });
    const identityStream = host.openStream(identityRoot);
    assert.deepEqual(outcome(host.sendRequestHeaders(identityStream, withCert(cert.certPem))), { kind: 'identity', user: 'alice', groups: ['g'] });
    // The identity filter leaves the response alone, even a discovery 200.
    assert.equal(host.sendResponseHeaders(identityStream, ok()).action, 'continue');
    host.closeStream(identityStream);

    // A discovery stream's request is not treated as an identity request: its client headers stay.
    const { request } = exchange(host, [...REQUEST, ['x-remote-user', 'forged']], ok(), groups);
    assert.deepEqual(request.headers, [...REQUEST, ['x-remote-user', 'forged']]);
  });

  test('deleting one discovery plugin leaves the other its documents', () => {
    const host = discoveryHost(encodeDocumentSet('core-discovery', [jsonVariant({ body: Buffer.from('core') })]));
    const core = host.pluginContextId;
    const groups = addDiscoveryPlugin(host, 'group-discovery', [jsonVariant()]);
    host.deletePluginContext(core);
    assert.deepEqual(answer(exchange(host, REQUEST, ok(), groups).response)?.body, JSON_BODY);
    assert.deepEqual(host.warnings(), []);
  });
});
