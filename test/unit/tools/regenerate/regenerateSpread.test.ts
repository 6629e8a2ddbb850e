// mvproxy-dev regenerate: several runs of a bench part as one JSON (medians,
// spread, void runs), the parts it knows, and the provenance it records.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PARTS, selectParts } from '../../../../src/tools/regenerate/parts.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gitState, measuredDigest, provenance, staleness, type GitState } from '../../../../src/tools/regenerate/provenance.js';
import { combineRuns, failuresIn, median, type PartRun } from '../../../../src/tools/regenerate/spread.js';

const FILES = new Map([
  ['src/serve/main.ts', 's1'],
  ['envoy/bootstrap.yaml', 'e1'],
]);
const HEAD: GitState = { commit: 'def4567890', clean: true, files: FILES };

const run = (summary: Record<string, number>, errors = 0): PartRun => ({ summary, local: { sides: { sidecar: { requests: 100, errors } } } });

describe('regenerate: runs combined', () => {
  it('the median of an odd count is the middle value, of an even count the mean of the middle two', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
  });

  it("each figure of the summary is the median of the runs, and its spread gives min, max and every run's value", () => {
    const combined = combineRuns([run({ ratio: 1.2, p50: 3 }), run({ ratio: 1.0, p50: 5 }), run({ ratio: 1.1, p50: 4 })]);
    assert.deepEqual(combined.summary, { ratio: 1.1, p50: 4 });
    assert.deepEqual(combined.spread['ratio'], { median: 1.1, min: 1.0, max: 1.2, runs: [1.2, 1.0, 1.1] });
    assert.equal(combined.valid_runs, 3);
  });

  it('a run in which any request failed is void: left out of every figure, and listed with where it failed', () => {
    const combined = combineRuns([run({ ratio: 1.2 }), run({ ratio: 9 }, 3), run({ ratio: 1.0 })]);
    assert.deepEqual(combined.spread['ratio']?.runs, [1.2, 1.0]);
    assert.deepEqual(combined.void_runs, [{ run: 2, failures: ['local.sides.sidecar.errors: 3'] }]);
  });

  it('with every run void there is nothing to publish: it throws', () => {
    assert.throws(() => combineRuns([run({ ratio: 1 }, 1)]), /every one of the 1 runs is void/);
  });

  it("the details beside the summary are the first valid run's, and say which run", () => {
    const first = { ...run({ ratio: 1 }, 2), marker: 'void' };
    const second = { ...run({ ratio: 2 }), marker: 'second' };
    const combined = combineRuns([first, second]);
    assert.equal(combined['marker'], 'second');
    assert.equal(combined.details_from_run, 2);
  });

  it('failed-request counts are found at any depth, under `errors` or `failed`, zeros ignored', () => {
    assert.deepEqual(failuresIn({ a: [{ errors: 0 }, { b: { failed: 2 } }], errors: 1 }), ['a[1].b.failed: 2', 'errors: 1']);
  });
});

describe('regenerate: parts and provenance', () => {
  it('every committed measurement has a part, the docs’ figures last', () => {
    const outputs = PARTS.flatMap((p) => p.outputs);
    for (const file of ['docs/bench-side-by-side.json', 'docs/bench-freshness.json', 'docs/upgrade-test.json', 'docs/upgrade-test-1.35-1.36.svg'])
      assert.ok(outputs.includes(file), file);
    assert.equal(PARTS.at(-1)?.name, 'figures');
  });

  it('--parts selects parts in their own order and refuses names it does not know', () => {
    assert.deepEqual(
      selectParts('figures,bench-fanout').map((p) => p.name),
      ['bench-fanout', 'figures'],
    );
    assert.throws(() => selectParts('bench-nothing'), /unknown bench-nothing/);
  });

  it('the upgrade test takes the runs itself, for both pairs, picture beside the JSON', () => {
    const part = PARTS.find((p) => p.name === 'upgrade-test-1.35-1.36');
    assert.deepEqual(part?.args(3, 'docs/upgrade-test-1.35-1.36.json'), [
      'upgrade-test',
      '--pair',
      '1.35-1.36',
      '--mode',
      'all',
      '--runs',
      '3',
      '--out',
      'docs/upgrade-test-1.35-1.36.json',
      '--svg',
      'docs/upgrade-test-1.35-1.36.svg',
    ]);
  });

  it('provenance records the commit, cleanliness, duration and the load before and after', () => {
    const p = provenance(
      { commit: 'abc', clean: true, files: FILES },
      { command: 'mvproxy-dev bench --only fanout', runs: 3 },
      { startedAt: Date.parse('2026-12-05T08:00:00Z'), endedAt: Date.parse('2026-12-05T08:10:00Z'), loadStart: 0.5, loadEnd: 1.9 },
      2,
    );
    assert.deepEqual(p, {
      commit: 'abc',
      code: measuredDigest(FILES),
      clean: true,
      command: 'mvproxy-dev bench --only fanout',
      runs: 3,
      started_at: '2026-12-05T08:00:00.000Z',
      duration_s: 600,
      cpus: 2,
      load_average: { start: 0.5, end: 1.9 },
    });
  });

  it('a part made at another commit with the same measured files describes HEAD', () => {
    assert.equal(staleness({ commit: 'abc1234', clean: true }, new Map(FILES), HEAD), undefined);
  });

  it('a part whose measured files differ names them', () => {
    const made = new Map([...FILES, ['envoy/bootstrap.yaml', 'e2']]);
    assert.equal(staleness({ commit: 'abc1234', clean: true }, made, HEAD), 'made at abc1234; changed since, as of def4567: envoy/bootstrap.yaml');
  });

  it('a measured file added since makes a part stale', () => {
    assert.match(staleness({ commit: 'abc1234', clean: true }, new Map([['src/serve/main.ts', 's1']]), HEAD) ?? '', /envoy\/bootstrap\.yaml/);
  });

  it('a part made from a dirty tree never describes HEAD', () => {
    assert.match(staleness({ commit: 'abc1234', clean: false }, FILES, HEAD) ?? '', /uncommitted changes/);
  });

  it('a JSON without provenance describes nothing', () => {
    assert.match(staleness(undefined, undefined, HEAD) ?? '', /no provenance/);
  });

  it('the same files give the same digest, whatever their order', () => {
    assert.equal(measuredDigest(new Map([...FILES].reverse())), measuredDigest(FILES));
  });
});

describe('regenerate: the tree it measures', () => {
  /** Runs `check` on a repository of one commit (a source file and a committed figure), then removes it. */
  const inRepo = (check: (dir: string, git: (...args: string[]) => void) => void): void => {
    const dir = mkdtempSync(join(tmpdir(), 'mvproxy-gitstate-'));
    const git = (...args: string[]): void => void execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
    try {
      git('init', '-q');
      for (const d of ['src', 'docs']) mkdirSync(join(dir, d));
      writeFileSync(join(dir, 'src/a.ts'), 'a\n');
      writeFileSync(join(dir, 'docs/figure.json'), '{}\n');
      git('add', '.');
      git('commit', '-qm', 'one');
      check(dir, git);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('a changed figure under docs/ leaves the tree clean (regenerate writes it)', () => {
    inRepo((dir) => {
      writeFileSync(join(dir, 'docs/figure.json'), '{"new":1}\n');
      assert.equal(gitState(dir).clean, true);
    });
  });

  it('a changed source file makes the tree unclean', () => {
    inRepo((dir) => {
      writeFileSync(join(dir, 'src/a.ts'), 'b\n');
      assert.equal(gitState(dir).clean, false);
    });
  });

  it("the renderers under src/tools/docs/ and the developer CLI's help text are not measured code", () => {
    inRepo((dir, git) => {
      for (const file of ['src/tools/docs/render.ts', 'src/tools/cli/usage.ts']) {
        mkdirSync(join(dir, dirname(file)), { recursive: true });
        writeFileSync(join(dir, file), 'r\n');
      }
      git('add', '.');
      git('commit', '-qm', 'two');
      assert.deepEqual([...gitState(dir).files.keys()], ['src/a.ts']);
    });
  });
});
