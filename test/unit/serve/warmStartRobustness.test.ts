// Whatever is in the warm-start file, the replica starts: a file that is not
// a whole, well-typed warm-start file is refused with one reason, and one that
// is read back reconciles into every sidecar's snapshot without a throw.
// Property-based: a valid file, one field mutated at a time (fast-check).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { alignWarmModel, MAX_WARM_START_BYTES, readWarmStart, WARM_START_FORMAT, type WarmStartRead } from '../../../src/serve/warmStart.js';
import { reconcile, reconcileSettings } from '../../../src/serve/reconcile.js';
import { BATCH, config, CORE, MIGRATION, model } from '../../support/reconcileFixtures.js';

const NAMES = ['kas-a', 'kas-b'];
const kept = model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH, ...MIGRATION] });
const validFile = { format: WARM_START_FORMAT, savedAt: 1_700_000_000_000, model: kept, draining: ['kas-b'] };
const settings = reconcileSettings(config(NAMES), { identity: Buffer.from('\0asm-not-really'), documents: Buffer.from('\0asm-documents') });
const dir = mkdtempSync(join(tmpdir(), 'mvproxy-warm-robust-'));
const path = join(dir, 'warm-start.json');

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Step = string | number;

/** Every place in a JSON value where a value sits (the root is []). */
function placesIn(value: Json, at: Step[] = []): Step[][] {
  const places: Step[][] = [at];
  const children: Array<[Step, Json]> = Array.isArray(value)
    ? value.map((item, i) => [i, item])
    : value !== null && typeof value === 'object'
      ? Object.entries(value)
      : [];
  for (const [step, item] of children) places.push(...placesIn(item, [...at, step]));
  return places;
}

/** `root` with the value at `place` replaced by `replacement` (undefined: removed). */
function mutated(root: Json, place: Step[], replacement: Json | undefined): Json | undefined {
  const [step, ...rest] = place;
  if (step === undefined) return replacement;
  if (Array.isArray(root)) {
    const copy = [...root];
    const item = mutated(copy[step as number] as Json, rest, replacement);
    if (item === undefined) copy.splice(step as number, 1);
    else copy[step as number] = item;
    return copy;
  }
  const copy = { ...(root as Record<string, Json>) };
  const item = mutated(copy[step] as Json, rest, replacement);
  if (item === undefined) delete copy[step];
  else copy[step] = item;
  return copy;
}

/** What a replica does with the file at start: read it and, when usable, reconcile the kept model for the declared sidecars. */
function startWith(text: string): WarmStartRead {
  writeFileSync(path, text);
  const read = readWarmStart(path, validFile.savedAt);
  if ('model' in read) {
    const declared = config(NAMES).apiservers;
    const result = reconcile(alignWarmModel(read.model, declared), new Set(read.draining), settings);
    assert.equal(result.sidecars.size, NAMES.length);
  }
  return read;
}

const validJson = JSON.parse(JSON.stringify(validFile)) as Json;
const places = placesIn(validJson);

describe('a warm-start file, whatever its content', () => {
  it('is read back whole when nothing in it is changed', () => {
    assert.ok('model' in startWith(JSON.stringify(validFile)));
  });

  it('with any one field replaced by any JSON value, is refused with a reason or read back, and the replica starts', () => {
    fc.assert(
      fc.property(fc.constantFrom(...places), fc.jsonValue(), (place, value) => {
        const read = startWith(JSON.stringify(mutated(validJson, place, value as Json)));
        if ('unusable' in read) assert.ok(read.unusable.length > 0);
      }),
      { numRuns: 200 },
    );
  });

  it('with any one field removed, is refused with a reason or read back, and the replica starts', () => {
    fc.assert(
      fc.property(fc.constantFrom(...places.filter((p) => p.length > 0)), (place) => {
        startWith(JSON.stringify(mutated(validJson, place, undefined)));
      }),
      { numRuns: 100 },
    );
  });

  it('with any one field given a value of another type, is refused, naming the field', () => {
    const typed = places.filter((p) => p.length > 1 && p[0] === 'model');
    fc.assert(
      fc.property(fc.constantFrom(...typed), (place) => {
        const original = place.reduce<Json>((v, step) => (v as Record<string | number, Json>)[step] as Json, validJson);
        const other: Json = typeof original === 'string' ? 7 : 'seven';
        const read = startWith(JSON.stringify(mutated(validJson, place, other)));
        assert.ok('unusable' in read && read.unusable.startsWith('model.'), `${place.join('.')}: ${JSON.stringify(read).slice(0, 200)}`);
      }),
      { numRuns: 300 },
    );
  });

  it('cut short anywhere, is refused with a reason and the replica starts', () => {
    const text = JSON.stringify(validFile);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: text.length - 1 }), (length) => {
        assert.ok('unusable' in startWith(text.slice(0, length)));
      }),
      { numRuns: 300 },
    );
  });

  it('as any text at all, never stops the replica from starting', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        startWith(text);
      }),
      { numRuns: 300 },
    );
  });

  it('is refused unread when larger than any kept model', () => {
    writeFileSync(path, '');
    truncateSync(path, MAX_WARM_START_BYTES + 1);
    const read = readWarmStart(path);
    assert.ok('unusable' in read && /more than/.test(read.unusable), JSON.stringify(read));
  });

  it('is refused when its model is an empty object among apiservers', () => {
    const read = startWith(JSON.stringify({ ...validFile, model: { ...kept, apiservers: [{}] } }));
    assert.ok('unusable' in read && read.unusable.startsWith('model.apiservers.0.'), JSON.stringify(read));
  });
});
