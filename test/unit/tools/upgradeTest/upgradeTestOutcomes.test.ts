// The upgrade test's judgement: which answers are spurious 404s, incomplete
// discovery, 5xx with or without Retry-After, and which watch events were
// missed or duplicated.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ledger } from '../../../../src/tools/upgradeTest/ledger.js';
import { categorize, judgeMode, judgeWatch, missingGroups, notReadBack, perSecond, type ModeObservations } from '../../../../src/tools/upgradeTest/outcomes.js';
import type { RequestRecord, WatchEventRecord } from '../../../../src/tools/upgradeTest/observations.js';
import { answerBreaches } from '../../../../src/tools/upgradeTest/summary.js';
import { Timeline } from '../../../../src/tools/upgradeTest/timeline.js';
import { emptyObservations, NEW_SERVED, OLD_SERVED, upgradeTimeline } from '../../../support/upgradeTimeline.js';

// kas-a and kas-b observed as 1.36 from 0; kas-a out at 100, observed as 1.37 at 180, back in service at 200.
const timeline = upgradeTimeline;
const ledger = (): Ledger => {
  const l = new Ledger();
  l.record({ resource: 'configmaps', name: 'cm', verb: 'create', t0: 0, t1: 10, outcome: 'ack', gen: 1, rv: '5' });
  l.record({ resource: 'configmaps', name: 'cm', verb: 'update', t0: 300, t1: 310, outcome: 'ack', gen: 2, rv: '9' });
  l.record({ resource: 'configmaps', name: 'cm', verb: 'delete', t0: 400, t1: 410, outcome: 'ack' });
  return l;
};
const req = (r: Partial<RequestRecord>): RequestRecord => ({
  t0: 250,
  t1: 260,
  entry: 'kas-b',
  client: 'token',
  verb: 'list',
  resource: 'configmaps',
  status: 200,
  retryAfter: false,
  ...r,
});

const observations = (): ModeObservations => emptyObservations();

describe('upgrade test outcomes', () => {
  it('a 404 for a resource an in-service apiserver served throughout is spurious', () => {
    assert.equal(categorize(req({ resource: 'storageversionmigrations', status: 404 }), timeline(), ledger()), 'spurious 404');
  });

  it('a 404 for a resource nobody in service served, or not for the whole request, is expected', () => {
    assert.equal(categorize(req({ resource: 'storageversionmigrations', status: 404, t0: 50, t1: 60 }), timeline(), ledger()), 'expected 4xx');
    assert.equal(categorize(req({ resource: 'storageversionmigrations', status: 404, t0: 190, t1: 210 }), timeline(), ledger()), 'expected 4xx');
  });

  it('a 404 for one object is spurious only while the ledger knows the object exists', () => {
    assert.equal(categorize(req({ verb: 'get', name: 'cm', status: 404 }), timeline(), ledger()), 'spurious 404');
    assert.equal(categorize(req({ verb: 'get', name: 'cm', status: 404, t0: 405, t1: 415 }), timeline(), ledger()), 'expected 4xx');
    assert.equal(categorize(req({ verb: 'get', name: 'other', status: 404 }), timeline(), ledger()), 'expected 4xx');
  });

  it('a 5xx while an apiserver in service was observed serving the resource is "5xx while served", whatever its Retry-After', () => {
    assert.equal(categorize(req({ status: 503, retryAfter: true }), timeline(), ledger()), '5xx while served');
    assert.equal(categorize(req({ status: 503 }), timeline(), ledger()), '5xx while served');
    assert.equal(categorize(req({ resource: 'storageversionmigrations', status: 503, retryAfter: true }), timeline(), ledger()), '5xx while served');
    assert.equal(categorize(req({ resource: '/apis', verb: 'discovery', status: 500 }), timeline(), ledger()), '5xx while served');
  });

  it('a 5xx while no apiserver in service was observed serving the resource is told apart by Retry-After; a failed connection is a transport error', () => {
    const early = { resource: 'storageversionmigrations' as const, t0: 50, t1: 60 };
    assert.equal(categorize(req({ ...early, status: 503, retryAfter: true }), timeline(), ledger()), '5xx with Retry-After');
    assert.equal(categorize(req({ ...early, status: 503 }), timeline(), ledger()), '5xx without Retry-After');
    assert.equal(categorize(req({ status: 0 }), timeline(), ledger()), 'transport error');
  });

  it('what an apiserver serves is what its discovery was observed listing, not what its version suggests', () => {
    // kas-a back in service at 1.37 but its discovery not yet read as listing storageversionmigrations.
    const t = new Timeline();
    t.enter('kas-a', 0);
    t.observe('kas-a', 0, OLD_SERVED);
    const r = req({ resource: 'storageversionmigrations', status: 404, t0: 10, t1: 20 });
    assert.equal(categorize(r, t, ledger()), 'expected 4xx');
    t.observe('kas-a', 5, NEW_SERVED);
    assert.equal(categorize(r, t, ledger()), 'spurious 404', 'read serving it at 5, before the request');
    t.observe('kas-a', 15, OLD_SERVED);
    assert.equal(categorize(r, t, ledger()), 'expected 4xx', 'read not serving it during the request');
  });

  it('an apiserver observed serving the resource but not in service does not make a 404 spurious nor a 5xx forbidden', () => {
    const t = new Timeline();
    t.enter('kas-a', 0);
    t.observe('kas-a', 0, NEW_SERVED);
    t.leave('kas-a', 5);
    assert.equal(categorize(req({ resource: 'storageversionmigrations', status: 404, t0: 10, t1: 20 }), t, ledger()), 'expected 4xx');
    assert.equal(categorize(req({ resource: 'storageversionmigrations', status: 503, t0: 10, t1: 20 }), t, ledger()), '5xx without Retry-After');
  });

  it('an /apis answer missing a group served throughout by an apiserver in service is incomplete', () => {
    const groups = ['apps', 'batch', 'upgradetest.mvproxy.dev'];
    const r = req({ verb: 'discovery', resource: '/apis', groups });
    assert.deepEqual(missingGroups(r, timeline()), ['storagemigration.k8s.io']);
    assert.equal(categorize(r, timeline(), ledger()), 'incomplete discovery');
    assert.equal(categorize(req({ verb: 'discovery', resource: '/apis', groups, t0: 150, t1: 210 }), timeline(), ledger()), 'ok');
  });

  it('every acknowledged write after the watch began arrives once: missed and duplicated are counted apart', () => {
    const events: WatchEventRecord[] = [
      { resource: 'configmaps', type: 'ADDED', name: 'cm', rv: '5', t: 11 },
      { resource: 'configmaps', type: 'ADDED', name: 'cm', rv: '5', t: 12 },
      { resource: 'configmaps', type: 'DELETED', name: 'cm', rv: '12', t: 411 },
    ];
    const judged = judgeWatch(ledger(), events, { configmaps: 0 });
    assert.deepEqual(judged.missed, [{ resource: 'configmaps', name: 'cm', type: 'MODIFIED', rv: '9' }]);
    assert.deepEqual(judged.duplicated, [{ resource: 'configmaps', name: 'cm', type: 'ADDED', rv: '5' }]);
    assert.equal(judgeWatch(ledger(), events, { configmaps: 350 }).missed.length, 0, 'writes begun before the watch started are not expected');
  });

  it('an acknowledged write whose answer carried no resourceVersion is counted, not skipped', () => {
    const l = ledger();
    l.record({ resource: 'configmaps', name: 'norv', verb: 'create', t0: 20, t1: 30, outcome: 'ack', gen: 3 });
    const judged = judgeWatch(l, [], { configmaps: 0 });
    assert.deepEqual(
      judged.unverifiable.map((w) => w.name),
      ['norv'],
    );
    const o = judgeMode({ ...observations(), requests: [] }, timeline(), l);
    assert.equal(o.acknowledged_without_resource_version, 1);
  });

  it('an acknowledged write is read back only by a check of its resource begun after it', () => {
    const l = ledger();
    l.record({ resource: 'storageversionmigrations', name: 'svm', verb: 'create', t0: 250, t1: 260, outcome: 'ack', gen: 4, rv: '11' });
    const check = (at: number, resources: Array<'configmaps' | 'storageversionmigrations'>) => ({ label: 'c', at, resources, readFrom: {}, lost: [] });
    assert.deepEqual(
      notReadBack(l.all(), [check(1000, ['configmaps'])]).map((w) => w.name),
      ['svm'],
    );
    assert.deepEqual(
      notReadBack(l.all(), [check(1000, ['configmaps']), check(240, ['storageversionmigrations'])]).map((w) => w.name),
      ['svm'],
    );
    assert.deepEqual(notReadBack(l.all(), [check(1000, ['configmaps', 'storageversionmigrations'])]), []);
  });

  it('broken watches are counted', () => {
    const o = judgeMode(
      { ...observations(), brokenWatches: [{ t0: 1, t: 50, entry: 'kas-a', resource: 'configmaps', error: 'stream closed before its end' }] },
      timeline(),
      ledger(),
    );
    assert.equal(o.watches_broken, 1);
  });

  it('the mode outcome carries the issue keys', () => {
    const requests = [req({}), req({ resource: 'storageversionmigrations', status: 404 }), req({ status: 503 }), req({ status: 503, retryAfter: true })];
    const o = judgeMode({ ...observations(), requests }, timeline(), ledger());
    assert.deepEqual(
      [o.spurious_404, o.lost_writes, o.missed_watch_events, o.errors_5xx, o.errors_5xx_without_retry_after, o.incomplete_discovery, o.requests],
      [1, 0, 0, 2, 1, 0, 4],
    );
    assert.equal(o.errors_5xx_while_served, 2);
    assert.deepEqual(o.spurious_404_by_resource, { storageversionmigrations: 1 });
  });

  it('every answer is counted by class and code: 2xx together, 304, each 4xx code, each 5xx with and without Retry-After, transport errors', () => {
    const requests = [
      req({ status: 200 }),
      req({ status: 201 }),
      req({ status: 304 }),
      req({ status: 401 }),
      req({ status: 409 }),
      req({ status: 409 }),
      req({ status: 429, retryAfter: true }),
      req({ status: 503, retryAfter: true }),
      req({ status: 503 }),
      req({ status: 0 }),
    ];
    assert.deepEqual(judgeMode({ ...emptyObservations(), requests }, timeline(), ledger()).answers, {
      '2xx': 2,
      '304': 1,
      '401': 1,
      '409': 2,
      '429': 1,
      '503 with Retry-After': 1,
      '503 without Retry-After': 1,
      'transport error': 1,
    });
  });

  it('every 4xx but 404 and 429 breaks its bound at the first; 429 only past its share of the requests', () => {
    const answers = { '2xx': 9000, '404': 40, '409': 1, '429': 46, '503 with Retry-After': 3 };
    assert.deepEqual(answerBreaches({ answers, requests: 10_000 }), [
      "409: 1 (none allowed: the load's requests are well-formed, authorized and never conflict)",
    ]);
    assert.deepEqual(answerBreaches({ answers: { '429': 51 }, requests: 10_000 }), ['429: 51 of 10000 requests (at most 0.5 %, 50)']);
  });

  it('per second counts requests by the second they ended in', () => {
    const counts = perSecond([req({ t1: 1500 }), req({ t1: 1600 }), req({ t1: 2500, status: 0 })], timeline(), ledger());
    assert.deepEqual(
      counts.sort((a, b) => a.second - b.second),
      [
        { second: 1, category: 'ok', count: 2 },
        { second: 2, category: 'transport error', count: 1 },
      ],
    );
  });
});
