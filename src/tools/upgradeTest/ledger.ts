// What the cluster must hold, from the writes the load generator made: pure.
// Every object is written by one worker only, one request at a time, so its
// writes never overlap and fold in order. A write without a definite answer
// (transport error, 5xx) may or may not have happened: the ledger keeps both
// possibilities, so only an acknowledged write can ever be "lost".
import type { ResourceKey, Snapshot, WriteRecord } from './observations.js';

export type Existence = 'yes' | 'no' | 'maybe';

/** What may be found for one object: whether it exists, and which generations its content may carry. */
export interface Expectation {
  exists: Existence;
  gens: Set<number>;
  /** An acknowledged write decided this expectation (otherwise nothing the cluster does can lose a write). */
  acknowledged: boolean;
}

export interface LostWrite {
  resource: ResourceKey;
  name: string;
  expected: string;
  found: string;
}

function key(resource: ResourceKey, name: string): string {
  return `${resource}/${name}`;
}

export class Ledger {
  private readonly writes: WriteRecord[] = [];
  private readonly byObject = new Map<string, WriteRecord[]>();

  record(write: WriteRecord): void {
    this.writes.push(write);
    const k = key(write.resource, write.name);
    const list = this.byObject.get(k) ?? [];
    list.push(write);
    this.byObject.set(k, list);
  }

  all(): readonly WriteRecord[] {
    return this.writes;
  }

  /** The object's acknowledged create ended before `t0`, and no delete of it started before `t1`: it existed for the whole request. */
  knownToExistThroughout(resource: ResourceKey, name: string, t0: number, t1: number): boolean {
    const writes = this.byObject.get(key(resource, name)) ?? [];
    const created = writes.some((w) => w.verb === 'create' && w.outcome === 'ack' && w.t1 <= t0);
    const deleting = writes.some((w) => w.verb === 'delete' && w.outcome !== 'rejected' && w.t0 < t1);
    return created && !deleting;
  }

  /** Folds the object's writes (those started before `until`) into what may be found now. */
  expectation(resource: ResourceKey, name: string, until = Number.POSITIVE_INFINITY): Expectation {
    const writes = (this.byObject.get(key(resource, name)) ?? []).filter((w) => w.t0 < until).sort((a, b) => a.t0 - b.t0);
    return writes.reduce<Expectation>((state, w) => applyWrite(state, w), { exists: 'no', gens: new Set(), acknowledged: false });
  }

  objects(resource: ResourceKey): string[] {
    const prefix = `${resource}/`;
    return [...this.byObject.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
  }

  /** Compares what a check read back (every object of each resource in `snapshot`) with the ledger. */
  lostWrites(snapshot: Snapshot, until = Number.POSITIVE_INFINITY): LostWrite[] {
    const lost: LostWrite[] = [];
    for (const [resource, found] of Object.entries(snapshot) as Array<[ResourceKey, Map<string, number | undefined>]>) {
      for (const name of this.objects(resource)) {
        const expected = this.expectation(resource, name, until);
        if (!expected.acknowledged) continue;
        const problem = judge(expected, found.has(name), found.get(name));
        if (problem) lost.push({ resource, name, ...problem });
      }
    }
    return lost;
  }
}

function applyWrite(state: Expectation, w: WriteRecord): Expectation {
  if (w.outcome === 'rejected') return state;
  const ack = w.outcome === 'ack';
  const gen = w.gen === undefined ? [] : [w.gen];
  switch (w.verb) {
    case 'create':
      if (ack) return { exists: 'yes', gens: new Set(gen), acknowledged: true };
      return { exists: state.exists === 'yes' ? 'yes' : 'maybe', gens: new Set([...state.gens, ...gen]), acknowledged: state.acknowledged };
    case 'update':
      if (ack) return { exists: 'yes', gens: new Set(gen), acknowledged: true };
      return { ...state, gens: new Set([...state.gens, ...gen]) };
    case 'delete':
      if (ack) return { exists: 'no', gens: new Set(), acknowledged: true };
      return { ...state, exists: state.exists === 'no' ? 'no' : 'maybe' };
  }
}

function judge(expected: Expectation, present: boolean, gen: number | undefined): { expected: string; found: string } | undefined {
  const want = `${expected.exists === 'no' ? 'absent' : `gen ${[...expected.gens].join('|')}`}${expected.exists === 'maybe' ? ' or absent' : ''}`;
  const found = present ? `gen ${gen}` : 'absent';
  if (!present) return expected.exists === 'yes' ? { expected: want, found } : undefined;
  if (expected.exists === 'no') return { expected: want, found };
  return gen !== undefined && expected.gens.has(gen) ? undefined : { expected: want, found };
}
