// The layering of src/ (docs/architecture.md), enforced: every import and
// export-from of every module under src/ (type-only ones and dynamic import()
// included) goes only where the table below allows, and neither the folders
// nor the files import each other in a circle.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository: this file runs as dist/test/unit/architecture.test.js. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SRC = join(ROOT, 'src');

/**
 * Which folder of src/ (or top-level module: src/metrics.ts is "metrics") may
 * import which, besides itself. Mirrored in docs/architecture.md; change both
 * together. Bottom up: leaves, the pipeline (sources -> model -> planner ->
 * translator -> servers), the wiring (serve), the tools, the CLI.
 */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  // Leaves.
  generated: [],
  util: [],
  metrics: ['util'],
  // What the control plane knows and decides, as plain data and pure functions.
  model: ['util'],
  planner: ['model', 'util'],
  discovery: ['model', 'util'],
  xds: ['generated', 'util'],
  translator: ['planner', 'model', 'xds', 'generated', 'util'],
  // The outside world in (sources) and out (servers); serve wires them.
  sources: ['model', 'xds', 'metrics', 'generated', 'util'],
  servers: ['translator', 'planner', 'discovery', 'model', 'xds', 'metrics', 'generated', 'util'],
  serve: ['servers', 'sources', 'translator', 'planner', 'discovery', 'model', 'xds', 'metrics', 'generated', 'util'],
  // Tools: pure renderers first, then what runs clusters and measures them.
  deploy: ['xds', 'util'],
  dashboard: ['xds', 'util'],
  install: ['util'],
  sandbox: ['deploy', 'install', 'xds', 'util'],
  bench: ['sandbox', 'deploy', 'install', 'servers', 'translator', 'planner', 'model', 'xds', 'metrics', 'generated', 'util'],
  upgradeTest: ['sandbox', 'deploy', 'install', 'servers', 'model', 'xds', 'generated', 'util'],
  // The top: every command.
  cli: [
    'bench',
    'upgradeTest',
    'sandbox',
    'install',
    'dashboard',
    'deploy',
    'serve',
    'servers',
    'sources',
    'translator',
    'planner',
    'discovery',
    'model',
    'xds',
    'metrics',
    'generated',
    'util',
  ],
};

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

/** Every module specifier of a file: import, import type, export ... from, import(), import('x').T, import x = require(). */
function moduleSpecifiers(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const literal = (node: ts.Node | undefined): void => {
    if (node && ts.isStringLiteralLike(node)) found.push(node.text);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) literal(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) literal(node.moduleReference.expression);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) literal(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) literal(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** "src/planner/plan.ts" -> "planner"; "src/metrics.ts" -> "metrics". */
function layerOf(file: string): string {
  const parts = relative('src', file).split('/');
  return parts.length === 1 ? (parts[0] ?? '').replace(/\.(ts|js)$/, '') : (parts[0] ?? '');
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

  it('reads every layer, and every form of import', () => {
    const layers = new Set(sourceFiles(SRC).map((f) => layerOf(repoPath(f))));
    for (const layer of Object.keys(LAYERS).filter((l) => l !== 'generated')) assert.ok(layers.has(layer), `no file read from src/${layer}`);
    assert.ok(local.length > 500, `only ${local.length} imports of src/ files read`);
    // The parser sees every form, type-only and dynamic ones included.
    const forms = moduleSpecifiers(
      'forms.ts',
      "import a from './a.js'; import type { B } from './b.js'; export { c } from './c.js'; export * from './d.js';\n" +
        "const e = await import('./e.js'); type F = import('./f.js').F; import g = require('./g.js'); import './h.js';",
    );
    assert.deepEqual(forms, ['./a.js', './b.js', './c.js', './d.js', './e.js', './f.js', './g.js', './h.js']);
  });

  it('every folder of src/ is in the table', () => {
    const unknown = [...new Set(sourceFiles(SRC).map((f) => layerOf(repoPath(f))))].filter((l) => LAYERS[l] === undefined);
    assert.deepEqual(unknown, [], `folders of src/ missing from LAYERS (test/unit/architecture.test.ts and docs/architecture.md): ${unknown.join(', ')}`);
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
    assert.equal(cycle, undefined, `LAYERS has a cycle: ${cycle?.join(' -> ')}`);
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
});
