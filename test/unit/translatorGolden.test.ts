// Golden files: for a handful of representative sidecar plans
// (TRANSLATOR_GOLDEN_CASES in test/support/translatorFixtures.ts), the exact
// Envoy resources the translator makes, reviewed, one file per case in
// test/golden/translator/<case>.json: the plan and settings that go in, the
// resources that come out (sorted keys, two-space indent, an object or array
// that fits on its line written on it). Each file also goes through a real
// Envoy (`envoy --mode validate`).
//
// After an intended change, regenerate them all and review the diff:
//
//   npm run golden:update    # npm run build, then this test with MVPROXY_UPDATE_GOLDEN=1
//
// Bytes are rendered readably: the identity filter module (tens of kilobytes
// that change with every filter build and are not the translator's business)
// becomes a fixed placeholder, any other bytes base64. Certificate paths are
// fixed fake ones (FIXED_FILES), which Envoy validation swaps for real
// throwaway files.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { translateSidecar, type EnvoyResources, type TranslatorSettings } from '../../src/translator/translator.js';
import { goldenSettings, settingsFilePaths, throwawaySettings, TRANSLATOR_GOLDEN_CASES, type TranslatorGoldenCase } from '../support/translatorFixtures.js';
import { validateWithEnvoy } from '../support/validate.js';

const UPDATE = process.env['MVPROXY_UPDATE_GOLDEN'] === '1';
const REGENERATE = 'npm run golden:update';
/** The repository root (this file runs as dist/test/unit/translatorGolden.test.js). */
const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const GOLDEN_DIR = join(REPO, 'test', 'golden', 'translator');
/** What the identity filter module's bytes are rendered as. */
const MODULE_PLACEHOLDER = '<identity filter module: settings.identityFilter.module>';
const BASE64_PREFIX = '<bytes base64 ';

function goldenPath(goldenCase: TranslatorGoldenCase): string {
  return join(GOLDEN_DIR, `${goldenCase.name}.json`);
}

function shown(path: string): string {
  return relative(REPO, path);
}

// ---------------------------------------------------------------- rendering

/**
 * `value` as plain JSON data: object keys sorted, undefined fields dropped,
 * the identity filter module as MODULE_PLACEHOLDER, other bytes as base64.
 * Anything else JSON cannot carry faithfully fails.
 */
function canonical(value: unknown, module: Uint8Array, path: string): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    assert.ok(Number.isFinite(value), `${path}: ${value} has no JSON form`);
    return value;
  }
  if (value instanceof Uint8Array) {
    return Buffer.compare(value, module) === 0 ? MODULE_PLACEHOLDER : `${BASE64_PREFIX}${Buffer.from(value).toString('base64')}>`;
  }
  if (Array.isArray(value)) return value.map((item, i) => canonical(item, module, `${path}[${i}]`));
  assert.ok(typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype, `${path}: ${typeof value} is not plain data`);
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const field = (value as Record<string, unknown>)[key];
    if (field !== undefined) sorted[key] = canonical(field, module, `${path}.${key}`);
  }
  return sorted;
}

/** Lines are at most this long where an object or array fits on one. */
const LINE_WIDTH = 120;

/**
 * JSON text of canonical data, two-space indent; an object or array that fits
 * on its line (LINE_WIDTH) is written on it, `{"key": value, ...}`.
 */
function formatJson(value: unknown, indent: string, prefixLength: number): string {
  const oneLine = formatJsonOneLine(value);
  if (value === null || typeof value !== 'object' || indent.length + prefixLength + oneLine.length <= LINE_WIDTH) return oneLine;
  const entries: Array<[string, unknown]> = Array.isArray(value) ? value.map((item) => ['', item]) : Object.entries(value);
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  const key = (name: string): string => (Array.isArray(value) ? '' : `${JSON.stringify(name)}: `);
  const inner = `${indent}  `;
  const lines = entries.map(([name, item]) => `${inner}${key(name)}${formatJson(item, inner, key(name).length)}`);
  return `${open}\n${lines.join(',\n')}\n${indent}${close}`;
}

function formatJsonOneLine(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(formatJsonOneLine).join(', ')}]`;
  return `{${Object.entries(value)
    .map(([name, item]) => `${JSON.stringify(name)}: ${formatJsonOneLine(item)}`)
    .join(', ')}}`;
}

/** The golden file's text for a case: its inputs and the translator's output. */
function render(goldenCase: TranslatorGoldenCase, settings: TranslatorSettings, resources: EnvoyResources): string {
  const document = { case: goldenCase.name, what: goldenCase.what, plan: goldenCase.plan, settings, resources };
  const text = `${formatJson(canonical(document, settings.identityFilter.module, goldenCase.name), '', 0)}\n`;
  // A golden file must not depend on the machine that wrote it.
  const machinePaths = [REPO.replace(/\/$/, ''), join(tmpdir(), '/'), homedir() === '/' ? undefined : join(homedir(), '/')];
  for (const machinePath of machinePaths) {
    if (machinePath !== undefined) assert.ok(!text.includes(machinePath), `${goldenCase.name}: the output contains the machine-specific path ${machinePath}`);
  }
  return text;
}

/** Where two texts first differ, with a few lines of each around it. */
function firstDifference(expected: string, actual: string): string {
  const want = expected.split('\n');
  const got = actual.split('\n');
  let line = 0;
  while (line < want.length && line < got.length && want[line] === got[line]) line++;
  const excerpt = (lines: string[]): string =>
    lines
      .slice(Math.max(0, line - 2), line + 3)
      .map((l, i) => `    ${Math.max(0, line - 2) + i + 1}: ${l}`)
      .join('\n');
  return `first difference at line ${line + 1}\n  golden file:\n${excerpt(want)}\n  translator now:\n${excerpt(got)}`;
}

/**
 * The resources of a golden file as Envoy would get them: the module
 * placeholder back to the module, base64 back to bytes, the fixed fake paths
 * to real files.
 */
function rehydrate(value: unknown, module: Uint8Array, files: Map<string, string>): unknown {
  if (typeof value === 'string') {
    if (value === MODULE_PLACEHOLDER) return Buffer.from(module);
    if (value.startsWith(BASE64_PREFIX) && value.endsWith('>')) return Buffer.from(value.slice(BASE64_PREFIX.length, -1), 'base64');
    return files.get(value) ?? value;
  }
  if (Array.isArray(value)) return value.map((item) => rehydrate(item, module, files));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, rehydrate(field, module, files)]));
  }
  return value;
}

// ---------------------------------------------------------------- tests

describe('translator golden files (test/golden/translator)', () => {
  let certDir: string;
  let realFiles: TranslatorSettings;

  before(() => {
    certDir = mkdtempSync(join(tmpdir(), 'mvproxy-golden-'));
    realFiles = throwawaySettings(certDir);
    if (UPDATE) mkdirSync(GOLDEN_DIR, { recursive: true });
  });

  after(() => rmSync(certDir, { recursive: true, force: true }));

  for (const goldenCase of TRANSLATOR_GOLDEN_CASES) {
    const file = goldenPath(goldenCase);

    test(`${goldenCase.name} (${goldenCase.what}): the translator's output is ${shown(file)}`, () => {
      const settings = goldenSettings(goldenCase);
      const actual = render(goldenCase, settings, translateSidecar(goldenCase.plan, settings));
      if (UPDATE) {
        if (!existsSync(file) || readFileSync(file, 'utf8') !== actual) writeFileSync(file, actual);
        return;
      }
      assert.ok(existsSync(file), `golden case "${goldenCase.name}": ${shown(file)} is missing; create it with \`${REGENERATE}\` and review it`);
      const expected = readFileSync(file, 'utf8');
      if (expected === actual) return;
      assert.fail(
        `golden case "${goldenCase.name}": the translator's output differs from ${shown(file)}; ` +
          `if the change is intended, regenerate every golden file with \`${REGENERATE}\` and review \`git diff ${shown(GOLDEN_DIR)}\`.\n` +
          firstDifference(expected, actual),
      );
    });

    test(`${goldenCase.name}: Envoy accepts ${shown(file)}`, async () => {
      assert.ok(existsSync(file), `${shown(file)} is missing; create it with \`${REGENERATE}\``);
      const golden = JSON.parse(readFileSync(file, 'utf8')) as { resources: unknown };
      const settings = goldenSettings(goldenCase);
      const fakeToReal = new Map(settingsFilePaths(settings).map((fake, i) => [fake, settingsFilePaths(realFiles)[i] ?? fake]));
      const resources = rehydrate(golden.resources, settings.identityFilter.module, fakeToReal) as EnvoyResources;
      const result = await validateWithEnvoy(resources);
      assert.ok(result.ok, `golden case "${goldenCase.name}": Envoy refuses ${shown(file)}:\n${result.output}`);
    });
  }

  test('the golden directory holds one file per case and nothing else', () => {
    const expected = TRANSLATOR_GOLDEN_CASES.map((c) => `${c.name}.json`).sort();
    assert.equal(new Set(expected).size, expected.length, 'case names are unique');
    const present = existsSync(GOLDEN_DIR) ? readdirSync(GOLDEN_DIR).sort() : [];
    const stray = present.filter((name) => !expected.includes(name));
    if (UPDATE) {
      for (const name of stray.filter((n) => n.endsWith('.json'))) unlinkSync(join(GOLDEN_DIR, name));
      return;
    }
    assert.deepEqual(stray, [], `files in ${shown(GOLDEN_DIR)} that no case writes; remove them with \`${REGENERATE}\``);
  });
});
