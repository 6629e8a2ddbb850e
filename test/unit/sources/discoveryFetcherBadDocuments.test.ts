// DiscoveryFetcher: an apiserver that answers, but not a usable document (error status, unreadable or oversized body).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { HttpTransportError } from '../../../src/sources/apiserverHttp.js';
import { APIS_BODY, CORE_BODY, discoveryBody } from '../../support/discoveryBodies.js';
import { newFetcher, syncErrors } from '../../support/discoveryFetcherHarness.js';
import { FakeTime } from '../../support/fakeTime.js';
import { FakeTransport, apiserverResponder, type Responder } from '../../support/fakeTransport.js';
import { INFO, WARN, captureLogger } from '../../support/logCapture.js';

describe('DiscoveryFetcher', () => {
  test('an error status counts a status error per document and leaves the apiserver reachable: it answered', async () => {
    const transport = new FakeTransport(() => ({ status: 403, body: '{"kind":"Status","message":"forbidden: User cannot get path /apis"}' }));
    const { fetcher, metrics, updates } = newFetcher(transport, new FakeTime());
    await fetcher.start();
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'status'), 2, 'one for /api, one for /apis');
    assert.equal(updates[0]?.reachable, true);
    assert.equal(updates[0]?.discovery, undefined);
  });

  test('a 5xx after a good read keeps the last good discovery and the apiserver reachable', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    const lastGood = updates[0]?.discovery;
    transport.respond = () => ({ status: 503, body: 'try later' });
    await time.advance(3000);
    fetcher.stop();
    assert.equal(updates.length, 2, 'one update: the discovery is no longer current');
    assert.equal(updates[1]?.current, false);
    assert.equal(fetcher.current().reachable, true);
    assert.equal(fetcher.current().discovery, lastGood);
  });

  test('a body that is not an APIGroupDiscoveryList keeps the last good document and the apiserver reachable', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: APIS_BODY };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    docs.apis = '{"kind":"APIGroupList","apiVersion":"v1","groups":[]}';
    await time.advance(1000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    assert.equal(fetcher.current().reachable, true);
    assert.equal(fetcher.current().discovery?.groups.items[0]?.metadata.name, 'batch');
  });

  test('an unreadable body counts one parse error per distinct body, not one per poll', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: '<html>oops</html>' };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(5000);
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    docs.apis = '<html>oops again</html>';
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 2);
  });

  test('an unreadable body is warned about once, and its recovery logged once', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const docs = { core: CORE_BODY, apis: 'not json' };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    await time.advance(5000);
    docs.apis = APIS_BODY;
    await time.advance(3000);
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.['errorType'], 'parse');
    assert.equal(warnings[0]?.['path'], '/apis');
    assert.equal(lines.filter((l) => l.level === INFO && /readable again/.test(l.msg)).length, 1);
  });

  test('a body over the size limit keeps the last good document and leaves the apiserver reachable: it answered', async () => {
    const time = new FakeTime();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const transport = new FakeTransport(good);
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    const lastGood = updates[0]?.discovery;
    transport.respond = (p, headers) =>
      p === '/apis' ? new HttpTransportError('too_large', 'GET /apis: HTTP 200 with a response body larger than 33554432 bytes') : good(p, headers);
    await time.advance(3000);
    fetcher.stop();
    assert.equal(updates.length, 2, 'one update: the discovery is no longer current');
    assert.equal(updates[1]?.current, false);
    assert.equal(fetcher.current().reachable, true);
    assert.equal(fetcher.current().discovery, lastGood);
  });

  test('a body over the size limit counts one too_large sync error until the document reads well again, not one per poll', async () => {
    const time = new FakeTime();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const tooLarge: Responder = (p, headers) =>
      p === '/apis' ? new HttpTransportError('too_large', 'GET /apis: HTTP 200 with a response body larger than 33554432 bytes') : good(p, headers);
    const transport = new FakeTransport(tooLarge);
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(5000);
    assert.equal(await syncErrors(metrics, 'too_large'), 1);
    transport.respond = good;
    await time.advance(1000);
    transport.respond = tooLarge;
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'too_large'), 2, 'once more after it read well in between');
    assert.equal(await syncErrors(metrics, 'fetch'), 0);
  });

  test('a body over the size limit is warned about once, not at every poll', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const transport = new FakeTransport((p, headers) =>
      p === '/api' ? new HttpTransportError('too_large', 'GET /api: HTTP 200 with a response body larger than 33554432 bytes') : good(p, headers),
    );
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    await time.advance(5000);
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.['errorType'], 'too_large');
    assert.equal(warnings[0]?.['path'], '/api');
  });

  test('a /readyz body over the size limit keeps the last readiness and marks nothing else; counted and warned once until it reads well', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates, metrics } = newFetcher(transport, time, { logger });
    await fetcher.start();
    const first = updates[0];
    transport.respondReadyz = () => new HttpTransportError('too_large', 'GET /readyz: HTTP 200 with a response body larger than 33554432 bytes');
    await time.advance(5000);
    assert.equal(updates.length, 1, 'nothing changed for the model');
    assert.deepEqual([fetcher.current().reachable, fetcher.current().ready], [true, true]);
    assert.equal(fetcher.current().discovery, first?.discovery, 'the documents are untouched');
    assert.equal(await syncErrors(metrics, 'too_large'), 1);
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.equal(warnings.length, 1);
    assert.deepEqual([warnings[0]?.['path'], warnings[0]?.['errorType']], ['/readyz', 'too_large']);
    transport.respondReadyz = () => ({ status: 503, body: '' });
    await time.advance(1000);
    assert.equal(fetcher.current().ready, false, 'read well again: its answer counts');
    assert.equal(lines.filter((l) => l.level === INFO && /readyz readable again/.test(l.msg)).length, 1);
    transport.respondReadyz = () => new HttpTransportError('too_large', 'GET /readyz: HTTP 200 with a response body larger than 33554432 bytes');
    await time.advance(2000);
    fetcher.stop();
    assert.equal(fetcher.current().ready, false, 'the last answer is kept');
    assert.equal(await syncErrors(metrics, 'too_large'), 2, 'once more after it read well in between');
    assert.equal(await syncErrors(metrics, 'fetch'), 0);
  });

  test('before any good read, an unreadable document leaves the apiserver reachable without discovery', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: '[]' }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    fetcher.stop();
    assert.deepEqual(
      updates.map((u) => [u.reachable, u.discovery]),
      [[true, undefined]],
    );
  });

  test('a new /api is used while /apis is unreadable, with the last good /apis', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: APIS_BODY };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    docs.apis = 'garbage';
    docs.core = discoveryBody([{ name: '', resource: 'configmaps' }]);
    await time.advance(1000);
    fetcher.stop();
    assert.equal(updates.length, 2);
    assert.equal(updates[1]?.discovery?.core.items[0]?.versions[0]?.resources[0]?.resource, 'configmaps');
    assert.equal(updates[1]?.discovery?.groups, updates[0]?.discovery?.groups);
  });
});
