// The layering of src/ (docs/architecture.md), enforced: every import and
// export-from of every module under src/ (type-only ones and dynamic import()
// included) goes only where the table of docs/architecture.md allows, neither
// the folders nor the files import each other in a circle, the tools
// (src/tools) reach the product only through the entry modules (src/entry),
// and each entry module exports what the document lists.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { moduleSpecifiers } from '../support/moduleSpecifiers.js';

/** The repository: this file runs as dist/test/unit/architecture.test.js. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SRC = join(ROOT, 'src');
const ARCHITECTURE_DOC = join(ROOT, 'docs', 'architecture.md');

/** Layers every tool may import besides the entry modules: generic helpers, and the types generated from proto/. */
const SHARED_LEAVES: readonly string[] = ['util', 'generated'];
/** The folders translator, servers and xds keep their inside in; an entry module re-exports none of it. */
const INSIDE_LAYERS: readonly string[] = ['translator', 'servers', 'xds'];
/** What an entry module may re-export from those: the sidecar bootstrap, a product output (`mvproxy bootstrap` prints it). */
const PUBLIC_INSIDE_MODULES: readonly string[] = ['src/xds/bootstrap.ts'];
const MAX_ENTRY_MODULES = 5;

const isTool = (layer: string): boolean => layer.startsWith('tools/');

/** The lines of one `## heading` section of a markdown text (up to the next `## `). */
function section(markdown: string, heading: string): string[] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(`## ${heading}`);
  assert.ok(start >= 0, `docs/architecture.md has no section "## ${heading}"`);
  const end = lines.findIndex((line, n) => n > start && line.startsWith('## '));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The `code` spans of a markdown text, in order. */
function codeSpans(text: string): string[] {
  return [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');
}

/**
 * The table of "Who may import whom": which folder of src/ (or top-level
 * module: src/metrics.ts is "metrics"; src/tools/bench is "tools/bench") may
 * import which, besides itself.
 */
function readLayers(markdown: string): Record<string, readonly string[]> {
  const layers: Record<string, readonly string[]> = {};
  for (const line of section(markdown, 'Who may import whom')) {
    const cells = line.split('|').map((c) => c.trim());
    // | `src/x` | what lives there | may import |
    const folder = /^`src\/(.+?)(\.ts)?`$/.exec(cells[1] ?? '')?.[1];
    if (folder === undefined || cells.length !== 5) continue;
    const mayImport = cells[3] ?? '';
    layers[folder] = mayImport === 'nothing in src/' ? [] : mayImport.split(',').map((l) => l.trim());
  }
  return layers;
}

/** The section "The tools' way in": each entry module (`src/entry/x.ts`) and the names its bullets list. */
function readEntryExports(markdown: string): Map<string, string[]> {
  const modules = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of section(markdown, "The tools' way in")) {
    const heading = /^### `(src\/entry\/[^`]+\.ts)`$/.exec(line);
    if (heading) {
      current = [];
      modules.set(heading[1] ?? '', current);
    } else if (line.startsWith('- `') && current) {
      // - `name`, `Other`: what they are
      current.push(...codeSpans(line.slice(0, line.indexOf(':'))));
    }
  }
  return modules;
}

const DOC = readFileSync(ARCHITECTURE_DOC, 'utf8');
const LAYERS = readLayers(DOC);

interface Import {
  /** The importing file, relative to the repository ("src/model/events.ts"). */
  file: string;
  /** As written: "../planner/plan.js". */
  specifier: string;
  /** The imported file, relative to the repository ("src/planner/plan.ts"), or undefined for a package. */
  target: string | undefined;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path !== join(SRC, 'generated')) out.push(...sourceFiles(path));
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      out.push(path);
    }
  }
  return out.sort();
}

/** "src/planner/plan.ts" -> "planner"; "src/metrics.ts" -> "metrics"; "src/tools/bench/load.ts" -> "tools/bench". */
function layerOf(file: string): string {
  const parts = relative('src', file).split('/');
  const depth = parts[0] === 'tools' ? 2 : 1;
  return parts.length === depth ? parts.join('/').replace(/\.(ts|js)$/, '') : parts.slice(0, depth).join('/');
}

function repoPath(absolute: string): string {
  return relative(ROOT, absolute).split(sep).join('/');
}

function readImports(): Import[] {
  const imports: Import[] = [];
  for (const absolute of sourceFiles(SRC)) {
    const file = repoPath(absolute);
    for (const specifier of moduleSpecifiers(file, readFileSync(absolute, 'utf8'))) {
      const relativeSpecifier = specifier.startsWith('./') || specifier.startsWith('../');
      const target = relativeSpecifier ? repoPath(resolve(dirname(absolute), specifier)).replace(/\.js$/, '.ts') : undefined;
      imports.push({ file, specifier, target });
    }
  }
  return imports;
}

/** A cycle in `graph` (as its nodes, the first repeated at the end), or undefined. */
function findCycle(graph: ReadonlyMap<string, ReadonlySet<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node];
    state.set(node, 'open');
    path.push(node);
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of [...graph.keys()].sort()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

function addEdge(graph: Map<string, Set<string>>, from: string, to: string): void {
  const edges = graph.get(from) ?? new Set<string>();
  edges.add(to);
  graph.set(from, edges);
}

describe('architecture: the layering of src/', () => {
  const imports = readImports();
  const local = imports.filter((i): i is Import & { target: string } => i.target !== undefined);

  it('reads the table of docs/architecture.md, every layer, and every form of import', () => {
    for (const layer of ['util', 'model', 'serve', 'entry', 'cli', 'tools/sandbox', 'tools/cli']) assert.ok(LAYERS[layer], `no row for src/${layer} read`);
    const layers = new Set(sourceFiles(SRC).map((f) => layerOf(repoPath(f))));
    // A row whose folder is not there yet has nothing to read.
    const present = Object.keys(LAYERS).filter((l) => l !== 'generated' && (existsSync(join(SRC, l)) || existsSync(join(SRC, `${l}.ts`))));
    for (const layer of present) assert.ok(layers.has(layer), `no file read from src/${layer}`);
    assert.ok(local.length > 500, `only ${local.length} imports of src/ files read`);
    // The parser sees every form, type-only and dynamic ones included.
    const forms = moduleSpecifiers(
      'forms.ts',
      "import a from './a.js'; import type { B } from './b.js'; export { c } from './c.js'; export * from './d.js';\n" +
        "const e = await import('./e.js'); type F = import('./f.js').F; import g = require('./g.js'); import './h.js';\n" +
        "const i = require('./i.js'); const j = require.resolve('./j.js');",
    );
    assert.deepEqual(forms, ['./a.js', './b.js', './c.js', './d.js', './e.js', './f.js', './g.js', './h.js', './i.js', './j.js']);
  });

  it('every folder of src/ is in the table', () => {
    const unknown = [...new Set(sourceFiles(SRC).map((f) => layerOf(repoPath(f))))].filter((l) => LAYERS[l] === undefined);
    assert.deepEqual(unknown, [], `folders of src/ missing from the table of docs/architecture.md: ${unknown.join(', ')}`);
  });

  it('every import goes only where the table allows', () => {
    const broken: string[] = [];
    for (const { file, specifier, target } of local) {
      if (!target.startsWith('src/')) {
        broken.push(`${file} imports '${specifier}', outside src/: src/ imports only src/ and packages`);
        continue;
      }
      const from = layerOf(file);
      const to = layerOf(target);
      const allowed = LAYERS[from] ?? [];
      if (from !== to && !allowed.includes(to)) {
        broken.push(`${file} imports '${specifier}' (${to}): rule "${from} may import ${allowed.length > 0 ? allowed.join(', ') : 'nothing else in src/'}"`);
      }
    }
    assert.deepEqual(broken, [], `imports against the layering (docs/architecture.md):\n  ${broken.join('\n  ')}`);
  });

  it('the table itself has no cycle', () => {
    const graph = new Map<string, Set<string>>();
    for (const [from, tos] of Object.entries(LAYERS)) for (const to of tos) addEdge(graph, from, to);
    const cycle = findCycle(graph);
    assert.equal(cycle, undefined, `the table of docs/architecture.md has a cycle: ${cycle?.join(' -> ')}`);
  });

  it('no cycle between folders', () => {
    const graph = new Map<string, Set<string>>();
    const witness = new Map<string, string>();
    for (const { file, specifier, target } of local) {
      const [from, to] = [layerOf(file), layerOf(target)];
      if (from === to) continue;
      addEdge(graph, from, to);
      if (!witness.has(`${from} ${to}`)) witness.set(`${from} ${to}`, `${file} imports '${specifier}'`);
    }
    const cycle = findCycle(graph);
    const steps = cycle?.slice(1).map((to, n) => witness.get(`${cycle[n]} ${to}`) ?? '');
    assert.equal(cycle, undefined, `folders import each other in a circle: ${cycle?.join(' -> ')}\n  ${steps?.join('\n  ')}`);
  });

  it('no cycle between files, type-only imports included', () => {
    const graph = new Map<string, Set<string>>();
    for (const { file, target } of local) addEdge(graph, file, target);
    const cycle = findCycle(graph);
    assert.equal(cycle, undefined, `files import each other in a circle: ${cycle?.join(' -> ')}`);
  });

  it('the table keeps the tools apart: a tool imports only tools, entry and the shared leaves; no product folder imports a tool', () => {
    const broken: string[] = [];
    for (const [layer, allowed] of Object.entries(LAYERS)) {
      const wrong = isTool(layer) ? allowed.filter((l) => !isTool(l) && l !== 'entry' && !SHARED_LEAVES.includes(l)) : allowed.filter(isTool);
      if (wrong.length > 0) broken.push(`${layer} may import ${wrong.join(', ')}`);
    }
    assert.deepEqual(broken, [], 'rows of docs/architecture.md that mix the tools and the product');
  });
});

/** An entry module's exported names, and the modules it re-exports from (`export ... from`, `export *`). */
function entryExports(file: string): { names: string[]; reExports: { specifier: string; star: boolean }[] } {
  const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const names: string[] = [];
  const reExports: { specifier: string; star: boolean }[] = [];
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement)) {
      const clause = statement.exportClause;
      if (clause && ts.isNamedExports(clause)) names.push(...clause.elements.map((e) => e.name.text));
      if (statement.moduleSpecifier && ts.isStringLiteral(statement.moduleSpecifier))
        reExports.push({ specifier: statement.moduleSpecifier.text, star: clause === undefined || !ts.isNamedExports(clause) });
      continue;
    }
    const exported = ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (!exported) continue;
    if (ts.isVariableStatement(statement)) {
      for (const d of statement.declarationList.declarations) if (ts.isIdentifier(d.name)) names.push(d.name.text);
    } else if (
      (ts.isFunctionDeclaration(statement) ||
        ts.isClassDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) ||
        ts.isEnumDeclaration(statement)) &&
      statement.name
    ) {
      names.push(statement.name.text);
    }
  }
  return { names: names.sort(), reExports };
}

describe("architecture: the tools' way in (src/entry)", () => {
  const entryFiles = readdirSync(join(SRC, 'entry'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `src/entry/${f}`)
    .sort();
  const documented = readEntryExports(DOC);

  it(`there are at most ${MAX_ENTRY_MODULES} entry modules, each listed in docs/architecture.md`, () => {
    assert.ok(entryFiles.length <= MAX_ENTRY_MODULES, `${entryFiles.length} entry modules: ${entryFiles.join(', ')}`);
    assert.deepEqual([...documented.keys()].sort(), entryFiles);
  });

  it('each entry module exports exactly the names docs/architecture.md lists for it', () => {
    for (const file of entryFiles) assert.deepEqual(entryExports(file).names, [...(documented.get(file) ?? [])].sort(), `${file} against docs/architecture.md`);
  });

  it('no entry module re-exports what translator, servers or xds keep inside, nor a whole module', () => {
    const broken: string[] = [];
    for (const file of entryFiles) {
      for (const { specifier, star } of entryExports(file).reExports) {
        const target = repoPath(resolve(dirname(join(ROOT, file)), specifier)).replace(/\.js$/, '.ts');
        if (star) broken.push(`${file}: export * from '${specifier}'`);
        else if (INSIDE_LAYERS.includes(layerOf(target)) && !PUBLIC_INSIDE_MODULES.includes(target)) broken.push(`${file} re-exports '${specifier}'`);
      }
    }
    assert.deepEqual(broken, []);
  });
});
