// DiscoveryFetcher: polling with ETags, readiness (/readyz), unreachable apiservers, refreshNow and stop.
// Bad documents, malformed entries and the OpenAPI v3 index: the other discoveryFetcher*.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { HttpTransportError } from '../../../src/sources/apiserverHttp.js';
import { TIMEOUTS_BEFORE_UNREACHABLE } from '../../../src/sources/discoveryFetcher.js';
import { AGGREGATED_DISCOVERY_ACCEPT } from '../../../src/model/discovery.js';
import { APIS_BODY, CORE_BODY, discoveryBody } from '../../support/discoveryBodies.js';
import { newFetcher, syncErrors } from '../../support/discoveryFetcherHarness.js';
import { FakeTime } from '../../support/fakeTime.js';
import { FakeTransport, apiserverResponder } from '../../support/fakeTransport.js';
import { INFO, WARN, captureLogger } from '../../support/logCapture.js';

describe('DiscoveryFetcher', () => {
  test('first poll sends the aggregated discovery Accept and no If-None-Match', async () => {
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, new FakeTime());
    await fetcher.start();
    fetcher.stop();
    assert.deepEqual(transport.calls.map((c) => c.path).sort(), ['/api', '/apis']);
    for (const call of transport.calls) {
      assert.equal(call.headers['Accept'], AGGREGATED_DISCOVERY_ACCEPT);
      assert.equal('If-None-Match' in call.headers, false);
    }
  });

  test('the next poll sends the last ETag of each document as If-None-Match', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    const firstEtags = new Map(transport.responses.map((r) => [r.path, r.etag]));
    await time.advance(1000);
    fetcher.stop();
    const second = transport.calls.slice(2);
    assert.equal(second.length, 2);
    for (const call of second) assert.equal(call.headers['If-None-Match'], firstEtags.get(call.path));
  });

  test('a 304 keeps the discovery and emits no update', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(3000);
    fetcher.stop();
    assert.equal(transport.calls.length, 8, 'four polls');
    assert.equal(updates.length, 1, 'only the first poll changed anything');
    assert.equal(fetcher.current().reachable, true);
    assert.equal(fetcher.current().discovery?.groups.items[0]?.metadata.name, 'batch');
  });

  test('a changed document is emitted with its new ETag', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: APIS_BODY };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    docs.apis = discoveryBody([{ name: 'apps', resource: 'deployments' }]);
    await time.advance(1000);
    fetcher.stop();
    assert.equal(updates.length, 2);
    assert.equal(updates[1]?.discovery?.groups.items[0]?.metadata.name, 'apps');
    assert.notEqual(updates[1]?.etag, updates[0]?.etag);
  });

  test("the discovery carries each document's ETag as the apiserver sent it, for its sidecar to revalidate with", async () => {
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, new FakeTime());
    await fetcher.start();
    fetcher.stop();
    const sent = new Map(transport.responses.map((r) => [r.path, r.etag]));
    assert.deepEqual(fetcher.current().discovery?.etags, { core: sent.get('/api'), groups: sent.get('/apis') });
  });

  test("an ETag not fit to send back, or none, is not carried (the body hash that stands for it is ours, not the apiserver's)", async () => {
    const transport = new FakeTransport((p) => ({ status: 200, ...(p === '/api' ? { etag: '"a b"' } : {}), body: p === '/api' ? CORE_BODY : APIS_BODY }));
    const { fetcher } = newFetcher(transport, new FakeTime());
    await fetcher.start();
    fetcher.stop();
    assert.equal(fetcher.current().discovery?.groups.items[0]?.metadata.name, 'batch');
    assert.equal(fetcher.current().discovery?.etags, undefined);
  });

  test('a 200 with an unchanged ETag emits no update', async () => {
    const time = new FakeTime();
    // A server that ignores If-None-Match but keeps its ETag.
    const transport = new FakeTransport((p) => ({ status: 200, etag: `"${p}"`, body: p === '/api' ? CORE_BODY : APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(2000);
    fetcher.stop();
    assert.equal(updates.length, 1);
  });

  test('a failed poll keeps the last good discovery and marks the apiserver unreachable', async () => {
    const time = new FakeTime();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const transport = new FakeTransport(good);
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    const lastGood = updates[0];
    transport.respond = () => new HttpTransportError('fetch', 'connect ECONNREFUSED');
    await time.advance(1000);
    fetcher.stop();
    assert.equal(updates.length, 2);
    assert.equal(updates[1]?.reachable, false);
    assert.equal(updates[1]?.discovery, lastGood?.discovery);
    assert.equal(updates[1]?.etag, lastGood?.etag);
  });

  test('/version is read with the first poll and again only when something else changed; the update carries its gitVersion', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: APIS_BODY };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    assert.equal(fetcher.current().version, 'v1.37.2');
    await time.advance(3000);
    assert.equal(transport.versionCalls, 1, 'unchanged polls do not read it');
    transport.respondVersion = () => ({ status: 200, body: JSON.stringify({ gitVersion: 'v1.38.0' }) });
    docs.apis = discoveryBody([{ name: 'apps', resource: 'deployments' }]);
    await time.advance(1000);
    fetcher.stop();
    assert.equal(transport.versionCalls, 2);
    assert.equal(fetcher.current().version, 'v1.38.0');
  });

  test('a /version that cannot be read leaves the version unknown and changes nothing else', async () => {
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    transport.respondVersion = () => ({ status: 403, body: 'forbidden' });
    const { fetcher } = newFetcher(transport, new FakeTime());
    await fetcher.start();
    fetcher.stop();
    assert.equal(fetcher.current().version, undefined);
    assert.equal(fetcher.current().reachable, true);
  });

  test('each poll reads /readyz: a failing one is emitted as not ready, its recovery as ready', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondReadyz = () => ({ status: 500, body: '[-]shutdown failed: reason withheld' });
    await time.advance(1000);
    await time.advance(1000);
    transport.respondReadyz = () => ({ status: 200, body: 'ok' });
    await time.advance(1000);
    fetcher.stop();
    assert.deepEqual(
      updates.map((u) => [u.reachable, u.ready]),
      [
        [true, true],
        [true, false],
        [true, true],
      ],
    );
  });

  test('while /readyz fails, polls come four times as often, so readiness is seen within a quarter interval', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondReadyz = () => ({ status: 503, body: '' });
    await time.advance(1000);
    const before = transport.calls.length;
    await time.advance(1000);
    fetcher.stop();
    assert.equal((transport.calls.length - before) / 2, 4, 'polls (each reads /api and /apis) in one interval');
  });

  test('a /readyz that cannot be read keeps the last answer and does not make the apiserver unreachable', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    transport.respondReadyz = () => new HttpTransportError('timeout', 'no complete response within 2000 ms');
    await time.advance(1000);
    fetcher.stop();
    assert.equal(updates.length, 1);
    assert.deepEqual([fetcher.current().reachable, fetcher.current().ready], [true, true]);
  });

  test('repeated failures log one warning and the recovery logs once', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const transport = new FakeTransport(good);
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    transport.respond = () => new HttpTransportError('timeout', 'no complete response within 2000 ms');
    await time.advance(5000);
    transport.respond = good;
    await time.advance(3000);
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.['errorType'], 'timeout');
    assert.equal(warnings[0]?.['apiserver'], 'a');
    assert.equal(lines.filter((l) => l.level === INFO && /recovered/.test(l.msg)).length, 1);
  });

  test('a reachable apiserver whose polls time out stays reachable until three polls in a row have timed out', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    transport.respond = () => new HttpTransportError('timeout', 'no complete response within 2000 ms');
    const reachableAfterEachPoll: boolean[] = [];
    for (let poll = 0; poll < TIMEOUTS_BEFORE_UNREACHABLE; poll++) {
      await time.advance(1000);
      reachableAfterEachPoll.push(fetcher.current().reachable);
    }
    fetcher.stop();
    assert.deepEqual(reachableAfterEachPoll, [true, true, false]);
  });

  test('an answered poll between timeouts starts their count again', async () => {
    const time = new FakeTime();
    const good = apiserverResponder({ core: CORE_BODY, apis: APIS_BODY });
    const transport = new FakeTransport(good);
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    const timeout = () => new HttpTransportError('timeout', 'no complete response within 2000 ms');
    for (const respond of [timeout, timeout, good, timeout, timeout]) {
      transport.respond = respond;
      await time.advance(1000);
    }
    fetcher.stop();
    assert.equal(fetcher.current().reachable, true);
  });

  test('a refused connection makes a reachable apiserver unreachable at the first failed poll', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    transport.respond = () => new HttpTransportError('fetch', 'connect ECONNREFUSED 127.0.0.1:6443');
    await time.advance(1000);
    fetcher.stop();
    assert.equal(fetcher.current().reachable, false);
  });

  test('every failed poll counts apiserver_peer_discovery_sync_errors_total by type', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(() => new HttpTransportError('timeout', 'slow'));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(2000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'timeout'), 3);
  });

  test('refreshNow polls at once instead of waiting for the interval', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    await fetcher.refreshNow();
    fetcher.stop();
    assert.equal(transport.calls.length, 4);
    assert.equal(time.now, new FakeTime().now, 'no time passed');
  });

  test('stop closes the transport and leaves no timer behind', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: APIS_BODY }));
    const { fetcher } = newFetcher(transport, time);
    await fetcher.start();
    fetcher.stop();
    await time.advance(5000);
    assert.equal(transport.closed, true);
    assert.equal(transport.calls.length, 2);
    assert.equal(time.pendingTimers(), 0);
  });
});
