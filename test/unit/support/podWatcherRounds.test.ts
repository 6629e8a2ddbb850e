import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyRounds, longestOutage, type WatchRound } from '../../support/podWatcherRounds.js';

const A = '192.0.2.11';
const B = '192.0.2.12';

/** A round at `at` listing `addresses` on 6444, with the given /version statuses (0: refused). */
function round(at: number, statuses: Record<string, number>, readFrom = `${A}:6444`): WatchRound {
  const addresses = Object.keys(statuses);
  return {
    at,
    readFrom,
    slices: [{ name: 'kubernetes', port: 6444, addresses }],
    answers: addresses.map((address) => ({
      address,
      port: 6444,
      status: statuses[address] ?? 0,
      ...(statuses[address] === 0 ? { error: 'ECONNREFUSED' } : {}),
    })),
  };
}

describe('pod watcher rounds', () => {
  it('counts a round that read slices listing nobody as empty, and one that read nothing as not empty', () => {
    const rounds = [round(0, { [A]: 200 }), round(500, {}), round(1000, {}, '')];
    assert.deepEqual(
      emptyRounds(rounds).map((r) => r.at),
      [500],
    );
  });

  it('measures an outage from the first failing round to the round where the endpoint answers again', () => {
    const rounds = [round(0, { [A]: 200, [B]: 200 }), round(500, { [A]: 0, [B]: 200 }), round(1000, { [A]: 0, [B]: 200 }), round(4000, { [A]: 200, [B]: 200 })];
    assert.deepEqual(longestOutage(rounds), { endpoint: `${A}:6444`, ms: 3500, error: 'ECONNREFUSED' });
  });

  it('ends an outage when the endpoint is no longer listed', () => {
    const rounds = [round(0, { [A]: 0, [B]: 200 }), round(2000, { [B]: 200 }), round(9000, { [B]: 200 })];
    assert.equal(longestOutage(rounds)?.ms, 2000);
  });

  it('lets rounds that read nothing neither end nor extend an outage', () => {
    const rounds = [round(0, { [A]: 0 }), round(1000, {}, ''), round(3000, { [A]: 200 })];
    assert.equal(longestOutage(rounds)?.ms, 3000);
  });

  it('finds no outage when every listed endpoint always answered', () => {
    assert.equal(longestOutage([round(0, { [A]: 200 }), round(500, { [A]: 403 })]), undefined);
  });
});
