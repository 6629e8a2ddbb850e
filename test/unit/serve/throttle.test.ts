// The reconcile throttle (serve/throttle.ts): newest value, at most once per interval.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { LatestThrottle } from '../../../src/serve/throttle.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('LatestThrottle', () => {
  it('runs a value offered after a quiet interval on the next turn of the event loop', async () => {
    const runs: number[] = [];
    const throttle = new LatestThrottle<number>((v) => runs.push(v), 10_000);
    throttle.offer(1);
    assert.deepEqual(runs, [], 'not synchronously');
    await nextTurn();
    assert.deepEqual(runs, [1]);
  });

  it('runs a burst once at once and once more, with the newest value, when the interval ends', async () => {
    const runs: number[] = [];
    const throttle = new LatestThrottle<number>((v) => runs.push(v), 100);
    throttle.offer(1);
    await nextTurn();
    for (const v of [2, 3, 4]) throttle.offer(v);
    await sleep(30);
    assert.deepEqual(runs, [1], 'the rest waits for the interval');
    await sleep(120);
    assert.deepEqual(runs, [1, 4]);
  });

  it('drops what waits when superseded', async () => {
    const runs: number[] = [];
    const throttle = new LatestThrottle<number>((v) => runs.push(v), 50);
    throttle.offer(1);
    throttle.supersede();
    await sleep(80);
    assert.deepEqual(runs, []);
  });

  it('runs the value waiting, not the older one the caller has, when asked to run now', async () => {
    const runs: number[] = [];
    const throttle = new LatestThrottle<number>((v) => runs.push(v), 10_000);
    throttle.offer(1);
    await nextTurn();
    throttle.offer(2);
    throttle.runNow(1);
    assert.deepEqual(runs, [1, 2]);
  });

  it("runs the caller's value when asked to run now with nothing waiting", async () => {
    const runs: number[] = [];
    const throttle = new LatestThrottle<number>((v) => runs.push(v), 10_000);
    throttle.runNow(7);
    assert.deepEqual(runs, [7]);
  });

  it('runs a waiting value once when asked to run now before its turn', async () => {
    const runs: number[] = [];
    const throttle = new LatestThrottle<number>((v) => runs.push(v), 50);
    throttle.offer(1);
    await nextTurn();
    throttle.offer(2);
    throttle.runNow(1);
    await sleep(80);
    assert.deepEqual(runs, [1, 2]);
  });
});
