// The control plane's event journal (src/serve/events.ts): a bounded ring that
// followers read as it grows, fed by reconciles, drains and the ADS server.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import { ControlPlaneJournal, EventJournal } from '../../../src/serve/events.js';
import type { ClusterEvent, JournalEntry } from '../../../src/model/events.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import { AdsServer } from '../../../src/servers/ads.js';
import { SnapshotStore } from '../../../src/servers/snapshotStore.js';
import { TYPE_URL } from '../../../src/xds/snapshot.js';
import { CORE, GRACE_MS, NOW, model } from '../../support/clusterModel.js';

function event(n: number): ClusterEvent {
  return { at: n, kind: 'drain', subject: `kas-${n}`, message: `event ${n}` };
}

describe('EventJournal', () => {
  test('keeps at most its capacity, dropping the oldest, and numbers events in order', () => {
    const journal = new EventJournal(3);
    journal.record([1, 2, 3, 4, 5].map(event));
    assert.deepEqual(
      journal.recent().map((e) => [e.sequence, e.subject]),
      [
        [3, 'kas-3'],
        [4, 'kas-4'],
        [5, 'kas-5'],
      ],
    );
  });

  test('recent(limit) gives the newest that many, oldest first', () => {
    const journal = new EventJournal(10);
    journal.record([1, 2, 3].map(event));
    assert.deepEqual(
      journal.recent(2).map((e) => e.sequence),
      [2, 3],
    );
  });

  test('a follower hears every event recorded after it follows, until it stops', () => {
    const journal = new EventJournal(10);
    journal.record([event(1)]);
    const heard: JournalEntry[] = [];
    const stop = journal.follow((e) => heard.push(e));
    journal.record([event(2), event(3)]);
    stop();
    journal.record([event(4)]);
    assert.deepEqual(
      heard.map((e) => e.sequence),
      [2, 3],
    );
    assert.equal(journal.followers, 0);
  });

  test('a follower that throws does not stop the others or the journal', () => {
    const journal = new EventJournal(10);
    const heard: number[] = [];
    journal.follow(() => {
      throw new Error('boom');
    });
    journal.follow((e) => heard.push(e.sequence));
    journal.record([event(1)]);
    assert.deepEqual(heard, [1]);
    assert.equal(journal.recent().length, 1);
  });
});

describe('ControlPlaneJournal', () => {
  function attached(): { cp: ControlPlaneJournal; ads: AdsServer } {
    const cp = new ControlPlaneJournal(() => NOW);
    const ads = new AdsServer({ current: new SnapshotStore(), startup: new SnapshotStore() }, { logger: pino({ level: 'silent' }) });
    cp.attach(ads);
    return { cp, ads };
  }

  test('a NACK is recorded once per rejected version, with Envoy message', () => {
    const { cp, ads } = attached();
    const nack = { node: 'kas-a', typeUrl: TYPE_URL.route, version: 'v1', nonce: 'n', message: 'Unknown field' };
    ads.emit('nack', nack);
    ads.emit('nack', { ...nack, nonce: 'n2' });
    ads.emit('nack', { ...nack, version: 'v2' });
    assert.deepEqual(
      cp.journal.recent().map((e) => `${e.kind} ${e.subject}: ${e.message}`),
      ['nack kas-a: rejected RouteConfiguration v1: Unknown field', 'nack kas-a: rejected RouteConfiguration v2: Unknown field'],
    );
  });

  test('sidecar streams opening and closing are events', () => {
    const { cp, ads } = attached();
    ads.emit('connect', { node: 'kas-b', streamId: 1 });
    ads.emit('disconnect', { node: 'kas-b', streamId: 1 });
    assert.deepEqual(
      cp.journal.recent().map((e) => `${e.kind} ${e.subject}`),
      ['sidecar-connected kas-b', 'sidecar-disconnected kas-b'],
    );
  });

  test('a drain seen in the drain record says what the record keeps with it, on one line', () => {
    const cp = new ControlPlaneJournal(() => NOW);
    cp.drains(new Set(['b']), new Set(['a']), 'seen in the drain record', { a: 'drained through mvproxy admin\non cp-2' });
    assert.deepEqual(
      cp.journal.recent().map((e) => e.message),
      ['drained: traffic moves off it (drained through mvproxy admin on cp-2)', 'drain ended (seen in the drain record)'],
    );
  });

  test('a reconcile with the same model records only plan changes, and drains are recorded with who asked', () => {
    const cp = new ControlPlaneJournal(() => NOW);
    const m = model({ a: { serves: CORE } });
    const standings = apiserverStandings(m, GRACE_MS);
    cp.reconciled(m, [], standings);
    cp.reconciled(m, [], standings);
    cp.drains(new Set(), new Set(['a']), 'asked through mvproxy admin on cp-1');
    assert.deepEqual(
      cp.journal.recent().map((e) => e.kind),
      ['apiserver-arrived', 'drain'],
    );
  });
});
