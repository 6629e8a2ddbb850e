// The control-plane image (deploy/Dockerfile) holds the product and its
// runtime dependencies only: no tool, no test, no dev dependency. No image
// can be built here, so this reads the Dockerfile: what its last stage
// copies, what its build stage compiles (tsconfig.product.json), what the
// product imports against package.json's dependencies, and what the copies
// weigh (from the dist/ of `npm run build`, which compiles the same files).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { builtinModules } from 'node:module';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { moduleSpecifiers } from '../../support/moduleSpecifiers.js';

/** The repository: this file runs as dist/test/unit/deploy/dockerImage.test.js. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const DOCKERFILE = join(ROOT, 'deploy', 'Dockerfile');
const DOCKERIGNORE = join(ROOT, 'deploy', 'Dockerfile.dockerignore');
const PRODUCT_TSCONFIG = join(ROOT, 'tsconfig.product.json');

/**
 * Where tools, tests and dev dependencies are, in the checkout and in the
 * build stage (which holds the sources, dev dependencies included, and a
 * dist/ of the product alone): the image copies nothing that holds or lies
 * in one of them.
 */
const NOT_PRODUCT = {
  context: ['src/tools', 'test', 'dist', 'node_modules'],
  build: ['src', 'test', 'node_modules'],
} as const;

interface Copy {
  /** The stage copied from, or undefined for the build context. */
  from: string | undefined;
  /** As repository paths: a build-stage path has that stage's WORKDIR taken off ("dist/src"). */
  sources: string[];
  destination: string;
}

interface Stage {
  name: string | undefined;
  workdir: string;
  runs: string[];
  copies: Copy[];
}

/** The stages of a Dockerfile: continuation lines joined, comments dropped. */
function readStages(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const line of text.replace(/\\\n/g, ' ').split('\n')) {
    const [instruction = '', ...args] = line.trim().split(/\s+/);
    const stage = stages.at(-1);
    switch (instruction.toUpperCase()) {
      case 'FROM':
        stages.push({ name: args[1]?.toUpperCase() === 'AS' ? args[2] : undefined, workdir: '/', runs: [], copies: [] });
        break;
      case 'WORKDIR':
        if (stage) stage.workdir = posix.resolve(stage.workdir, args[0] ?? '');
        break;
      case 'RUN':
        stage?.runs.push(args.join(' '));
        break;
      case 'COPY': {
        const from = args.find((a) => a.startsWith('--from='))?.slice('--from='.length);
        const paths = args.filter((a) => !a.startsWith('--'));
        const destination = paths.pop() ?? '';
        const workdir = stages.find((s) => s.name === from)?.workdir ?? '/';
        const sources = paths.map((p) => (from === undefined ? posix.normalize(p) : posix.relative(workdir, p)));
        stage?.copies.push({ from, sources, destination });
        break;
      }
    }
  }
  return stages;
}

/** True when `path` is `folder` or lies inside it. */
function within(path: string, folder: string): boolean {
  const [p, f] = [posix.normalize(path), posix.normalize(folder)];
  return p === f || p.startsWith(`${f}/`);
}

/** True when `a` is `b` or holds it, or lies inside it. */
function overlaps(a: string, b: string): boolean {
  return posix.normalize(a) === '.' || within(a, b) || within(b, a);
}

let productFilesRead: string[] | undefined;

/** The .ts files tsconfig.product.json compiles, as repository paths. */
function productFiles(): string[] {
  if (productFilesRead) return productFilesRead;
  const config = ts.readConfigFile(PRODUCT_TSCONFIG, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  productFilesRead = parsed.fileNames.map((f) => relative(ROOT, f)).sort();
  return productFilesRead;
}

/** "@grpc/grpc-js/build/x" -> "@grpc/grpc-js"; "yaml" -> "yaml"; a Node built-in or a relative path -> undefined. */
function packageName(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Bytes of a file, or of every file under a folder. */
function bytes(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + bytes(join(path, name)), 0);
}

const stages = readStages(readFileSync(DOCKERFILE, 'utf8'));
const last = stages.at(-1);
const build = stages.find((s) => s.name === 'build');
const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; scripts: Record<string, string> };

describe('the control-plane image (deploy/Dockerfile)', () => {
  it('has a build stage and a last stage that copies from it', () => {
    assert.ok(build && last && build !== last, 'a stage named build, then the image');
    assert.ok(last.copies.some((c) => c.from === 'build'));
  });

  it('copies nothing of the tools, the tests or the dev dependencies into the image', () => {
    const wrong: string[] = [];
    for (const copy of last?.copies ?? []) {
      const notProduct = copy.from === undefined ? NOT_PRODUCT.context : NOT_PRODUCT.build;
      for (const source of copy.sources) if (notProduct.some((path) => overlaps(source, path))) wrong.push(`${copy.from ?? 'checkout'}: ${source}`);
    }
    assert.deepEqual(wrong, []);
  });

  it('builds the product alone: tsconfig.product.json compiles no tool and no test, and its files import only each other', () => {
    assert.ok(
      build?.runs.some((r) => r.includes('npm run build:product')),
      'the build stage runs npm run build:product',
    );
    assert.match(packageJson.scripts['build:product'] ?? '', /tsc -p tsconfig\.product\.json/);
    const files = productFiles();
    assert.ok(files.includes('src/cli/main.ts') && files.includes('src/serve/controlPlane.ts'), 'the product is compiled');
    assert.deepEqual(
      files.filter((f) => NOT_PRODUCT.context.some((path) => overlaps(f, path))),
      [],
    );
    const compiled = new Set(files);
    const outside: string[] = [];
    for (const file of files.filter((f) => !f.startsWith('src/generated/'))) {
      for (const specifier of moduleSpecifiers(file, readFileSync(join(ROOT, file), 'utf8')).filter((s) => s.startsWith('.'))) {
        const target = posix.join(posix.dirname(file), specifier).replace(/\.js$/, '.ts');
        if (!compiled.has(target)) outside.push(`${file} imports ${specifier}`);
      }
    }
    assert.deepEqual(outside, [], 'a product file imports a file the product build leaves out');
  });

  it("installs the runtime dependencies alone, and they are exactly the packages the product's code loads", () => {
    assert.ok(
      last?.runs.some((r) => /npm ci\b.*--omit=dev/.test(r)),
      'the image runs npm ci --omit=dev',
    );
    const loaded = new Set<string>();
    for (const file of productFiles().filter((f) => !f.startsWith('src/generated/'))) {
      for (const specifier of moduleSpecifiers(file, readFileSync(join(ROOT, file), 'utf8'))) {
        const name = packageName(specifier);
        if (name !== undefined) loaded.add(name);
      }
    }
    assert.deepEqual([...loaded].sort(), Object.keys(packageJson.dependencies).sort(), "package.json's dependencies against what the product loads");
  });

  it('its build context leaves out the tools, the tests and local builds, and keeps what the Dockerfile copies from it', () => {
    const ignored = readFileSync(DOCKERIGNORE, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    for (const path of ['src/tools', 'test', 'dist', 'node_modules']) assert.ok(ignored.includes(path), `${path} in Dockerfile.dockerignore`);
    const fromContext = stages.flatMap((s) => s.copies.filter((c) => c.from === undefined).flatMap((c) => c.sources));
    for (const source of fromContext) {
      assert.ok(existsSync(join(ROOT, source)), `${source} exists`);
      assert.ok(!ignored.some((pattern) => within(source, pattern)), `${source} is not left out of the context`);
    }
  });

  it('what the image copies, in bytes (printed), is the product dist/ alone', (t) => {
    // dist/ is `npm run build`'s: the same compiler options over src/ and test/; of it the image holds the product files' output.
    const dist = join(ROOT, 'dist');
    const sizes: Record<string, number> = {};
    for (const copy of last?.copies ?? []) {
      for (const source of copy.sources) {
        if (copy.from === 'build' && source === 'dist/src') {
          const outputs = productFiles().flatMap((f) => [f.replace(/\.ts$/, '.js'), f.replace(/\.ts$/, '.js.map')]);
          const missing = outputs.filter((o) => !existsSync(join(dist, o)));
          assert.deepEqual(missing.slice(0, 5), [], 'the product is built in dist/ (npm run build)');
          sizes[source] = outputs.reduce((sum, o) => sum + bytes(join(dist, o)), 0);
        } else {
          sizes[source] = bytes(join(ROOT, source));
        }
      }
    }
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
    const runtime = Object.entries(lock.packages).filter(([path, p]) => path !== '' && !p.dev && !path.slice('node_modules/'.length).includes('node_modules/'));
    const dependencies = runtime.reduce((sum, [path]) => sum + (existsSync(join(ROOT, path)) ? bytes(join(ROOT, path)) : 0), 0);
    const total = Object.values(sizes).reduce((a, b) => a + b, 0);
    const mb = (n: number): string => `${(n / 2 ** 20).toFixed(2)} MiB`;
    for (const [source, size] of Object.entries(sizes)) t.diagnostic(`${source}: ${size} bytes (${mb(size)})`);
    t.diagnostic(`copied from the checkout and the build stage: ${total} bytes (${mb(total)}); all of dist/ would be ${mb(bytes(dist))}`);
    t.diagnostic(`runtime dependencies (npm ci --omit=dev, ${runtime.length} packages, as installed here): ${mb(dependencies)}`);
    assert.ok(total > 0 && total < bytes(dist) + bytes(join(ROOT, 'proto')), 'the image holds less than dist/ and proto/');
  });
});
