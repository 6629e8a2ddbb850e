// `npm run docs:figures`: rewrites every generated region of README.md and
// docs/*.md from the committed JSON it names (docs/bench-*.json,
// docs/upgrade-test*.json). The file I/O is here; rendering is in regions.ts.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderDocument } from './regions.js';

/** The repository, from dist/src/tools/docs/figures.js. */
export const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** Every document that may hold generated regions, relative to the repository. */
export function documents(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

/** Reads (and parses) a JSON under docs/ of `root`. */
export const jsonReader =
  (root: string) =>
  (file: string): unknown =>
    JSON.parse(readFileSync(join(root, 'docs', file), 'utf8'));

function main(): void {
  const readJson = jsonReader(REPO_ROOT);
  for (const doc of documents(REPO_ROOT)) {
    const path = join(REPO_ROOT, doc);
    const before = readFileSync(path, 'utf8');
    const after = renderDocument(before, readJson);
    if (after !== before) {
      writeFileSync(path, after);
      process.stdout.write(`rewrote the figures of ${doc}\n`);
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
