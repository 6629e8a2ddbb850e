// Pure parts of the freshness bench (freshness.ts): what one timed CRD change
// showed on each path, and the figures over many samples. Times are
// milliseconds from the change's request being sent (performance.now()).
import { type Distribution, distribution } from './convergenceProbes.js';

/** When one apiserver's own document, and the merged document through its proxy path, first showed the change (undefined: not within the cap). */
export interface PathTiming {
  apiserver: string;
  ownMs?: number;
  throughMs?: number;
  /** When it never showed the change: the last answer its poll got (a status, or an error). */
  ownLast?: string;
  throughLast?: string;
}

/** One timed change: a CRD created (its group listed) or deleted (its group gone). */
export interface FreshnessSample {
  change: 'created' | 'deleted';
  group: string;
  paths: PathTiming[];
}

/** Figures of one kind of change on one side. */
export interface ChangeFigures {
  /** Until the change showed through every path (capped samples count at the cap). */
  every: Distribution;
  /** Until the apiserver the CRD was changed on showed it in its own document (the same clock). */
  local: Distribution;
  /** Per sample, the largest (through the path) - (its own apiserver), over paths: > 0 is staler than the apiserver. */
  lag: Distribution;
  /** Samples in which some path never showed it within the cap. */
  capped: number;
}

/** A sample's time until every path showed the change; the cap when one never did. */
export function everyPathMs(sample: FreshnessSample, capMs: number): number {
  return Math.max(...sample.paths.map((p) => p.throughMs ?? capMs));
}

/** How much later than its own apiserver the slowest path showed the change (capped: from the cap). */
export function lagMs(sample: FreshnessSample, capMs: number): number {
  return Math.max(...sample.paths.map((p) => (p.throughMs ?? capMs) - (p.ownMs ?? capMs)));
}

/** The figures of samples of one change, `local` read from the apiserver named `local`. */
export function changeFigures(samples: readonly FreshnessSample[], local: string, capMs: number): ChangeFigures {
  return {
    every: distribution(samples.map((s) => everyPathMs(s, capMs))),
    local: distribution(samples.map((s) => s.paths.find((p) => p.apiserver === local)?.ownMs ?? capMs)),
    lag: distribution(samples.map((s) => lagMs(s, capMs))),
    capped: samples.filter((s) => s.paths.some((p) => p.throughMs === undefined)).length,
  };
}

/**
 * `freshness_<case>_<change>_<side>_<figure>_<p50|p90|max>_ms` for every
 * figure, the capped counts, and the samples timed (`_samples`: a deletion is
 * timed only once every path listed the CRD, so a side may have fewer).
 */
export function freshnessSummary(cases: Record<string, Record<string, Partial<Record<FreshnessSample['change'], ChangeFigures>>>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [caseName, sides] of Object.entries(cases)) {
    for (const [side, changes] of Object.entries(sides)) {
      for (const [change, f] of Object.entries(changes)) {
        const key = `freshness_${caseName}_${change}_${side}`;
        for (const figure of ['every', 'local', 'lag'] as const) {
          const d = f[figure];
          out[`${key}_${figure}_p50_ms`] = d.p50Ms;
          out[`${key}_${figure}_p90_ms`] = d.p90Ms;
          out[`${key}_${figure}_max_ms`] = d.maxMs;
        }
        out[`${key}_capped`] = f.capped;
        out[`${key}_samples`] = f.every.samples;
      }
    }
  }
  return out;
}
