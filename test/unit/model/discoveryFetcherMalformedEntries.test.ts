// DiscoveryFetcher: malformed (and unroutable) entries in a discovery document are dropped alone.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { servedSetFromDiscovery } from '../../../src/model/servedSet.js';
import { APIS_BODY, CORE_BODY, discoveryBody, malformedApisBody } from '../../support/discoveryBodies.js';
import { newFetcher, syncErrors } from '../../support/discoveryFetcherHarness.js';
import { FakeTime } from '../../support/fakeTime.js';
import { FakeTransport, apiserverResponder } from '../../support/fakeTransport.js';
import { INFO, WARN, captureLogger } from '../../support/logCapture.js';

describe('DiscoveryFetcher', () => {
  test('a malformed entry drops only that entry: the discovery keeps the rest and lists the entry as dropped', async () => {
    const time = new FakeTime();
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: malformedApisBody() }));
    const { fetcher, updates } = newFetcher(transport, time);
    await fetcher.start();
    fetcher.stop();
    const discovery = updates[0]?.discovery;
    assert.ok(discovery);
    assert.equal(updates[0]?.reachable, true);
    assert.deepEqual(
      servedSetFromDiscovery(discovery).map((r) => `${r.group}/${r.resource}`),
      ['/pods', 'batch/jobs', 'widgets.example.com/widgets'],
    );
    assert.deepEqual(
      discovery.dropped?.map((d) => [d.document, d.group, d.version, d.resource, d.kind]),
      [
        ['/apis', 'widgets.example.com', 'v1', 'gadgets', 'malformed'],
        ['/apis', 'widgets.example.com', 'v1', '', 'malformed'],
      ],
    );
  });

  test('a malformed entry is warned about once per apiserver and entry: not at every poll, nor when the document changes around it', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const docs = { core: CORE_BODY, apis: malformedApisBody() };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    await time.advance(5000);
    docs.apis = malformedApisBody({ withApps: true });
    await time.advance(5000);
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.deepEqual(warnings.map((w) => [w['apiserver'], w['path'], w['entry']]).sort(), [
      ['a', '/apis', 'group "widgets.example.com" version "v1" resource ""'],
      ['a', '/apis', 'group "widgets.example.com" version "v1" resource "gadgets"'],
    ]);
    assert.match(String(warnings[0]?.['reason']), /Global|DNS-1123 label/);
  });

  test('a malformed entry that was fixed and comes back is warned about again', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const docs = { core: CORE_BODY, apis: malformedApisBody() };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    docs.apis = APIS_BODY;
    await time.advance(1000);
    docs.apis = malformedApisBody();
    await time.advance(1000);
    fetcher.stop();
    assert.equal(lines.filter((l) => l.level >= WARN).length, 4);
  });

  test('a document with malformed entries counts one parse sync error per document change, none per poll', async () => {
    const time = new FakeTime();
    const docs = { core: CORE_BODY, apis: malformedApisBody() };
    const transport = new FakeTransport(apiserverResponder(docs));
    const { fetcher, metrics } = newFetcher(transport, time);
    await fetcher.start();
    await time.advance(5000);
    assert.equal(await syncErrors(metrics, 'parse'), 1);
    docs.apis = malformedApisBody({ withApps: true });
    await time.advance(5000);
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 2);
  });

  test('a valid name too long to route is logged at info and not counted as a sync error', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const long = 'a'.repeat(60);
    const transport = new FakeTransport(
      apiserverResponder({
        core: CORE_BODY,
        apis: discoveryBody([
          { name: 'batch', resource: 'jobs' },
          { name: 'x.example.com', resource: long },
        ]),
      }),
    );
    const { fetcher, metrics } = newFetcher(transport, time, { logger });
    await fetcher.start();
    fetcher.stop();
    assert.equal(await syncErrors(metrics, 'parse'), 0);
    assert.equal(lines.filter((l) => l.level >= WARN).length, 0);
    assert.equal(lines.filter((l) => l.level === INFO && /not routable/.test(l.msg)).length, 1);
    assert.equal(fetcher.current().discovery?.dropped?.[0]?.kind, 'unroutable');
  });

  test('many new malformed entries are warned about one by one up to 20, the rest in one line', async () => {
    const time = new FakeTime();
    const { logger, lines } = captureLogger();
    const groups = [{ name: 'batch', resource: 'jobs' }, ...Array.from({ length: 30 }, (_, i) => ({ name: `g${i}.example.com`, resource: `Bad${i}` }))];
    const transport = new FakeTransport(apiserverResponder({ core: CORE_BODY, apis: discoveryBody(groups) }));
    const { fetcher } = newFetcher(transport, time, { logger });
    await fetcher.start();
    fetcher.stop();
    const warnings = lines.filter((l) => l.level >= WARN);
    assert.equal(warnings.length, 21);
    assert.equal(warnings.at(-1)?.['more'], 10);
  });
});
