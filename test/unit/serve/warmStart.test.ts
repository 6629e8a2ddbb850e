// Issue 12: what a replica keeps for a warm start, and how a kept model meets today's configuration.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  alignWarmModel,
  MAX_WARM_START_AGE_MS,
  readWarmStart,
  writeWarmStart,
  WarmStartKeeper,
  WARM_START_FORMAT,
  type WarmState,
} from '../../../src/serve/warmStart.js';
import { pino } from 'pino';
import { BATCH, CORE, model } from '../../support/clusterModel.js';

const kept = model({ a: { serves: CORE }, b: { serves: [...CORE, ...BATCH] } });
const file = (): string => join(mkdtempSync(join(tmpdir(), 'mvproxy-warm-')), 'warm-start.json');
const declared = kept.apiservers.map((a) => a.endpoint);

describe('the warm-start file', () => {
  it('gives back the model it was written with, and when', () => {
    const path = file();
    writeWarmStart(path, { model: kept, draining: ['b'] }, 1234);
    assert.deepEqual(readWarmStart(path, 1234), { model: kept, draining: ['b'], savedAt: 1234 });
  });

  it('is unusable when written more than MAX_WARM_START_AGE_MS ago', () => {
    const path = file();
    writeWarmStart(path, { model: kept, draining: [] }, 1000);
    assert.ok('model' in readWarmStart(path, 1000 + MAX_WARM_START_AGE_MS));
    const read = readWarmStart(path, 1001 + MAX_WARM_START_AGE_MS);
    assert.ok('unusable' in read && /minutes from now/.test(read.unusable), JSON.stringify(read));
  });

  it('is unusable when written more than MAX_WARM_START_AGE_MS in the future (a clock set back)', () => {
    const path = file();
    writeWarmStart(path, { model: kept, draining: [] }, 1001 + MAX_WARM_START_AGE_MS);
    assert.ok('unusable' in readWarmStart(path, 1000));
  });

  it('is readable by its owner only (it names every apiserver and what it serves)', () => {
    const path = file();
    writeWarmStart(path, { model: kept, draining: [] }, 1);
    assert.equal(statSync(path).mode & 0o777, 0o600);
  });

  it('is absent when there is no file', () => {
    assert.deepEqual(readWarmStart(file()), { absent: true });
  });

  it('is unusable, with the reason, when it is not JSON', () => {
    const path = file();
    writeFileSync(path, '{"format": 1, "mod');
    assert.ok('unusable' in readWarmStart(path));
  });

  it('is unusable, with a reason, when its savedAt is a number past any date', () => {
    const path = file();
    writeFileSync(path, JSON.stringify({ format: WARM_START_FORMAT, savedAt: -8_640_000_000_000_001, model: kept, draining: [] }));
    assert.match((readWarmStart(path, 1234) as { unusable: string }).unusable, /^written at -8640000000000001 ms since the epoch, more than/);
  });

  it('is unusable when written in another format', () => {
    const path = file();
    writeFileSync(path, JSON.stringify({ format: WARM_START_FORMAT + 1, savedAt: 1, model: kept, draining: [] }));
    assert.deepEqual(readWarmStart(path), { unusable: `not a warm-start file of format ${WARM_START_FORMAT}` });
  });

  it('is unusable when the model in it is malformed, naming the first field that is', () => {
    const path = file();
    writeFileSync(path, JSON.stringify({ format: WARM_START_FORMAT, savedAt: 1, model: { ...kept, apiservers: 'many' }, draining: [] }));
    const read = readWarmStart(path);
    assert.ok('unusable' in read && read.unusable.startsWith('model.apiservers: '), JSON.stringify(read));
  });

  it('is unusable when its drains are malformed', () => {
    const path = file();
    writeFileSync(path, JSON.stringify({ format: WARM_START_FORMAT, savedAt: 1, model: kept, draining: [7] }));
    assert.deepEqual(readWarmStart(path), { unusable: 'its drains are malformed' });
  });
});

describe('alignWarmModel', () => {
  it('keeps every apiserver still declared as it was', () => {
    assert.deepEqual(alignWarmModel(kept, declared), kept);
  });

  it('drops an apiserver no longer declared', () => {
    const aligned = alignWarmModel(kept, declared.slice(0, 1));
    assert.deepEqual(
      aligned.apiservers.map((a) => a.endpoint.name),
      ['a'],
    );
  });

  it('starts an apiserver whose address changed as unknown: nothing served, not reachable, no lease', () => {
    const moved = declared.map((e) => (e.name === 'b' ? { ...e, address: { host: '10.9.9.9', port: 6443 } } : e));
    const b = alignWarmModel(kept, moved).apiservers.find((a) => a.endpoint.name === 'b');
    assert.deepEqual(b, { endpoint: { name: 'b', hostname: 'host-b', address: { host: '10.9.9.9', port: 6443 } }, servedSet: [], reachable: false });
  });

  it('adds a newly declared apiserver as unknown', () => {
    const added = [...declared, { name: 'c', hostname: 'host-c', address: { host: '10.0.0.3', port: 6443 } }];
    const c = alignWarmModel(kept, added).apiservers.find((a) => a.endpoint.name === 'c');
    assert.deepEqual(c?.servedSet, []);
    assert.equal(c?.reachable, false);
  });
});

describe('WarmStartKeeper', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const keeper = (path: string, current: () => WarmState, intervalMs: number) =>
    new WarmStartKeeper({ file: path, current, logger: pino({ level: 'silent' }), intervalMs });
  const drains = (path: string) => {
    const read = readWarmStart(path);
    return 'draining' in read ? read.draining : undefined;
  };

  it('writes a burst of changes once per interval, and the newest state last', async () => {
    const path = file();
    let state: WarmState = { model: kept, draining: ['first'] };
    let reads = 0;
    const k = keeper(
      path,
      () => {
        reads++;
        return state;
      },
      200,
    );
    k.keep();
    await sleep(20);
    assert.deepEqual(drains(path), ['first'], 'the first change is written at once');
    for (const name of ['second', 'third', 'fourth']) {
      state = { model: kept, draining: [name] };
      k.keep();
    }
    await sleep(20);
    assert.deepEqual(drains(path), ['first'], 'changes within the interval wait for its end');
    await sleep(300);
    assert.deepEqual(drains(path), ['fourth']);
    assert.equal(reads, 2);
  });

  it('flush writes a pending change at once', () => {
    const path = file();
    const k = keeper(path, () => ({ model: kept, draining: ['pending'] }), 60_000);
    k.keep();
    k.flush();
    assert.deepEqual(drains(path), ['pending']);
  });
});
