// A small closed-loop HTTPS load generator: N workers, keep-alive
// connections, each sending the next request when the previous one ends.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';

export interface LoadTarget {
  url: string;
  ca: Buffer;
  headers: Record<string, string>;
  cert?: Buffer;
  key?: Buffer;
}

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  latenciesMs: number[];
}

export interface LatencySummary {
  p50: number;
  p99: number;
  throughput: number;
  errors: number;
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

async function runLoad(target: LoadTarget, concurrency: number, durationMs: number): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca: target.ca, ...(target.cert ? { cert: target.cert, key: target.key } : {}) });
  const latenciesMs: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        const status = await once(agent, target);
        if (status !== 200) errors++;
      } catch {
        errors++;
      }
      latenciesMs.push(performance.now() - t0);
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

function summarize(results: LoadResult[]): LatencySummary {
  const all = results.flatMap((r) => r.latenciesMs).sort((a, b) => a - b);
  const requests = results.reduce((n, r) => n + r.requests, 0);
  const seconds = results.reduce((n, r) => n + r.seconds, 0);
  return { p50: percentile(all, 50), p99: percentile(all, 99), throughput: requests / seconds, errors: results.reduce((n, r) => n + r.errors, 0) };
}

export interface Comparison {
  candidate: LatencySummary;
  baseline: LatencySummary;
  /** Each round on its own: how far the figures move between rounds shows the machine's noise. */
  rounds: Array<{ candidate: LatencySummary; baseline: LatencySummary }>;
  /** CPU time the candidate's process spent per candidate request (microseconds), when its pid was given. */
  candidateCpuMicrosPerRequest?: number;
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/** User plus system CPU seconds a process has used so far (Linux /proc). */
function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name is in parentheses and may contain spaces: count fields after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
}

/** Measures two targets in alternating rounds so drift in the machine hits both alike. */
export async function compareAlternately(
  candidate: LoadTarget,
  baseline: LoadTarget,
  opts: { rounds: number; roundMs: number; concurrency: number; candidatePid?: number },
): Promise<Comparison> {
  // Warm up both (connections, caches).
  await runLoad(candidate, opts.concurrency, 500);
  await runLoad(baseline, opts.concurrency, 500);
  const c: LoadResult[] = [];
  const b: LoadResult[] = [];
  let candidateCpuSeconds = 0;
  const cpu = (): number => (opts.candidatePid === undefined ? 0 : processCpuSeconds(opts.candidatePid));
  for (let i = 0; i < opts.rounds; i++) {
    const before = cpu();
    c.push(await runLoad(candidate, opts.concurrency, opts.roundMs));
    candidateCpuSeconds += cpu() - before;
    b.push(await runLoad(baseline, opts.concurrency, opts.roundMs));
  }
  const comparison: Comparison = {
    candidate: summarize(c),
    baseline: summarize(b),
    rounds: c.map((round, i) => ({ candidate: summarize([round]), baseline: summarize(b.slice(i, i + 1)) })),
  };
  const candidateRequests = c.reduce((n, r) => n + r.requests, 0);
  if (opts.candidatePid !== undefined && candidateRequests > 0) comparison.candidateCpuMicrosPerRequest = (candidateCpuSeconds * 1e6) / candidateRequests;
  return comparison;
}
