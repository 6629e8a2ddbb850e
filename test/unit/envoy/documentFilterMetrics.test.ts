// The document filter's counters (proxy-wasm counter
// metrics; <name> in Envoy's /stats/prometheus): every
// request it sees counts once, as merged (200 sent), not modified (304 sent)
// or local (the local answer went through untouched).
// helpers: test/support/documentFilterHarness.ts (the filter in a proxy-wasm host shim).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { DOCUMENT_FILTER_ROOT_ID, IDENTITY_FILTER } from '../../../src/translator/names.js';
import { encodeDocumentSet } from '../../../src/xds/documentSet.js';
import {
  AGG_JSON,
  AGG_PROTOBUF,
  ETAG,
  REQUEST,
  addDiscoveryPlugin,
  answer,
  discoveryHost,
  exchange,
  groupSet,
  jsonVariant,
  ok,
  openapiVariant,
  withHeaders,
} from '../../support/documentFilterHarness.js';
import { filterModule, leaf, outcome, withCert } from '../../support/identityFilterHarness.js';
import { type HeaderList, ProxyWasmHost } from '../../support/proxyWasmHost.js';

const MERGED = 'mvproxy_document_answers_merged';
const NOT_MODIFIED = 'mvproxy_document_answers_not_modified';
const LOCAL = 'mvproxy_document_answers_local';
const LOCAL_NOT_MODIFIED = 'mvproxy_document_local_not_modified';

interface Counts {
  merged: bigint | undefined;
  notModified: bigint | undefined;
  local: bigint | undefined;
}

function counts(host: ProxyWasmHost): Counts {
  return { merged: host.metric(MERGED), notModified: host.metric(NOT_MODIFIED), local: host.metric(LOCAL) };
}

const NONE: Counts = { merged: 0n, notModified: 0n, local: 0n };

describe('one count per request, by outcome', () => {
  test('a 200 with the merged document counts once as merged', () => {
    const host = discoveryHost();
    assert.equal(answer(exchange(host).response)?.status, 200);
    assert.deepEqual(counts(host), { ...NONE, merged: 1n });
  });

  test('a 304 (If-None-Match matched) counts once as not modified', () => {
    const host = discoveryHost();
    assert.equal(answer(exchange(host, withHeaders([['if-none-match', ETAG]])).response)?.status, 304);
    assert.deepEqual(counts(host), { ...NONE, notModified: 1n });
  });

  test('a non-200 local answer counts once as local', () => {
    const host = discoveryHost();
    assert.equal(exchange(host, withHeaders([['if-none-match', ETAG]]), [[':status', '403']]).response.localResponse, undefined);
    assert.deepEqual(counts(host), { ...NONE, local: 1n });
  });

  test('profile=nopeer counts once as local (at the request; its response counts nothing more)', () => {
    const host = discoveryHost();
    const stream = host.openStream();
    host.sendRequestHeaders(stream, [...REQUEST, ['accept', `${AGG_JSON};profile=nopeer`]]);
    assert.deepEqual(counts(host), { ...NONE, local: 1n });
    assert.equal(host.sendResponseHeaders(stream, ok()).localResponse, undefined);
    host.closeStream(stream);
    assert.deepEqual(counts(host), { ...NONE, local: 1n });
  });

  test('no documents held (empty configuration) counts once as local', () => {
    const host = discoveryHost(new Uint8Array(0));
    assert.equal(exchange(host).response.localResponse, undefined);
    assert.deepEqual(counts(host), { ...NONE, local: 1n });
  });

  test('a content type that is not a held document counts once as local', () => {
    const host = discoveryHost();
    assert.equal(exchange(host, REQUEST, ok('application/json')).response.localResponse, undefined);
    assert.deepEqual(counts(host), { ...NONE, local: 1n });
  });

  test('a format the set does not hold counts once as local', () => {
    const host = discoveryHost(groupSet([jsonVariant()]));
    assert.equal(exchange(host, REQUEST, ok(AGG_PROTOBUF)).response.localResponse, undefined);
    assert.deepEqual(counts(host), { ...NONE, local: 1n });
  });

  test('a stream closed before its response counts nothing', () => {
    const host = discoveryHost();
    const stream = host.openStream();
    host.sendRequestHeaders(stream, REQUEST);
    host.closeStream(stream);
    assert.deepEqual(counts(host), NONE);
  });

  test('counts add up over many requests and across the plugins of one VM', () => {
    const host = discoveryHost();
    const openapi = addDiscoveryPlugin(host, 'openapi-index', [openapiVariant()]);
    const conditional = withHeaders([['if-none-match', ETAG]]);
    for (let i = 0; i < 10; i++) {
      exchange(host);
      exchange(host, conditional);
      exchange(host, REQUEST, [[':status', '500']]);
      exchange(host, [...REQUEST, ['accept', 'application/json']], ok('application/json'), openapi);
    }
    assert.deepEqual(counts(host), { merged: 20n, notModified: 10n, local: 10n });
  });
});

describe('the identity filter', () => {
  test('a VM with only the identity filter defines no counter', async () => {
    const host = ProxyWasmHost.load(filterModule(), { rootId: IDENTITY_FILTER });
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const stream = host.openStream();
    assert.equal(outcome(host.sendRequestHeaders(stream, withCert(cert.certPem))).kind, 'identity');
    host.sendResponseHeaders(stream, ok());
    host.closeStream(stream);
    assert.deepEqual(host.metricDefinitions, []);
    assert.equal(host.hostCalls.get('proxy_increment_metric'), undefined);
  });

  test('identity requests beside a discovery plugin count nothing, rejected ones included', async () => {
    const host = ProxyWasmHost.load(filterModule(), { rootId: IDENTITY_FILTER });
    const identity = host.pluginContextId;
    addDiscoveryPlugin(host, 'group-discovery', [jsonVariant()]);
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const requests: HeaderList[] = [withCert(cert.certPem), REQUEST, [...REQUEST, ['x-forwarded-client-cert', 'Hash=zz;Cert="bad"']]];
    for (const request of requests) {
      const stream = host.openStream(identity);
      host.sendRequestHeaders(stream, request);
      host.sendResponseHeaders(stream, ok());
      host.closeStream(stream);
    }
    assert.deepEqual(counts(host), NONE);
  });
});

describe('revalidation with the local ETag', () => {
  test("the local apiserver's 304 counts as the answer sent and as a local 304; its 200 only as the answer", () => {
    const host = discoveryHost(groupSet(undefined, '"LOCAL"'));
    exchange(host, REQUEST, [[':status', '304']]);
    exchange(host, withHeaders([['if-none-match', ETAG]]), [[':status', '304']]);
    exchange(host, REQUEST, ok());
    assert.deepEqual(counts(host), { merged: 2n, notModified: 1n, local: 0n });
    assert.equal(host.metric(LOCAL_NOT_MODIFIED), 2n);
  });
});

describe('definition', () => {
  test('the four counters are defined once per VM, whatever the plugins and reconfigurations', () => {
    const host = discoveryHost();
    addDiscoveryPlugin(host, 'openapi-index', [openapiVariant()]);
    host.configure(groupSet([jsonVariant()]));
    host.configure(new Uint8Array([1, 2, 3])); // refused
    assert.deepEqual(host.metricDefinitions, [
      { type: 0, name: MERGED },
      { type: 0, name: NOT_MODIFIED },
      { type: 0, name: LOCAL },
      { type: 0, name: LOCAL_NOT_MODIFIED },
    ]);
  });

  test('when definition fails the filter answers as ever and counts nothing', () => {
    const host = ProxyWasmHost.load(filterModule(), { rootId: DOCUMENT_FILTER_ROOT_ID, configuration: groupSet(), failDefineMetric: true });
    assert.equal(host.configured, true);
    assert.equal(answer(exchange(host).response)?.status, 200);
    assert.equal(answer(exchange(host, withHeaders([['if-none-match', ETAG]])).response)?.status, 304);
    assert.equal(exchange(host, REQUEST, [[':status', '401']]).response.localResponse, undefined);
    assert.equal(host.hostCalls.get('proxy_define_metric'), 4);
    assert.equal(host.hostCalls.get('proxy_increment_metric'), undefined);
    assert.deepEqual(counts(host), { merged: undefined, notModified: undefined, local: undefined });
    assert.deepEqual(host.warnings(), []);
  });

  test('a later configuration does not try again', () => {
    const host = ProxyWasmHost.load(filterModule(), { rootId: DOCUMENT_FILTER_ROOT_ID, configuration: groupSet(), failDefineMetric: true });
    host.failDefineMetric = false;
    host.configure(encodeDocumentSet('group-discovery', [jsonVariant()]));
    assert.equal(host.hostCalls.get('proxy_define_metric'), 4);
    assert.deepEqual(host.metricDefinitions, []);
  });
});

describe('cost', () => {
  test('counting allocates nothing: memory stops growing over many counted requests', () => {
    const host = discoveryHost();
    const conditional = withHeaders([['if-none-match', ETAG]]);
    const round = (): number => {
      for (let i = 0; i < 3000; i++) exchange(host, i % 3 === 0 ? conditional : REQUEST, i % 3 === 2 ? [[':status', '403']] : ok());
      return host.memoryBytes();
    };
    const sizes = [round(), round(), round(), round()];
    assert.equal(sizes[3], sizes[1], `memory grew: ${sizes.join(', ')}`);
    assert.deepEqual(counts(host), { merged: 4000n, notModified: 4000n, local: 4000n });
  });
});
