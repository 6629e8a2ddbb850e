// The upgrade test's ledger: what the cluster must hold after a sequence of
// writes, and when an object is known to exist.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ledger } from '../../../../src/tools/upgradeTest/ledger.js';
import type { WriteRecord } from '../../../../src/tools/upgradeTest/observations.js';

const write = (w: Partial<WriteRecord> & Pick<WriteRecord, 'verb' | 't0' | 'outcome'>): WriteRecord => ({
  resource: 'configmaps',
  name: 'x',
  t1: w.t0 + 5,
  ...w,
});

const ledgerOf = (...writes: WriteRecord[]): Ledger => {
  const l = new Ledger();
  for (const w of writes) l.record(w);
  return l;
};

describe('upgrade test ledger', () => {
  it('an acknowledged create must be found with its content', () => {
    const l = ledgerOf(write({ verb: 'create', t0: 0, outcome: 'ack', gen: 1 }));
    assert.deepEqual(l.lostWrites({ configmaps: new Map([['x', 1]]) }), []);
    assert.deepEqual(l.lostWrites({ configmaps: new Map() }), [{ resource: 'configmaps', name: 'x', expected: 'gen 1', found: 'absent' }]);
  });

  it('an acknowledged update must be found with the last acknowledged content, not an older one', () => {
    const l = ledgerOf(write({ verb: 'create', t0: 0, outcome: 'ack', gen: 1 }), write({ verb: 'update', t0: 10, outcome: 'ack', gen: 2 }));
    assert.equal(l.lostWrites({ configmaps: new Map([['x', 1]]) }).length, 1);
    assert.equal(l.lostWrites({ configmaps: new Map([['x', 2]]) }).length, 0);
  });

  it('an unanswered update may or may not have happened: both contents are acceptable', () => {
    const l = ledgerOf(write({ verb: 'create', t0: 0, outcome: 'ack', gen: 1 }), write({ verb: 'update', t0: 10, outcome: 'ambiguous', gen: 2 }));
    assert.equal(l.lostWrites({ configmaps: new Map([['x', 1]]) }).length, 0);
    assert.equal(l.lostWrites({ configmaps: new Map([['x', 2]]) }).length, 0);
    assert.equal(l.lostWrites({ configmaps: new Map([['x', 3]]) }).length, 1);
  });

  it('a rejected write changes nothing', () => {
    const l = ledgerOf(write({ verb: 'create', t0: 0, outcome: 'ack', gen: 1 }), write({ verb: 'delete', t0: 10, outcome: 'rejected' }));
    assert.equal(l.lostWrites({ configmaps: new Map() }).length, 1);
  });

  it('an acknowledged delete must stick; an unanswered one leaves either state acceptable', () => {
    const acked = ledgerOf(write({ verb: 'create', t0: 0, outcome: 'ack', gen: 1 }), write({ verb: 'delete', t0: 10, outcome: 'ack' }));
    assert.deepEqual(acked.lostWrites({ configmaps: new Map([['x', 1]]) }), [{ resource: 'configmaps', name: 'x', expected: 'absent', found: 'gen 1' }]);
    const unanswered = ledgerOf(write({ verb: 'create', t0: 0, outcome: 'ack', gen: 1 }), write({ verb: 'delete', t0: 10, outcome: 'ambiguous' }));
    assert.equal(unanswered.lostWrites({ configmaps: new Map() }).length, 0);
    assert.equal(unanswered.lostWrites({ configmaps: new Map([['x', 1]]) }).length, 0);
  });

  it('an object only ever written without an answer cannot be lost', () => {
    const l = ledgerOf(write({ verb: 'create', t0: 0, outcome: 'ambiguous', gen: 1 }));
    assert.equal(l.lostWrites({ configmaps: new Map() }).length, 0);
    assert.equal(l.lostWrites({ configmaps: new Map([['x', 1]]) }).length, 0);
  });

  it('a check at a moment judges only the writes begun before it', () => {
    const l = ledgerOf(write({ verb: 'create', t0: 0, outcome: 'ack', gen: 1 }), write({ verb: 'update', t0: 100, outcome: 'ack', gen: 2 }));
    assert.equal(l.lostWrites({ configmaps: new Map([['x', 1]]) }, 50).length, 0);
  });

  it('resources absent from the snapshot are not judged (SVM after the rollback)', () => {
    const l = ledgerOf(write({ resource: 'storageversionmigrations', verb: 'create', t0: 0, outcome: 'ack', gen: 1 }));
    assert.equal(l.lostWrites({ configmaps: new Map() }).length, 0);
  });

  it('an object is known to exist from its acknowledged create until a delete of it begins', () => {
    const l = ledgerOf(write({ verb: 'create', t0: 0, outcome: 'ack', gen: 1 }), write({ verb: 'delete', t0: 100, outcome: 'ack' }));
    assert.equal(l.knownToExistThroughout('configmaps', 'x', 3, 20), false, 'the create had not been answered yet');
    assert.equal(l.knownToExistThroughout('configmaps', 'x', 10, 20), true);
    assert.equal(l.knownToExistThroughout('configmaps', 'x', 90, 110), false, 'a delete began during the request');
    assert.equal(l.knownToExistThroughout('configmaps', 'y', 10, 20), false);
  });
});
