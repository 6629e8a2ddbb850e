// Several runs of one bench part, as one committed JSON: pure. Each figure of
// the flat `summary` becomes the median of the valid runs, and `spread` gives
// its minimum, maximum and every run's value; a run in which any request
// failed is void (left out of both, and listed with where it failed), so a
// figure never counts work that was not done.

/** A bench part's JSON: a flat `summary` of figures, and its details. */
export interface PartRun {
  summary: Record<string, number>;
  [detail: string]: unknown;
}

export interface FigureSpread {
  median: number;
  min: number;
  max: number;
  /** Every valid run's value, in run order. */
  runs: number[];
}

export interface VoidRun {
  /** 1-based, in the order the runs were made. */
  run: number;
  /** Where requests failed: the JSON path of each nonzero `errors` (or `failed`) count, with the count. */
  failures: string[];
}

export interface CombinedRuns {
  /** Medians of the valid runs: what the docs' figures read. */
  summary: Record<string, number>;
  spread: Record<string, FigureSpread>;
  valid_runs: number;
  void_runs: VoidRun[];
  /** The details (everything but the summary) of the first valid run, which the docs' detailed tables read. */
  details_from_run: number;
}

/** The median of a non-empty list (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const upper = sorted[mid] ?? Number.NaN;
  return sorted.length % 2 === 1 ? upper : ((sorted[mid - 1] ?? Number.NaN) + upper) / 2;
}

const FAILURE_KEYS = new Set(['errors', 'failed']);

/** Every nonzero request-failure count in a run's JSON, as `path: count`. */
export function failuresIn(value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => failuresIn(v, `${path}[${i}]`));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, v]) => {
    const at = path === '' ? key : `${path}.${key}`;
    if (FAILURE_KEYS.has(key) && typeof v === 'number') return v === 0 ? [] : [`${at}: ${v}`];
    return failuresIn(v, at);
  });
}

/** Combines runs of one part; throws when no run is valid (nothing to publish). */
export function combineRuns(runs: readonly PartRun[]): CombinedRuns & Omit<PartRun, 'summary'> {
  const voidRuns: VoidRun[] = [];
  const valid: Array<{ index: number; run: PartRun }> = [];
  runs.forEach((run, i) => {
    const failures = failuresIn(run);
    if (failures.length > 0) voidRuns.push({ run: i + 1, failures });
    else valid.push({ index: i + 1, run });
  });
  const first = valid[0];
  if (first === undefined) throw new Error(`every one of the ${runs.length} runs is void: ${JSON.stringify(voidRuns)}`);
  const keys = [...new Set(valid.flatMap(({ run }) => Object.keys(run.summary)))];
  const spread: Record<string, FigureSpread> = {};
  const summary: Record<string, number> = {};
  for (const key of keys) {
    const values = valid.map(({ run }) => run.summary[key]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    if (values.length === 0) continue;
    summary[key] = round3(median(values));
    spread[key] = { median: summary[key], min: Math.min(...values), max: Math.max(...values), runs: values };
  }
  const { summary: _firstSummary, ...details } = first.run;
  return { ...details, summary, spread, valid_runs: valid.length, void_runs: voidRuns, details_from_run: first.index };
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}
