// `mvproxy-dev regenerate [--runs N] [--parts a,b,...] [--allow-dirty] | --check`: makes
// every committed measurement under docs/ again (regenerate/parts.ts), each
// with its provenance (the commit, how long, the machine's load), bench parts
// from N runs with their spread, then the docs' figures from them. A set can be
// made in parts across sessions: every part records the commit it measured,
// and `--check` says which committed ones describe the code of HEAD.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { selectParts, type Part } from '../regenerate/parts.js';
import { gitState, measuredFilesAt, loadNow, provenance, staleness, type Provenance } from '../regenerate/provenance.js';
import { combineRuns, type PartRun } from '../regenerate/spread.js';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
const DEV_CLI = fileURLToPath(new URL('./main.js', import.meta.url));
const FIGURES = fileURLToPath(new URL('../docs/figures.js', import.meta.url));

export async function runRegenerateCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      runs: { type: 'string', default: '3' },
      parts: { type: 'string' },
      'allow-dirty': { type: 'boolean', default: false },
      check: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.check) return checkCommitted(selectParts(values.parts));
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs: a whole number from 1, got ${values.runs}`);
  const parts = selectParts(values.parts);
  const git = gitState(REPO);
  if (!git.clean && !values['allow-dirty']) {
    throw new Error(`uncommitted changes outside docs/ (git status): figures must describe a commit; commit first, or --allow-dirty to record clean: false`);
  }
  const progress = (line: string): void => void process.stderr.write(`[regenerate] ${line}\n`);
  for (const part of parts) {
    const startedAt = Date.now();
    const loadStart = loadNow();
    progress(`${part.name}: ${part.runs === 'once' ? 'rendering' : `${runs} run(s)`} (load ${loadStart})`);
    if (part.runs === 'once') {
      await run([FIGURES]);
      continue;
    }
    const file = join(REPO, part.outputs[0] ?? '');
    const body = part.runs === 'itself' ? await measureItself(part, runs, file) : await measureRepeated(part, runs, progress);
    const made = provenance(
      git,
      { command: `mvproxy-dev ${part.args(runs, part.outputs[0] ?? '').join(' ')}`, runs },
      {
        startedAt,
        endedAt: Date.now(),
        loadStart,
        loadEnd: loadNow(),
      },
    );
    writeFileSync(file, `${JSON.stringify({ provenance: made, ...body }, null, 2)}\n`);
    progress(`${part.name}: ${made.duration_s} s, load ${made.load_average.start} -> ${made.load_average.end}; wrote ${part.outputs.join(', ')}`);
  }
  return 0;
}

/** Prints, for each part's committed JSON, whether it describes the code of HEAD (provenance.ts staleness); 1 when one does not. */
function checkCommitted(parts: readonly Part[]): number {
  const current = gitState(REPO);
  let stale = 0;
  for (const part of parts.filter((p) => p.runs !== 'once')) {
    const file = part.outputs[0] ?? '';
    const made = existsSync(join(REPO, file))
      ? (JSON.parse(readFileSync(join(REPO, file), 'utf8')) as { provenance?: Partial<Provenance> }).provenance
      : undefined;
    const madeFiles = made?.commit === undefined ? undefined : measuredFilesAt(REPO, made.commit);
    const why = staleness(made, madeFiles, current);
    if (why !== undefined) stale++;
    const when = made?.started_at === undefined ? '' : `, ${made.runs} run(s) from ${made.started_at}, ${made.duration_s} s`;
    process.stdout.write(`${file}: ${why ?? `describes ${current.commit.slice(0, 7)}'s code${when}`}\n`);
  }
  return stale === 0 ? 0 : 1;
}

/** A part that takes --runs itself: its JSON as it wrote it. */
async function measureItself(part: Part, runs: number, file: string): Promise<Record<string, unknown>> {
  await run([DEV_CLI, ...part.args(runs, file)]);
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** A bench part run `runs` times, each in a fresh process, combined (spread.ts). */
async function measureRepeated(part: Part, runs: number, progress: (line: string) => void): Promise<Record<string, unknown>> {
  const scratch = mkdtempSync(join(tmpdir(), `mvproxy-${part.name}-`));
  try {
    const results: PartRun[] = [];
    for (let i = 1; i <= runs; i++) {
      progress(`${part.name}: run ${i} of ${runs}`);
      const out = join(scratch, `run-${i}.json`);
      await run([DEV_CLI, ...part.args(runs, out)]);
      results.push(JSON.parse(readFileSync(out, 'utf8')) as PartRun);
    }
    const combined = combineRuns(results);
    for (const v of combined.void_runs) progress(`${part.name}: run ${v.run} is void (requests failed): ${v.failures.join('; ')}`);
    return combined;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Runs node with `args`, its progress on our stderr (its stdout, the JSON again, dropped); rejects on failure. */
function run(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`${args.join(' ')}: ${signal ?? `exit ${code}`}`))));
  });
}
