// What a committed artefact says of how it was made: the commit (and whether
// the tree was clean), when, how long, how many runs, and the machine's load
// around it, and which measured code it describes (MEASURED_ROOTS but
// NOT_MEASURED, by git blob hash): a set made across commits that changed
// only the docs, their renderers, this bookkeeping or help text still
// describes one code.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpus, loadavg } from 'node:os';

/** Where what a measurement runs lives: the product, the tools that measure, and what they are built from. */
export const MEASURED_ROOTS = ['src', 'envoy', 'proto', 'package-lock.json'] as const;
/** Under those, what no measurement runs: the docs' renderers, how provenance is recorded and checked, and the developer CLI's help text. */
export const NOT_MEASURED = ['src/tools/docs/', 'src/tools/regenerate/provenance.ts', 'src/tools/cli/regenerate.ts', 'src/tools/cli/usage.ts'] as const;

/** The measured code at a commit: each file's path and git blob hash. */
export type MeasuredFiles = ReadonlyMap<string, string>;

export interface GitState {
  commit: string;
  clean: boolean;
  files: MeasuredFiles;
}

export interface Provenance {
  commit: string;
  /** A digest of the measured files at `commit` (measuredDigest): equal digests, the same code measured. */
  code: string;
  /** No change to tracked files, nothing untracked outside docs/: the figures describe `commit` itself. */
  clean: boolean;
  command: string;
  runs: number;
  started_at: string;
  duration_s: number;
  cpus: number;
  /** The 1-minute load average when the part began and ended (above the CPU count: the machine was saturated). */
  load_average: { start: number; end: number };
}

/** The repository's commit, whether its tracked files and anything outside docs/ are as committed, and the measured files. */
export function gitState(repo: string): GitState {
  const commit = execFileSync('git', ['-C', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  // Not trimmed: a porcelain line starts with its two status columns, the first often a space.
  const changed = execFileSync('git', ['-C', repo, 'status', '--porcelain'], { encoding: 'utf8' })
    .split('\n')
    // What regenerate itself writes (docs/, README.md) does not make the tree unclean; anything else does.
    .filter((line) => line !== '' && !/^.. (docs\/|README\.md$)/.test(line));
  return { commit, clean: changed.length === 0, files: measuredFilesAt(repo, commit) };
}

/** The measured files at `commit` (MEASURED_ROOTS but NOT_MEASURED). */
export function measuredFilesAt(repo: string, commit: string): MeasuredFiles {
  const listing = execFileSync('git', ['-C', repo, 'ls-tree', '-r', commit, '--', ...MEASURED_ROOTS], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const files = new Map<string, string>();
  for (const line of listing.split('\n')) {
    const [meta, path] = line.split('\t');
    const hash = meta?.split(' ')[2];
    if (path !== undefined && hash !== undefined && !NOT_MEASURED.some((excluded) => path.startsWith(excluded))) files.set(path, hash);
  }
  return files;
}

/** One digest of the measured files, recorded in each JSON. */
export function measuredDigest(files: MeasuredFiles): string {
  const sha = createHash('sha256');
  for (const path of [...files.keys()].sort()) sha.update(`${path} ${files.get(path)}\n`);
  return sha.digest('hex');
}

/** The 1-minute load average now. */
export function loadNow(): number {
  return Math.round((loadavg()[0] ?? 0) * 100) / 100;
}

export function provenance(
  git: GitState,
  part: { command: string; runs: number },
  timing: { startedAt: number; endedAt: number; loadStart: number; loadEnd: number },
  cpuCount: number = cpus().length,
): Provenance {
  return {
    commit: git.commit,
    code: measuredDigest(git.files),
    clean: git.clean,
    command: part.command,
    runs: part.runs,
    started_at: new Date(timing.startedAt).toISOString(),
    duration_s: Math.round((timing.endedAt - timing.startedAt) / 1000),
    cpus: cpuCount,
    load_average: { start: timing.loadStart, end: timing.loadEnd },
  };
}

/** The measured files that differ between two listings: changed, added or removed. */
export function changedFiles(made: MeasuredFiles, current: MeasuredFiles): string[] {
  const paths = new Set([...made.keys(), ...current.keys()]);
  return [...paths].filter((path) => made.get(path) !== current.get(path)).sort();
}

/**
 * Why a committed artefact does not describe the code of `current`, or
 * undefined when it does: made from a clean tree whose measured files
 * (`madeFiles`, read from its commit) are HEAD's, whatever commit it was.
 */
export function staleness(made: Partial<Provenance> | undefined, madeFiles: MeasuredFiles | undefined, current: GitState): string | undefined {
  if (made?.commit === undefined || madeFiles === undefined) return 'no provenance: made before `regenerate` recorded what it measured';
  if (made.clean !== true) return `made from a tree with uncommitted changes (at ${made.commit.slice(0, 7)})`;
  const differ = changedFiles(madeFiles, current.files);
  if (differ.length === 0) return undefined;
  const named = differ.slice(0, 3).join(', ') + (differ.length > 3 ? ` and ${differ.length - 3} more` : '');
  return `made at ${made.commit.slice(0, 7)}; changed since, as of ${current.commit.slice(0, 7)}: ${named}`;
}
