// The translator's golden cases, a specification by example: for each request
// rule of docs/request-rules.md (and each way of reading a path, and the
// settings that change the output), the smallest sidecar plan that shows it
// and the exact Envoy resources the translator makes of it.
//
//   test/golden/translator/<case>/input.json     what the case shows, the plan, settings beyond the defaults
//   test/golden/translator/<case>/<type>.json    clusters, endpoints, listeners, routes, secrets: one file per resource type
//   test/golden/translator/_shared/<type>.json   parts (nearly) every case has, which cases refer to as "<shared NAME>"
//   test/golden/translator/_shared/settings.json the default settings
//
// A case is named after the rule or behaviour it shows; its files write out
// in full what differs from the shared parts, and the shared parts it is
// about (input.json's expand). Every case's resources also go through a real
// Envoy (`envoy --mode validate`). After an intended change, regenerate them
// all and review the diff:
//
//   npm run golden:update    # npm run build, then this test with MVPROXY_UPDATE_GOLDEN=1
//
// A new case: a directory with an input.json, then `npm run golden:update`.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import {
  CASE_FILES,
  caseNames,
  currentSharedValues,
  DEFAULT_SETTINGS,
  GOLDEN_DIR,
  envoyResources,
  goldenSharedValues,
  goldenText,
  readCase,
  readGolden,
  REGENERATE,
  REPO,
  SHARED_DIR,
  sharedPath,
  shown,
  strayTopLevelFiles,
  translated,
  type GoldenCase,
} from '../../support/goldenCases.js';
import { canonical, firstDifference } from '../../support/goldenJson.js';
import {
  RESOURCE_TYPES,
  SHARED_TYPES,
  sharedFile,
  withoutReferences,
  withReferences,
  type ResourceFiles,
  type ResourceType,
} from '../../support/goldenShared.js';
import { throwawaySettingsForTestFile } from '../../support/translatorFixtures.js';
import { validateWithEnvoy, type ValidationResult } from '../../support/validate.js';

const UPDATE = process.env['MVPROXY_UPDATE_GOLDEN'] === '1';

/**
 * Compares `text` with the golden file at `path` (in update mode: writes it
 * when it differs). Returns a description of the difference, or undefined.
 */
function checkGolden(path: string, text: string): string | undefined {
  if (UPDATE) {
    if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text);
    return undefined;
  }
  if (!existsSync(path)) return `${shown(path)} is missing`;
  const expected = readFileSync(path, 'utf8');
  return expected === text ? undefined : `${shown(path)} differs from the translator's output: ${firstDifference(expected, text)}`;
}

function assertNoDifferences(what: string, differences: Array<string | undefined>): void {
  const found = differences.filter((d) => d !== undefined);
  if (found.length === 0) return;
  assert.fail(
    `${what}:\n${found.join('\n')}\n` +
      `if the change is intended, regenerate every golden file with \`${REGENERATE}\` (it writes missing and stale ones) and review \`git diff ${shown(GOLDEN_DIR)}\``,
  );
}

/** Runs at most `concurrency` jobs at once (Envoy validations: about a second each). */
function limiter(concurrency: number): <T>(job: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <T>(job: () => Promise<T>): Promise<T> => {
    if (running >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await job();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/** The rule names of docs/request-rules.md: the first column of its tables. */
function documentedRules(): string[] {
  const doc = readFileSync(join(REPO, 'docs', 'request-rules.md'), 'utf8');
  return [...doc.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1] ?? '');
}

// ---------------------------------------------------------------- the cases

const shared = currentSharedValues();
const realFiles = throwawaySettingsForTestFile('mvproxy-golden-');
const validation = limiter(Math.max(1, Math.min(4, availableParallelism())));

/** A case's resources as the translator makes them now, and as its files write them. */
function caseOutput(goldenCase: GoldenCase): { actual: ResourceFiles; texts: Map<ResourceType, string>; verdict: Promise<ValidationResult> } {
  const actual = translated(goldenCase.plan, goldenCase.settings, goldenCase.name);
  const texts = new Map<ResourceType, string>();
  for (const type of RESOURCE_TYPES) {
    const written = withReferences(actual[type], shared, goldenCase.expand);
    texts.set(type, goldenText(written, `${goldenCase.name}/${type}.json`));
  }
  // Started at once, a few at a time: each test awaits its own.
  const verdict = validation(() => validateWithEnvoy(envoyResources(goldenCase, actual, realFiles))).catch(
    (err: unknown): ValidationResult => ({ ok: false, output: String(err) }),
  );
  return { actual, texts, verdict };
}

interface Loaded {
  name: string;
  goldenCase?: GoldenCase;
  output?: ReturnType<typeof caseOutput>;
  /** Why the case could not be read or translated. */
  problem?: string;
}

function load(name: string): Loaded {
  try {
    const goldenCase = readCase(name);
    return { name, goldenCase, output: caseOutput(goldenCase) };
  } catch (err) {
    return { name, problem: err instanceof Error ? err.message : String(err) };
  }
}

const cases = caseNames().map(load);

describe('translator golden cases (test/golden/translator)', () => {
  test('the shared parts are test/golden/translator/_shared/ (default settings in settings.json)', () => {
    if (UPDATE) mkdirSync(SHARED_DIR, { recursive: true });
    const settingsText = goldenText(canonical(DEFAULT_SETTINGS, DEFAULT_SETTINGS.filterModule, 'settings'), 'settings');
    assertNoDifferences('the shared parts', [
      checkGolden(sharedPath('settings'), settingsText),
      ...SHARED_TYPES.map((type) => checkGolden(sharedPath(type), goldenText(sharedFile(type, shared), `_shared/${type}.json`))),
    ]);
    const expected = ['settings.json', ...SHARED_TYPES.map((type) => `${type}.json`)];
    const stray = readdirSync(SHARED_DIR).filter((file) => !expected.includes(file));
    if (UPDATE) for (const file of stray) unlinkSync(join(SHARED_DIR, file));
    else assert.deepEqual(stray, [], `files in ${shown(SHARED_DIR)} that nothing writes; remove them with \`${REGENERATE}\``);
  });

  for (const { name, goldenCase, output, problem } of cases) {
    if (goldenCase === undefined || output === undefined) {
      test(`${name}: the case can be read and translated`, () => assert.fail(problem));
      continue;
    }
    const { actual, texts, verdict } = output;

    test(`${name}: ${goldenCase.what}`, async () => {
      const differences = RESOURCE_TYPES.map((type) => checkGolden(join(goldenCase.dir, `${type}.json`), texts.get(type) ?? ''));
      assertNoDifferences(`golden case "${name}"`, differences);
      // The files on disk, their references resolved through _shared/ on disk, are the translator's output.
      const sharedOnDisk = goldenSharedValues();
      for (const type of RESOURCE_TYPES) {
        const file = join(goldenCase.dir, `${type}.json`);
        assert.deepEqual(
          withoutReferences(readGolden(file), sharedOnDisk),
          actual[type],
          `${shown(file)} with ${shown(SHARED_DIR)} is the translator's output`,
        );
      }
      const result = await verdict;
      assert.ok(result.ok, `golden case "${name}": Envoy refuses its resources:\n${result.output}`);
    });
  }

  test('every rule of docs/request-rules.md has a case named after it', () => {
    const names = cases.map((c) => c.name);
    const missing = documentedRules().filter((rule) => !names.some((name) => name === rule || name.startsWith(`${rule}-`)));
    assert.deepEqual(missing, [], `rules without a case in ${shown(GOLDEN_DIR)} (a directory <rule> or <rule>-<variant> with an input.json)`);
  });

  test('the golden directory holds the cases and nothing else', () => {
    const stray = [
      ...strayTopLevelFiles().map((file) => join(GOLDEN_DIR, file)),
      ...cases.flatMap(({ name }) =>
        readdirSync(join(GOLDEN_DIR, name))
          .filter((file) => !CASE_FILES.includes(file))
          .map((file) => join(GOLDEN_DIR, name, file)),
      ),
    ];
    if (UPDATE) {
      for (const path of stray) unlinkSync(path);
      return;
    }
    assert.deepEqual(stray.map(shown), [], `files no case writes; remove them with \`${REGENERATE}\``);
  });
});
