// The upgrade test's judgement: which answers are spurious 404s, incomplete
// discovery, 5xx with or without Retry-After, and which watch events were
// missed or duplicated.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ledger } from '../../src/upgradeTest/ledger.js';
import { categorize, judgeMode, judgeWatch, missingGroups, perSecond } from '../../src/upgradeTest/outcomes.js';
import { servedByVersion, type RequestRecord, type WatchEventRecord } from '../../src/upgradeTest/observations.js';
import { Timeline } from '../../src/upgradeTest/timeline.js';

// kas-a and kas-b at v1.36.3 from 0; kas-a out at 100, back at v1.37.2 at 200.
const timeline = (): Timeline => {
  const t = new Timeline();
  t.enter('kas-a', 'v1.36.3', servedByVersion('v1.36.3'), 0);
  t.enter('kas-b', 'v1.36.3', servedByVersion('v1.36.3'), 0);
  t.leave('kas-a', 100);
  t.enter('kas-a', 'v1.37.2', servedByVersion('v1.37.2'), 200);
  return t;
};
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

  it('5xx are told apart by Retry-After; a failed connection is a transport error', () => {
    assert.equal(categorize(req({ status: 503, retryAfter: true }), timeline(), ledger()), '5xx with Retry-After');
    assert.equal(categorize(req({ status: 503 }), timeline(), ledger()), '5xx without Retry-After');
    assert.equal(categorize(req({ status: 0 }), timeline(), ledger()), 'transport error');
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

  it('the mode outcome carries the issue keys', () => {
    const requests = [req({}), req({ resource: 'storageversionmigrations', status: 404 }), req({ status: 503 }), req({ status: 503, retryAfter: true })];
    const o = judgeMode(
      { requests, watchEvents: [], watchStart: {}, lostMidpoint: [], lostEnd: [], steps: [], durationMs: 1000, watchRelists: 0 },
      timeline(),
      ledger(),
    );
    assert.deepEqual(
      [o.spurious_404, o.lost_writes, o.missed_watch_events, o.errors_5xx, o.errors_5xx_without_retry_after, o.incomplete_discovery, o.requests],
      [1, 0, 0, 2, 1, 0, 4],
    );
    assert.deepEqual(o.spurious_404_by_resource, { storageversionmigrations: 1 });
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
