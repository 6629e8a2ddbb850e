// One measurement over several sides (entry points to the same request):
// latency with one request in flight (the Node generator: it is idle there;
// the sides taken in turn, 16 requests each),
// throughput at each asked number of requests in flight (h2load), every
// figure in alternating rounds, with ratios of a candidate side over each
// other side, pooled and round by round.
import { type H2loadProtocol, h2loadRunner } from './h2load.js';
import { type Comparison, compareAlternately, compareInterleaved, type LatencySummary, type Side } from './load.js';

export interface SideFigures {
  p50Ms?: number;
  p99Ms?: number;
  rps: number;
  requests: number;
  errors: number;
  /** CPU of the side's proxy process (the Envoy sidecar) per request, when measured. */
  proxyCpuUsPerRequest?: number;
  /** CPU of the load generator (h2load) per request: far below the servers' shows it is not the bottleneck. */
  generatorCpuUsPerRequest?: number;
}

export interface Ratios {
  p50Ratio?: number;
  p99Ratio?: number;
  throughputRatio: number;
  /** The same ratios round by round: their spread is the noise of the machine. */
  p50RatioByRound?: number[];
  throughputRatioByRound: number[];
}

export interface ComparedFigures {
  sides: Record<string, SideFigures>;
  /** The candidate over each other side, keyed by that side's name. */
  ratios: Record<string, Ratios>;
}

export const round2 = (n: number): number => Math.round(n * 100) / 100;

function sideFigures(s: LatencySummary): SideFigures {
  return {
    ...(s.p50 === undefined ? {} : { p50Ms: round2(s.p50) }),
    ...(s.p99 === undefined ? {} : { p99Ms: round2(s.p99) }),
    rps: Math.round(s.throughput),
    requests: s.requests,
    errors: s.errors,
    ...(s.cpuMicrosPerRequest === undefined ? {} : { proxyCpuUsPerRequest: Math.round(s.cpuMicrosPerRequest) }),
    ...(s.generatorCpuMicrosPerRequest === undefined ? {} : { generatorCpuUsPerRequest: Math.round(s.generatorCpuMicrosPerRequest) }),
  };
}

/** Pure: a ratio, rounded, or undefined when either side has no figure. */
function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : round2(a / b);
}

/** Pure: each side's figures and the candidate's ratios over every other side. */
export function compareFigures(c: Comparison, candidate: string): ComparedFigures {
  const mine = c.sides[candidate];
  if (!mine) throw new Error(`internal: no side ${candidate}`);
  const ratios: Record<string, Ratios> = {};
  for (const [name, other] of Object.entries(c.sides)) {
    if (name === candidate) continue;
    const byRound = (f: (s: LatencySummary) => number | undefined): Array<number | undefined> =>
      c.rounds.map((r) => {
        const a = r[candidate];
        const b = r[name];
        return a && b ? ratio(f(a), f(b)) : undefined;
      });
    const p50ByRound = byRound((s) => s.p50);
    const entry: Ratios = {
      throughputRatio: ratio(mine.throughput, other.throughput) ?? NaN,
      throughputRatioByRound: byRound((s) => s.throughput).map((x) => x ?? NaN),
    };
    const p50 = ratio(mine.p50, other.p50);
    const p99 = ratio(mine.p99, other.p99);
    if (p50 !== undefined) entry.p50Ratio = p50;
    if (p99 !== undefined) entry.p99Ratio = p99;
    if (p50ByRound.every((x) => x !== undefined)) entry.p50RatioByRound = p50ByRound as number[];
    ratios[name] = entry;
  }
  return { sides: Object.fromEntries(Object.entries(c.sides).map(([name, s]) => [name, sideFigures(s)])), ratios };
}

export interface SidesConfig {
  rounds: number;
  roundMs: number;
  /** Requests in flight for the throughput figures (h2load), e.g. [8, 64]. */
  inFlight: number[];
  /** The h2load binary. */
  h2load: string;
  protocol: H2loadProtocol;
  /** h2load's warm-up inside every round (new connections each run: keeps handshakes out of the figure). */
  h2loadWarmupMs: number;
  progress: (line: string) => void;
}

export interface SidesMeasurement {
  /** What each side is. */
  sides: Record<string, string>;
  /** One request in flight, Node keep-alive HTTP/1.1 generator. */
  latency: ComparedFigures;
  /** Keyed by requests in flight; h2load. */
  throughput: Record<string, ComparedFigures>;
}

/** Latency, then throughput at every in-flight count, of `sides`; ratios are `candidate` over each other side. */
export async function measureSides(what: string, sides: Array<Side & { description: string }>, candidate: string, cfg: SidesConfig): Promise<SidesMeasurement> {
  const names = sides.map((s) => s.name).join(' / ');
  cfg.progress(`measuring ${what} (${names}): latency, 1 in flight ...`);
  const latency = compareFigures(await compareInterleaved(sides, { rounds: cfg.rounds, roundMs: cfg.roundMs }), candidate);
  const throughput: Record<string, ComparedFigures> = {};
  const runner = h2loadRunner({ binary: cfg.h2load, protocol: cfg.protocol, warmupMs: cfg.h2loadWarmupMs });
  for (const n of cfg.inFlight) {
    cfg.progress(`measuring ${what} (${names}): throughput, ${n} in flight (h2load, ${cfg.protocol}) ...`);
    const c = await compareAlternately(sides, { rounds: cfg.rounds, roundMs: cfg.roundMs, concurrency: n, runner, warmupMs: 0 });
    throughput[String(n)] = compareFigures(c, candidate);
  }
  return { sides: Object.fromEntries(sides.map((s) => [s.name, s.description])), latency, throughput };
}
