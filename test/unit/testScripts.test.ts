// `npm test` runs exactly the test files: every `*.test.js` the build makes,
// and nothing else (support modules are no tests, and the path oracle's
// script runs where `npm run oracle` says, not by accident inside the suite).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const scripts = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** The file patterns a script hands to `node --test`. */
function testPatterns(script: string): string[] {
  const command = script.split('&&').find((part) => part.includes('node --test')) ?? '';
  return command.split(/\s+/).filter((word) => word.startsWith('dist/'));
}

/** Every .js file below dir, relative to the repository. */
function builtFiles(dir: string): string[] {
  return readdirSync(join(REPO, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.js'))
    .map((file) => relative(REPO, join(REPO, dir, file)));
}

// What `sh` expands a test-file pattern to: `*` matches within one path segment, never across a slash.
function expand(pattern: string): string[] {
  const segments = pattern.split('/');
  let paths = [''];
  for (const [i, segment] of segments.entries()) {
    const last = i === segments.length - 1;
    if (!segment.includes('*')) {
      paths = paths.map((p) => (p === '' ? segment : `${p}/${segment}`));
      continue;
    }
    const [prefix, suffix] = segment.split('*') as [string, string];
    paths = paths.flatMap((dir) =>
      readdirSync(join(REPO, dir), { withFileTypes: true })
        .filter((entry) => entry.name.startsWith(prefix) && entry.name.endsWith(suffix) && (last ? entry.isFile() : entry.isDirectory()))
        .map((entry) => `${dir}/${entry.name}`),
    );
  }
  return paths;
}

describe('npm test', () => {
  it('hands node --test only *.test.js files', () => {
    for (const pattern of testPatterns(scripts['test'] ?? '')) assert.match(pattern, /\/\*\.test\.js$/);
  });

  it('runs every test file the build makes', () => {
    const run = new Set(testPatterns(scripts['test'] ?? '').flatMap(expand));
    const tests = builtFiles('dist/test').filter((file) => file.endsWith('.test.js'));
    assert.ok(tests.length > 0);
    assert.deepEqual(
      tests.filter((file) => !run.has(file)),
      [],
    );
  });

  it('runs no support module', () => {
    const run = new Set(testPatterns(scripts['test'] ?? '').flatMap(expand));
    assert.deepEqual(
      builtFiles('dist/test/support').filter((file) => run.has(file)),
      [],
    );
  });
});
