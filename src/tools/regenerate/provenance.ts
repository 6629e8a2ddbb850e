// What a committed artefact says of how it was made: the commit (and whether
// the tree was clean), when, how long, how many runs, and the machine's load
// around it. Pure once its readings are given (readProvenance takes them).
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';

/** What the figures measure, by git tree hash: a set made across commits describes one code when these agree. */
export const MEASURED_CODE = ['src', 'envoy', 'proto', 'package-lock.json'] as const;
export type MeasuredCode = Record<(typeof MEASURED_CODE)[number], string>;

export interface GitState {
  commit: string;
  clean: boolean;
  code: MeasuredCode;
}

export interface Provenance {
  commit: string;
  /** The hashes of what was measured at `commit` (MEASURED_CODE). */
  code: MeasuredCode;
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

/** The repository's commit, whether its tracked files and anything outside docs/ are as committed, and the measured code's hashes. */
export function gitState(repo: string): GitState {
  const git = (...args: string[]): string => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' }).trim();
  const commit = git('rev-parse', 'HEAD');
  // What regenerate itself writes (docs/) does not make the tree unclean; anything else does.
  const changed = git('status', '--porcelain')
    .split('\n')
    .filter((line) => line !== '' && !/^.. docs\//.test(line) && !/^.. README\.md$/.test(line));
  return { commit, clean: changed.length === 0, code: codeAt(repo, commit) };
}

/** The measured code's hashes at `commit`. */
export function codeAt(repo: string, commit: string): MeasuredCode {
  const hash = (path: string): string => execFileSync('git', ['-C', repo, 'rev-parse', `${commit}:${path}`], { encoding: 'utf8' }).trim();
  return Object.fromEntries(MEASURED_CODE.map((path) => [path, hash(path)])) as MeasuredCode;
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
    code: git.code,
    clean: git.clean,
    command: part.command,
    runs: part.runs,
    started_at: new Date(timing.startedAt).toISOString(),
    duration_s: Math.round((timing.endedAt - timing.startedAt) / 1000),
    cpus: cpuCount,
    load_average: { start: timing.loadStart, end: timing.loadEnd },
  };
}

/**
 * Why a committed artefact does not describe the code of `current`, or
 * undefined when it does: made from a clean tree whose measured code
 * (MEASURED_CODE; `madeCode`, read from its commit when it did not record
 * it) is the same, whatever commit it was.
 */
export function staleness(made: Partial<Provenance> | undefined, madeCode: MeasuredCode | undefined, current: GitState): string | undefined {
  if (made?.commit === undefined || madeCode === undefined) return 'no provenance: made before `regenerate` recorded what it measured';
  if (made.clean !== true) return `made from a tree with uncommitted changes (at ${made.commit.slice(0, 7)})`;
  const differ = MEASURED_CODE.filter((path) => madeCode[path] !== current.code[path]);
  return differ.length === 0 ? undefined : `made at ${made.commit.slice(0, 7)}; changed since, as of ${current.commit.slice(0, 7)}: ${differ.join(', ')}`;
}
