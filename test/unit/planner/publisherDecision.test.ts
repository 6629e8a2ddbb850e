// The publisher's rules about other writers and readiness (src/planner/publisherDecision.ts), on a fake clock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventLimiter, LeaseHold, publisherReadiness, READINESS_GRACE_MS } from '../../../src/planner/publisherDecision.js';

describe('LeaseHold: an apiserver still on the lease reconciler', () => {
  it('writes over lease content found before this replica had its own content in place (the takeover)', () => {
    assert.deepEqual(new LeaseHold().leaseFound(0), { act: 'write', retry: false });
  });

  it('holds for 30 s when lease content comes back over this replica’s own, then retries once', () => {
    const h = new LeaseHold();
    h.leaseFound(0);
    h.wrote();
    assert.deepEqual(h.leaseFound(10_000), { act: 'hold', until: 40_000, began: true });
    assert.deepEqual(h.leaseFound(20_000), { act: 'hold', until: 40_000, began: false });
    assert.deepEqual(h.leaseFound(40_000), { act: 'write', retry: true });
  });

  it('doubles the hold each time a retry is rewritten, up to 5 min', () => {
    const h = new LeaseHold();
    const holds: number[] = [];
    let now = 0;
    h.leaseFound(now);
    h.wrote();
    for (let i = 0; i < 6; i++) {
      now += 10_000;
      const held = h.leaseFound(now);
      assert.equal(held.act, 'hold');
      if (held.act === 'hold') {
        holds.push(held.until - now);
        now = held.until;
      }
      assert.equal(h.leaseFound(now).act, 'write');
      h.wrote();
    }
    assert.deepEqual(holds, [30_000, 60_000, 120_000, 240_000, 300_000, 300_000]);
  });

  it('a retry is confirmed once its content has stayed 20 s (two reconciler periods), which resets the hold to 30 s', () => {
    const h = new LeaseHold();
    h.leaseFound(0);
    h.wrote();
    h.leaseFound(10_000);
    h.leaseFound(40_000);
    h.wrote();
    assert.equal(h.confirmed(50_000), false, '10 s after the retry: the reconciler may not have run yet');
    assert.equal(h.confirmed(60_000), true);
    assert.deepEqual(h.leaseFound(100_000), { act: 'hold', until: 130_000, began: true });
  });

  it("another replica's retry found during a hold is confirmed on the same terms: 20 s, else the hold doubles", () => {
    const h = new LeaseHold();
    h.leaseFound(0);
    h.wrote();
    h.leaseFound(10_000);
    h.clear(20_000);
    assert.equal(h.confirmed(20_000), false);
    assert.deepEqual(h.leaseFound(30_000), { act: 'hold', until: 90_000, began: true });
  });

  it('a retry rewritten within its 20 s doubles the next hold', () => {
    const h = new LeaseHold();
    h.leaseFound(0);
    h.wrote();
    h.leaseFound(10_000);
    h.leaseFound(40_000);
    h.wrote();
    h.confirmed(50_000);
    assert.deepEqual(h.leaseFound(60_000), { act: 'hold', until: 120_000, began: true });
  });
});

describe('EventLimiter', () => {
  it('sends one event per reason per minute', () => {
    const l = new EventLimiter();
    assert.equal(l.allow('ForeignWrite', 'a', 0), true);
    assert.equal(l.allow('ForeignWrite', 'b', 30_000), false);
    assert.equal(l.allow('PublisherHolding', 'a', 30_000), true, 'another reason is not limited by this one');
    assert.equal(l.allow('ForeignWrite', 'b', 60_000), true);
  });

  it('repeats the same message at most every 10 min', () => {
    const l = new EventLimiter();
    assert.equal(l.allow('ForeignWrite', 'a', 0), true);
    assert.equal(l.allow('ForeignWrite', 'a', 300_000), false);
    assert.equal(l.allow('ForeignWrite', 'a', 600_000), true);
  });
});

describe('publisher readiness', () => {
  it('is ready while publishing', () => {
    assert.equal(publisherReadiness('publishing', 'lists a', 0, 10 * READINESS_GRACE_MS).ready, true);
  });

  it('stays ready for a minute of holding or failing, then is not, saying why', () => {
    assert.equal(publisherReadiness('failing', 'x', 0, READINESS_GRACE_MS - 1).ready, true);
    const r = publisherReadiness('failing', 'EndpointSlice default/kubernetes-mvproxy-fallback does not exist', 0, READINESS_GRACE_MS);
    assert.equal(r.ready, false);
    assert.match(r.why, /has not been publishing for 60 s: failing: EndpointSlice default\/kubernetes-mvproxy-fallback does not exist/);
  });
});
