// The simulated load balancer's health check: when a backend goes back into
// rotation and when it leaves it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { afterCheck, DOWN, HEALTH_CHECK, UP, type Health } from '../../../../src/tools/upgradeTest/healthCheck.js';

const run = (start: Health, results: boolean[]): boolean[] => {
  let h = start;
  return results.map((passed) => {
    h = afterCheck(h, passed, HEALTH_CHECK);
    return h.up;
  });
};

describe('upgrade test health check', () => {
  it('uses HAProxy defaults on /readyz: inter 2 s, rise 2, fall 3', () => {
    assert.deepEqual(HEALTH_CHECK, { path: '/readyz', intervalMs: 2000, timeoutMs: 2000, rise: 2, fall: 3 });
  });

  it('a backend put back goes into rotation only after `rise` passing checks in a row', () => {
    assert.deepEqual(run(DOWN, [true, true]), [false, true]);
  });

  it('a failing check between passes starts the count again', () => {
    assert.deepEqual(run(DOWN, [true, false, true, true]), [false, false, false, true]);
  });

  it('a backend in rotation leaves it after `fall` failing checks in a row, not fewer', () => {
    assert.deepEqual(run(UP, [false, false, true, false, false, false]), [true, true, true, true, true, false]);
  });

  it('a backend that keeps passing stays up, one that keeps failing stays down', () => {
    assert.deepEqual(run(UP, [true, true, true]), [true, true, true]);
    assert.deepEqual(run(DOWN, [false, false, false]), [false, false, false]);
  });
});
