// Throughput with h2load (Debian's nghttp2-client): a C load generator, so
// the generator is not what limits the figure at 8 or 64 requests in flight.
// Its own CPU per request is read and reported to show that.
import { spawn } from 'node:child_process';
import type { LoadResult, LoadTarget, RoundRunner } from './load.js';

/**
 * `h2` (what client-go speaks: one TLS connection, many streams) or
 * `http/1.1` (one request at a time per connection; h2load's pipelining is
 * never used).
 */
export type H2loadProtocol = 'h2' | 'http/1.1';

/** The most connections h2load opens over HTTP/2; more requests in flight become more streams per connection. */
export const H2_MAX_CONNECTIONS = 8;

export interface H2loadOutput {
  /** h2load's main-duration figure (warm-up excluded). */
  requestsPerSecond: number;
  total: number;
  done: number;
  succeeded: number;
  failed: number;
  errored: number;
  timeout: number;
  statusCodes: { '2xx': number; '3xx': number; '4xx': number; '5xx': number };
  /** The protocol ALPN chose (`h2`, `http/1.1`), when h2load printed it (not when no connection was made). */
  applicationProtocol?: string;
  /** Mean time per request, milliseconds. */
  meanRequestMs?: number;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000 };

/** Pure: the figures of h2load's report (stdout). Throws when the report is not there. */
export function parseH2loadOutput(text: string): H2loadOutput {
  const finished = /finished in [\d.]+(?:ms|s), ([\d.]+) req\/s/.exec(text);
  const requests = /requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(text);
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(text);
  if (!finished || !requests || !codes) throw new Error(`h2load printed no report:\n${text.split('\n').slice(-15).join('\n')}`);
  const n = (s: string | undefined): number => Number(s ?? NaN);
  const out: H2loadOutput = {
    requestsPerSecond: n(finished[1]),
    total: n(requests[1]),
    done: n(requests[2]),
    succeeded: n(requests[3]),
    failed: n(requests[4]),
    errored: n(requests[5]),
    timeout: n(requests[6]),
    statusCodes: { '2xx': n(codes[1]), '3xx': n(codes[2]), '4xx': n(codes[3]), '5xx': n(codes[4]) },
  };
  const protocol = /Application protocol: (\S+)/.exec(text);
  if (protocol?.[1]) out.applicationProtocol = protocol[1];
  const mean = /time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)\s/.exec(text);
  if (mean?.[1] && mean[2]) out.meanRequestMs = n(mean[1]) * (UNIT_MS[mean[2]] ?? NaN);
  return out;
}

/** Pure: bash's `times` output (two lines: the shell's, then its children's user and system time) as the children's CPU seconds. */
export function parseBashTimes(text: string): number {
  const lines = text.trim().split('\n');
  const children = lines.at(-1) ?? '';
  const parts = [...children.matchAll(/(\d+)m([\d.]+)s/g)];
  if (parts.length !== 2) throw new Error(`unexpected output of bash's times: ${JSON.stringify(text)}`);
  const seconds = parts.reduce((sum, m) => sum + Number(m[1]) * 60 + Number(m[2]), 0);
  // bash prints milliseconds: round away the binary fractions the sum adds.
  return Math.round(seconds * 1e6) / 1e6;
}

/** Pure: connections and streams per connection for `inFlight` requests in flight. */
export function h2loadShape(protocol: H2loadProtocol, inFlight: number): { clients: number; streams: number } {
  if (protocol === 'http/1.1') return { clients: inFlight, streams: 1 };
  const clients = Math.min(inFlight, H2_MAX_CONNECTIONS);
  return { clients, streams: Math.ceil(inFlight / clients) };
}

/** Pure: h2load's arguments for one run (the headers carry the token: print `describeH2loadFlags` instead). */
export function h2loadArgs(o: {
  protocol: H2loadProtocol;
  inFlight: number;
  durationMs: number;
  warmupMs: number;
  headers: Record<string, string>;
  url: string;
}): string[] {
  const { clients, streams } = h2loadShape(o.protocol, o.inFlight);
  return [
    ...(o.protocol === 'http/1.1' ? ['--h1'] : []),
    `--clients=${clients}`,
    `--max-concurrent-streams=${streams}`,
    // One thread: this machine's cores are needed by the servers measured.
    '--threads=1',
    `--duration=${Math.max(1, Math.round(o.durationMs))}ms`,
    `--warm-up-time=${Math.max(1, Math.round(o.warmupMs))}ms`,
    ...Object.entries(o.headers).map(([k, v]) => `--header=${k}: ${v}`),
    o.url,
  ];
}

/** The flags as a person would rerun them, with secrets elided. */
export function describeH2loadFlags(protocol: H2loadProtocol, inFlight: number, roundMs: number, warmupMs: number): string {
  const args = h2loadArgs({
    protocol,
    inFlight,
    durationMs: roundMs,
    warmupMs,
    headers: { authorization: 'Bearer $TOKEN', accept: '$ACCEPT' },
    url: 'URL',
  });
  return ['h2load', ...args].map((a) => (/^[\w./:=@,+%-]+$/.test(a) ? a : `'${a}'`)).join(' ');
}

export interface H2loadRunnerOptions {
  /** The h2load binary (ensureDebianPackage's answer). */
  binary: string;
  protocol: H2loadProtocol;
  warmupMs: number;
}

/**
 * Pure: the share of h2load's CPU time that belongs to the main duration's
 * requests. Its CPU covers the warm-up too (TLS handshakes, the first
 * requests), whose answers the status-code line counts but the request line
 * does not; without this the CPU per request would be overstated.
 */
export function generatorShare(report: H2loadOutput): number {
  const answered = report.statusCodes['2xx'] + report.statusCodes['3xx'] + report.statusCodes['4xx'] + report.statusCodes['5xx'];
  return answered > report.done ? report.done / answered : 1;
}

/**
 * A RoundRunner on h2load. h2load does not verify the server's certificate
 * (the target's CA is not used); client certificates are not supported, so
 * only token clients are measured this way. A non-2xx answer, a reset stream
 * or a timeout counts as an error. h2load runs under bash so that bash's
 * `times` reports h2load's exact CPU time when it has exited.
 */
export function h2loadRunner(opts: H2loadRunnerOptions): RoundRunner {
  return async (target: LoadTarget, inFlight: number, durationMs: number): Promise<LoadResult> => {
    const args = h2loadArgs({ protocol: opts.protocol, inFlight, durationMs, warmupMs: opts.warmupMs, headers: target.headers, url: target.url });
    const { stdout, stderr, code } = await runWithTimes(opts.binary, args, durationMs + opts.warmupMs + 30_000);
    const marker = stdout.lastIndexOf(TIMES_MARKER);
    if (code !== 0 || marker < 0) throw new Error(`h2load exited with ${code}: ${stderr.trim() || stdout.slice(-500)}`);
    const report = parseH2loadOutput(stdout.slice(0, marker));
    if (report.done === 0) throw new Error(`h2load completed no request against ${target.url}: ${stdout.slice(0, marker).slice(-500)}`);
    if (opts.protocol === 'h2' && report.applicationProtocol !== 'h2')
      throw new Error(`h2load got ${report.applicationProtocol ?? 'no protocol'} from ${target.url}, not h2`);
    return {
      // h2load's request counts cover the main duration only (warm-up excluded), as its req/s does.
      requests: report.done,
      // Failed (non-2xx, reset), errored and timed-out requests all fall outside `succeeded`.
      errors: report.total - report.succeeded,
      seconds: report.requestsPerSecond > 0 ? report.done / report.requestsPerSecond : durationMs / 1000,
      latenciesMs: [],
      generatorCpuSeconds: generatorShare(report) * parseBashTimes(stdout.slice(marker + TIMES_MARKER.length)),
    };
  };
}

const TIMES_MARKER = '\n--- times ---\n';

function runWithTimes(binary: string, args: string[], timeoutMs: number): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const script = `"$0" "$@"; rc=$?; printf '${TIMES_MARKER.replace(/\n/g, '\\n')}'; times; exit $rc`;
    const child = spawn('bash', ['-c', script, binary, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), code });
    });
  });
}
