// Every committed artefact under docs/ that a measurement makes, and the
// `mvproxy-dev` command that makes it: the one table `mvproxy-dev regenerate`
// runs (docs/benchmark.md, "Regenerating the figures").

export type PartName =
  | 'bench-side-by-side'
  | 'bench-convergence'
  | 'bench-discovery'
  | 'bench-fanout'
  | 'bench-freshness'
  | 'bench-watch-scale'
  | 'upgrade-test'
  | 'upgrade-test-1.35-1.36'
  | 'figures';

export interface Part {
  name: PartName;
  /**
   * How `--runs N` is honoured: `repeat` runs the command N times and
   * combines the runs (spread.ts); `itself` hands N to the command;
   * `once` is not a measurement (the docs' figures, rendered from the rest).
   */
  runs: 'repeat' | 'itself' | 'once';
  /** The files it writes, relative to the repository. */
  outputs: readonly string[];
  /** `mvproxy-dev` arguments; `out` is where the command writes its JSON (a scratch file for repeated parts). */
  args(runs: number, out: string): string[];
}

const benchPart = (name: PartName, only: string): Part => ({
  name,
  runs: 'repeat',
  outputs: [`docs/${name}.json`],
  args: (_runs, out) => ['bench', '--only', only, '--out', out],
});

const upgradePart = (name: PartName, pair: string): Part => ({
  name,
  runs: 'itself',
  outputs: [`docs/${name}.json`, `docs/${name}.svg`],
  args: (runs, out) => ['upgrade-test', '--pair', pair, '--mode', 'all', '--runs', String(runs), '--out', out, '--svg', out.replace(/\.json$/, '.svg')],
});

/** In the order `regenerate` runs them: the figures last, from what the others wrote. */
export const PARTS: readonly Part[] = [
  benchPart('bench-side-by-side', 'side-by-side'),
  benchPart('bench-convergence', 'convergence'),
  benchPart('bench-discovery', 'discovery'),
  benchPart('bench-fanout', 'fanout'),
  benchPart('bench-freshness', 'freshness'),
  benchPart('bench-watch-scale', 'watch-scale'),
  upgradePart('upgrade-test', '1.36-1.37'),
  upgradePart('upgrade-test-1.35-1.36', '1.35-1.36'),
  { name: 'figures', runs: 'once', outputs: ['README.md', 'docs/*.md'], args: () => [] },
];

/** The parts a `--parts a,b` list names, in PARTS' order; every part when absent. */
export function selectParts(list: string | undefined): Part[] {
  if (list === undefined) return [...PARTS];
  const names = list.split(',').map((n) => n.trim());
  const unknown = names.filter((n) => !PARTS.some((p) => p.name === n));
  if (unknown.length > 0) throw new Error(`--parts: unknown ${unknown.join(', ')}; the parts: ${PARTS.map((p) => p.name).join(', ')}`);
  return PARTS.filter((p) => names.includes(p.name));
}
