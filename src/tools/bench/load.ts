// Measuring several sides (entry points) of the same request. Throughput:
// alternating rounds, a round of one side run by a RoundRunner (the Node
// closed-loop generator below: keep-alive HTTP/1.1 connections, each worker
// sending the next request when the previous one ends; or h2load, h2load.ts).
// Latency (one request in flight, where the Node generator is idle): the
// sides taken in turn, a short burst each (compareInterleaved).
import { Agent, request } from 'node:https';
import { processCpuSeconds } from './procStat.js';

export interface LoadTarget {
  url: string;
  ca: Buffer;
  headers: Record<string, string>;
  cert?: Buffer;
  key?: Buffer;
}

/** One side of a comparison: a name (`mvproxy`, `upstream`, `direct`, ...), what to load, and optionally the proxy process whose CPU to read. */
export interface Side {
  name: string;
  target: LoadTarget;
  pid?: number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  /** Every request's latency; empty when the runner does not report them (h2load). */
  latenciesMs: number[];
  /** CPU seconds the load generator itself spent, when it runs in its own process. */
  generatorCpuSeconds?: number;
}

/** Runs `target` with `inFlight` requests in flight for about `durationMs`. */
export type RoundRunner = (target: LoadTarget, inFlight: number, durationMs: number) => Promise<LoadResult>;

export interface LatencySummary {
  /** Absent when the runner reports no latencies. */
  p50?: number;
  p99?: number;
  throughput: number;
  requests: number;
  errors: number;
  /** CPU time of the side's process per request of that side (microseconds), when its pid was given. */
  cpuMicrosPerRequest?: number;
  /** CPU time of the load generator per request (microseconds), when it runs in its own process. */
  generatorCpuMicrosPerRequest?: number;
}

function once(agent: Agent, target: LoadTarget): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(target.url, { agent, headers: target.headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function agentFor(target: LoadTarget, maxSockets: number): Agent {
  return new Agent({ keepAlive: true, maxSockets, ca: target.ca, ...(target.cert ? { cert: target.cert, key: target.key } : {}) });
}

/** One request; its latency, and whether it failed (a non-200 answer or no answer). */
async function timedOnce(agent: Agent, target: LoadTarget): Promise<{ ms: number; failed: boolean }> {
  const t0 = performance.now();
  const failed = await once(agent, target).then(
    (status) => status !== 200,
    () => true,
  );
  return { ms: performance.now() - t0, failed };
}

/** The Node generator: `concurrency` workers on keep-alive HTTP/1.1 connections; a non-200 answer is an error. */
export async function runLoad(target: LoadTarget, concurrency: number, durationMs: number): Promise<LoadResult> {
  const agent = agentFor(target, concurrency);
  const latenciesMs: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const { ms, failed } = await timedOnce(agent, target);
      if (failed) errors++;
      latenciesMs.push(ms);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
  return { requests: latenciesMs.length, errors, seconds: (performance.now() - started) / 1000, latenciesMs };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? NaN;
}

interface SideRounds {
  results: LoadResult[];
  cpuSeconds: number;
}

/** Pure: one side's rounds pooled (latency percentiles over all requests, throughput over all seconds). */
export function summarizeRounds(results: LoadResult[], sideCpuSeconds?: number): LatencySummary {
  const all = results.flatMap((r) => r.latenciesMs).sort((a, b) => a - b);
  const requests = results.reduce((n, r) => n + r.requests, 0);
  const seconds = results.reduce((n, r) => n + r.seconds, 0);
  const summary: LatencySummary = { throughput: seconds > 0 ? requests / seconds : 0, requests, errors: results.reduce((n, r) => n + r.errors, 0) };
  if (all.length > 0) {
    summary.p50 = percentile(all, 50);
    summary.p99 = percentile(all, 99);
  }
  if (sideCpuSeconds !== undefined && requests > 0) summary.cpuMicrosPerRequest = (sideCpuSeconds * 1e6) / requests;
  const generator = results.map((r) => r.generatorCpuSeconds);
  if (requests > 0 && generator.every((s) => s !== undefined)) {
    summary.generatorCpuMicrosPerRequest = (generator.reduce((n: number, s) => n + (s ?? 0), 0) * 1e6) / requests;
  }
  return summary;
}

export interface Comparison {
  /** Each side's rounds pooled, by side name. */
  sides: Record<string, LatencySummary>;
  /** Each round on its own: how far the figures move between rounds shows the machine's noise. */
  rounds: Array<Record<string, LatencySummary>>;
}

export interface CompareOptions {
  rounds: number;
  roundMs: number;
  /** Requests in flight. */
  concurrency: number;
  /** The Node generator unless given. */
  runner?: RoundRunner;
  /** A warm-up run per side before the rounds (connections, caches); 0 to skip (h2load warms up inside each round). */
  warmupMs?: number;
}

/**
 * Measures several sides in alternating rounds so drift in the machine hits
 * all alike. Each round runs every side once; the side that goes first
 * rotates from round to round, so no side always runs right after another.
 */
export async function compareAlternately(sides: Side[], opts: CompareOptions): Promise<Comparison> {
  const run = opts.runner ?? runLoad;
  const warmupMs = opts.warmupMs ?? 500;
  if (warmupMs > 0) for (const side of sides) await run(side.target, opts.concurrency, warmupMs);
  const perSide: SideRounds[] = sides.map(() => ({ results: [], cpuSeconds: 0 }));
  for (let i = 0; i < opts.rounds; i++) {
    for (let k = 0; k < sides.length; k++) {
      const index = (i + k) % sides.length;
      const side = sides[index];
      const acc = perSide[index];
      if (!side || !acc) throw new Error('internal: side index');
      const before = proxyCpuSeconds(side);
      acc.results.push(await run(side.target, opts.concurrency, opts.roundMs));
      acc.cpuSeconds += proxyCpuSeconds(side) - before;
    }
  }
  return comparison(sides, perSide, opts.rounds);
}

/** CPU seconds of the side's proxy process so far; 0 when it has none to read. */
function proxyCpuSeconds(side: Side): number {
  return side.pid === undefined ? 0 : processCpuSeconds(side.pid);
}

/** Pure: each side's rounds pooled, and each round on its own. */
function comparison(sides: Side[], perSide: SideRounds[], rounds: number): Comparison {
  const entry = (f: (side: Side, acc: SideRounds) => LatencySummary): Record<string, LatencySummary> =>
    Object.fromEntries(sides.map((side, i) => [side.name, f(side, perSide[i] ?? { results: [], cpuSeconds: 0 })]));
  return {
    sides: entry((side, acc) => summarizeRounds(acc.results, side.pid === undefined ? undefined : acc.cpuSeconds)),
    rounds: Array.from({ length: rounds }, (_, i) => entry((_side, acc) => summarizeRounds(acc.results.slice(i, i + 1)))),
  };
}

/**
 * Requests a side gets in a row in compareInterleaved. One at a time would
 * have every request meet processes idle since their last one (the other
 * sides' requests in between), which raises every side's latency (kas-a
 * directly: 1.4 to 2.6 ms here) and measures wake-ups more than the request;
 * a burst keeps its path warm, and is over in a few milliseconds, far below
 * the time the machine's load drifts in.
 */
const INTERLEAVED_BURST = 16;

/**
 * Latency with one request in flight, the sides taken in turn, a short burst
 * each (the first rotating every cycle): each side's requests meet the
 * machine in the same state as the others', so drift between rounds (a busy
 * neighbour, a CPU's clock) cannot favour one side. A round gives each side
 * about `roundMs` of requests; its throughput is one over its mean latency
 * (the time it had a request in flight).
 */
export async function compareInterleaved(sides: Side[], opts: Pick<CompareOptions, 'rounds' | 'roundMs' | 'warmupMs'>): Promise<Comparison> {
  const agents = sides.map((side) => agentFor(side.target, 1));
  const cycle = async (k: number, record?: (index: number, ms: number, failed: boolean) => void): Promise<void> => {
    for (let j = 0; j < sides.length; j++) {
      const index = (k + j) % sides.length;
      const side = sides[index];
      const agent = agents[index];
      if (!side || !agent) throw new Error('internal: side index');
      for (let b = 0; b < INTERLEAVED_BURST; b++) {
        const { ms, failed } = await timedOnce(agent, side.target);
        record?.(index, ms, failed);
      }
    }
  };
  try {
    const warmupUntil = performance.now() + (opts.warmupMs ?? 500) * sides.length;
    for (let k = 0; performance.now() < warmupUntil; k++) await cycle(k);
    const perSide: SideRounds[] = sides.map(() => ({ results: [], cpuSeconds: 0 }));
    for (let i = 0; i < opts.rounds; i++) {
      const latencies: number[][] = sides.map(() => []);
      const errors = sides.map(() => 0);
      const cpuBefore = sides.map(proxyCpuSeconds);
      const deadline = performance.now() + opts.roundMs * sides.length;
      for (let k = i; performance.now() < deadline; k++) {
        await cycle(k, (index, ms, failed) => {
          latencies[index]?.push(ms);
          if (failed) errors[index] = (errors[index] ?? 0) + 1;
        });
      }
      sides.forEach((side, index) => {
        const acc = perSide[index];
        const latenciesMs = latencies[index] ?? [];
        if (!acc) throw new Error('internal: side index');
        const seconds = latenciesMs.reduce((n, ms) => n + ms, 0) / 1000;
        acc.results.push({ requests: latenciesMs.length, errors: errors[index] ?? 0, seconds, latenciesMs });
        acc.cpuSeconds += proxyCpuSeconds(side) - (cpuBefore[index] ?? 0);
      });
    }
    return comparison(sides, perSide, opts.rounds);
  } finally {
    for (const agent of agents) agent.destroy();
  }
}
