// The upgrade test's renderers show what each run's JSON carries, and say
// "not recorded" where an older JSON lacks it, never 0.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { answerColumns, upgradeAnswers, upgradeInCluster, upgradeStories, upgradeSummary } from '../../../../src/tools/docs/upgradeTestFigures.js';

const texts = (lines: { text: string }[]): string[] => lines.map((l) => l.text);
const counts = (total: number, runs: number[]) => ({ total, runs });

/** A JSON of two modes, two runs each, whose runs carry `answers` and `stories.terminating_s`. */
function upgradeJson() {
  const zero = counts(0, [0, 0]);
  const summary = {
    requests: counts(20, [10, 10]),
    spurious_404: zero,
    incomplete_discovery: zero,
    errors_5xx: counts(3, [2, 1]),
    errors_5xx_while_served: counts(1, [0, 1]),
    errors_5xx_without_retry_after: zero,
    watches_broken: zero,
    namespaces_left_with_garbage: zero,
    namespaces_stuck_terminating: counts(1, [0, 1]),
    dependents_wrongly_deleted: zero,
    controller_manager_restarts: zero,
  };
  const run = (answers: Record<string, number> | undefined, terminating: Record<string, number | null> | undefined) => ({
    load_average: { start: 1, end: 2 },
    ...(answers === undefined ? {} : { answers }),
    stories: { resource: 'podcertificaterequests', ...(terminating === undefined ? {} : { terminating_s: terminating }) },
  });
  return {
    procedure: { from: 'v1', to: 'v2', apiservers: ['a', 'b'], runs: 2, short: false, invariants: ['watches_broken', 'errors_5xx_while_served'] },
    summary: { none: structuredClone(summary), mvproxy: structuredClone(summary) },
    runs: {
      none: [
        run({ '2xx': 190, '404': 7 }, { 'every apiserver up': 12, 'sole server restarting': 30.5 }),
        run({ '2xx': 180, '404': 3 }, { 'every apiserver up': 15, 'sole server restarting': null }),
      ],
      mvproxy: [
        run({ '2xx': 188, 'transport error': 1, '503 without Retry-After': 1, '503 with Retry-After': 4, '304': 2, '429': 1 }, undefined),
        run({ '2xx': 170, '503 with Retry-After': 5 }, undefined),
      ],
    },
  };
}

describe('upgrade answers by class and code', () => {
  it('the columns are 2xx, 304, the 4xx ascending, each 5xx with then without Retry-After, and transport errors last', () => {
    assert.deepEqual(
      answerColumns(['transport error', '503 without Retry-After', '429', '2xx', '500 with Retry-After', '404', '503 with Retry-After', '304']),
      ['2xx', '304', '404', '429', '500 with Retry-After', '503 with Retry-After', '503 without Retry-After', 'transport error'],
    );
  });

  it('the table has one row per mode and a column for every class seen in any mode', () => {
    const rows = texts(upgradeAnswers(upgradeJson()));
    assert.ok(rows.includes('| mode | 2xx | 304 | 404 | 429 | 503 with `Retry-After` | 503 without `Retry-After` | transport error |'), rows.join('\n'));
    assert.equal(rows.filter((r) => r.startsWith('| `')).length, 2);
  });

  it("a cell is the total over the runs with each run's value in brackets", () => {
    const none = texts(upgradeAnswers(upgradeJson())).find((r) => r.startsWith('| `none` |'));
    assert.equal(none, '| `none` | 370 (190, 180) | 0 | 10 (7, 3) | 0 | 0 | 0 | 0 |');
  });

  it('the 5xx of a mode stand beside its 404s, in the same row', () => {
    const mvproxy = texts(upgradeAnswers(upgradeJson())).find((r) => r.startsWith('| `mvproxy` |'));
    assert.equal(mvproxy, '| `mvproxy` | 358 (188, 170) | 2 (2, 0) | 0 | 1 (1, 0) | 9 (4, 5) | 1 (1, 0) | 1 (1, 0) |');
  });

  it('a JSON whose runs predate `answers` says they were not recorded, and prints no 0', () => {
    const json = upgradeJson();
    for (const runs of Object.values(json.runs)) for (const run of runs) delete (run as { answers?: unknown }).answers;
    const rows = texts(upgradeAnswers(json));
    assert.deepEqual(rows, ["Answers by class and code: not recorded in these runs (they predate each run's `answers`)."]);
  });

  it('a mode whose runs all predate `answers` says not recorded in every cell', () => {
    const json = upgradeJson();
    for (const run of json.runs.none) delete (run as { answers?: unknown }).answers;
    const none = texts(upgradeAnswers(json)).find((r) => r.startsWith('| `none` |'));
    assert.equal(none, `| \`none\` |${' not recorded |'.repeat(6)}`);
  });

  it('a run without `answers` beside runs with them is named per run, not summed as 0', () => {
    const json = upgradeJson();
    delete (json.runs.none[1] as { answers?: unknown }).answers;
    const none = texts(upgradeAnswers(json)).find((r) => r.startsWith('| `none` |'));
    assert.match(none ?? '', /^\| `none` \| 190, not recorded \| 0, not recorded \| 7, not recorded \|/);
  });
});

describe('upgrade summary', () => {
  it('the summary has a column of the 5xx while an apiserver in rotation served the resource', () => {
    const rows = texts(upgradeSummary(upgradeJson()));
    assert.ok(
      rows.includes(
        '| mode | requests | spurious 404 | incomplete discovery | 5xx | 5xx while served | 5xx without `Retry-After` | shared invariants broken |',
      ),
    );
    assert.ok(rows.includes('| `none` | 20 | 0 | 0 | 3 (2, 1) | 1 (0, 1) | 0 | `errors_5xx_while_served` 1 (0, 1) |'), rows.join('\n'));
  });

  it('the summary is followed by the answers table', () => {
    const rows = texts(upgradeSummary(upgradeJson()));
    assert.ok(rows.includes("Every answer, by class and code (each run's `answers`):"), rows.join('\n'));
  });
});

describe('upgrade stories', () => {
  const storyRow = (json: unknown, mode: string): string | undefined => texts(upgradeStories(json)).find((r) => r.startsWith(`| \`${mode}\` |`));

  it("each story's time Terminating is listed per run, next to the three story counts", () => {
    const rows = texts(upgradeStories(upgradeJson()));
    assert.equal(
      rows[0],
      '| mode | namespaces left with garbage | stuck Terminating | dependents wrongly deleted | Terminating for (every apiserver up) | Terminating for (sole server restarting) | controller-manager restarts |',
    );
    assert.match(storyRow(upgradeJson(), 'none') ?? '', /^\| `none` \| 0 \| 1 \(0, 1\) \| 0 \| 12, 15 s \|/);
  });

  it('a namespace still there at the judgement (null) says so, beside the times of the runs where it went', () => {
    assert.match(storyRow(upgradeJson(), 'none') ?? '', /\| 30\.5 s, still there \| 0 \|$/);
  });

  it('runs that predate `terminating_s` say not recorded, not 0', () => {
    assert.equal(storyRow(upgradeJson(), 'mvproxy'), '| `mvproxy` | 0 | 1 (0, 1) | 0 | not recorded | not recorded | 0 |');
  });

  it('a run without stories at all says not recorded too', () => {
    const json = upgradeJson();
    for (const run of json.runs.none) delete (run as { stories?: unknown }).stories;
    assert.match(storyRow(json, 'none') ?? '', /\| not recorded \| not recorded \| 0 \|$/);
  });
});

describe('upgrade in-cluster clients', () => {
  const withPods = () => {
    const json = upgradeJson();
    const pods = (answers: Record<string, number>) => ({ requests: Object.values(answers).reduce((a, b) => a + b, 0), answers, endpoint_changes: [] });
    Object.assign(json.runs.none[0] as object, { in_cluster: pods({ '2xx': 9, '404': 1 }) });
    Object.assign(json.runs.none[1] as object, { in_cluster: pods({ '2xx': 8, '429': 2 }) });
    return json;
  };

  it("sums the pods' answers over the runs, by class in the answers table's order", () => {
    assert.match(texts(upgradeInCluster(withPods()))[0] ?? '', /`none`: 20 \(2xx 17, 404 1, 429 2\)/);
  });

  it('says not recorded for a mode whose runs predate the pods', () => {
    assert.match(texts(upgradeInCluster(withPods()))[0] ?? '', /`mvproxy`: not recorded/);
  });
});
