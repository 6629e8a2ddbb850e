// What a committed artefact says of how it was made: the commit (and whether
// the tree was clean), when, how long, how many runs, and the machine's load
// around it. Pure once its readings are given (readProvenance takes them).
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';

export interface Provenance {
  commit: string;
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

/** The repository's commit, and whether its tracked files and anything outside docs/ are as committed. */
export function gitState(repo: string): { commit: string; clean: boolean } {
  const git = (...args: string[]): string => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' }).trim();
  const commit = git('rev-parse', 'HEAD');
  // What regenerate itself writes (docs/) does not make the tree unclean; anything else does.
  const changed = git('status', '--porcelain')
    .split('\n')
    .filter((line) => line !== '' && !/^.. docs\//.test(line) && !/^.. README\.md$/.test(line));
  return { commit, clean: changed.length === 0 };
}

/** The 1-minute load average now. */
export function loadNow(): number {
  return Math.round((loadavg()[0] ?? 0) * 100) / 100;
}

export function provenance(
  git: { commit: string; clean: boolean },
  part: { command: string; runs: number },
  timing: { startedAt: number; endedAt: number; loadStart: number; loadEnd: number },
  cpuCount: number = cpus().length,
): Provenance {
  return {
    commit: git.commit,
    clean: git.clean,
    command: part.command,
    runs: part.runs,
    started_at: new Date(timing.startedAt).toISOString(),
    duration_s: Math.round((timing.endedAt - timing.startedAt) / 1000),
    cpus: cpuCount,
    load_average: { start: timing.loadStart, end: timing.loadEnd },
  };
}
