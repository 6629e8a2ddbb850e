// startDeadline: a deadline that counts only time the event loop was running.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { STALL_TOLERANCE_MS, startDeadline } from '../../../src/sources/deadline.js';
import { FakeTime } from '../../support/fakeTime.js';

/** A deadline of `ms` on `time`, and how often it expired. */
function deadline(time: FakeTime, ms: number) {
  const expired = { count: 0 };
  const handle = startDeadline(ms, () => expired.count++, time, time.clock);
  return { expired, handle };
}

describe('startDeadline', () => {
  test('expires when its time has passed on time', async () => {
    const time = new FakeTime();
    const { expired } = deadline(time, 2000);
    await time.advance(1999);
    assert.equal(expired.count, 0);
    await time.advance(1);
    assert.equal(expired.count, 1);
  });

  test('fired late by a stall, it waits out the time it lost before it expires', async () => {
    const time = new FakeTime();
    const { expired } = deadline(time, 2000);
    await time.stall(2500); // its timer runs 500 ms after it was due
    assert.equal(expired.count, 0, 'not at the first turn after the stall');
    await time.advance(499);
    assert.equal(expired.count, 0);
    await time.advance(1);
    assert.equal(expired.count, 1);
  });

  test('late within the tolerance of a scheduling hiccup, it expires', async () => {
    const time = new FakeTime();
    const { expired } = deadline(time, 2000);
    await time.stall(2000 + STALL_TOLERANCE_MS);
    assert.equal(expired.count, 1);
  });

  test('cancelled, it never expires', async () => {
    const time = new FakeTime();
    const { expired, handle } = deadline(time, 2000);
    await time.stall(2500);
    handle.cancel();
    await time.advance(10_000);
    assert.equal(expired.count, 0);
    assert.equal(time.pendingTimers(), 0);
  });
});
