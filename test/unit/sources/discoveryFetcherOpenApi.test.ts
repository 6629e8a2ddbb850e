// DiscoveryFetcher: the OpenAPI v3 index it reads with every poll.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { HttpTransportError } from '../../../src/sources/apiserverHttp.js';
import { APIS_BODY, CORE_BODY, OPENAPI_INDEX, malformedOpenApiIndex } from '../../support/discoveryBodies.js';
import { newFetcher, syncErrors } from '../../support/discoveryFetcherHarness.js';
import { FakeTime } from '../../support/fakeTime.js';
import { FakeTransport, apiserverResponder } from '../../support/fakeTransport.js';
import { WARN, captureLogger } from '../../support/logCapture.js';

describe('DiscoveryFetcher', () => {
  test('each poll reads the OpenAPI v3 index and carries it in the discovery', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(1000);
    fetcher.stop();
    assert.equal(transport.openApiCalls, 2);
    assert.deepEqual(updates[0]?.discovery?.openapi, OPENAPI_INDEX);
    assert.equal(updates.length, 1, 'an unchanged index emits nothing');
  });

  test('a changed OpenAPI v3 index is emitted in a new discovery object', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    const changed = { paths: { ...OPENAPI_INDEX.paths, 'apis/apps/v1': { serverRelativeURL: '/openapi/v3/apis/apps/v1?hash=C1' } } };
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(changed) });
    await time.advance(1000);
    fetcher.stop();
    assert.equal(updates.length, 2);
    assert.notEqual(updates[1]?.discovery, updates[0]?.discovery);
    assert.deepEqual(updates[1]?.discovery?.openapi, changed);
  });

  test('a failing OpenAPI v3 index read keeps the last good index, counts a sync error and leaves the apiserver reachable', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates, metrics } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondOpenApi = () => ({ status: 200, body: '{"swagger": "2.0"}' });
    await time.advance(1000);
    transport.respondOpenApi = () => new HttpTransportError('fetch', 'connection reset');
    await time.advance(1000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    assert.equal(await syncErrors(metrics, 'fetch'), 1);
    assert.equal(fetcher.current().reachable, true);
    assert.deepEqual(fetcher.current().discovery?.openapi, OPENAPI_INDEX);
    assert.equal(updates.length, 1);
  });

  test('an unreadable OpenAPI v3 index body counts one parse error per distinct body, not one per poll', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondOpenApi = () => ({ status: 200, body: '<html>oops</html>' });
    await time.advance(5000);
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    transport.respondOpenApi = () => ({ status: 200, body: '<html>oops again</html>' });
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 2);
  });

  test('a malformed OpenAPI v3 index entry drops only that entry: the rest of the index is used', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(malformedOpenApiIndex()) });
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    fetcher.stop();
    assert.equal(updates[0]?.reachable, true);
    assert.deepEqual(updates[0]?.discovery?.openapi, {
      paths: { ...OPENAPI_INDEX.paths, 'apis/Bad_Group/v1': { serverRelativeURL: '/openapi/v3/apis/Bad_Group/v1?hash=C1' } },
    });
  });

  test('malformed OpenAPI v3 index entries are warned about once per apiserver and entry, not at every poll', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(malformedOpenApiIndex()) });
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    await time.advance(3000);
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(malformedOpenApiIndex({ withApps: true })) });
    await time.advance(3000);
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.deepEqual(warnings.map((w) => [w['apiserver'], w['path'], w['entry']]).sort(), [
      ['a', '/openapi/v3', 'apis/Bad_Group/v1'],
      ['a', '/openapi/v3', 'apis/widgets.example.com/v1'],
    ]);
  });

  test('an OpenAPI v3 index with malformed entries counts one parse sync error per index change, none per poll', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(malformedOpenApiIndex()) });
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(5000);
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    transport.respondOpenApi = () => ({ status: 200, body: JSON.stringify(malformedOpenApiIndex({ withApps: true })) });
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 2);
  });

  test('an OpenAPI v3 index over the size limit keeps the last good index and counts one too_large sync error, not one per poll', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondOpenApi = () => new HttpTransportError('too_large', 'GET /openapi/v3: HTTP 200 with a response body larger than 33554432 bytes');
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'too_large'), 1);
    assert.equal(fetcher.current().reachable, true);
    assert.deepEqual(fetcher.current().discovery?.openapi, OPENAPI_INDEX);
  });
});
