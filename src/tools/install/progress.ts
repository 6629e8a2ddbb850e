// Progress lines for slow install steps: builds run for minutes, and a silent
// terminal looks hung. A start line, a heartbeat every ~15 s, and an end line.

export type LogFn = (line: string) => void;

export const stderrLog: LogFn = (line) => {
  process.stderr.write(`${line}\n`);
};

export function formatDuration(ms: number): string {
  const totalSeconds = Math.max(0, Math.round(ms / 1000));
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  const pad = (n: number): string => String(n).padStart(2, '0');
  if (hours > 0) return `${hours}h${pad(minutes)}m`;
  if (minutes > 0) return `${minutes}m${pad(seconds)}s`;
  return `${seconds}s`;
}

export interface StepOptions {
  /** What is happening, e.g. `building kube-apiserver v1.37.2`. */
  title: string;
  /** Rough cold duration for the start line, e.g. `~15 min`. */
  firstTime?: string;
  /** Extra heartbeat detail, e.g. `412 packages compiled`; empty for none. */
  detail?: () => string;
  heartbeatMs?: number;
}

const HEARTBEAT_MS = 15_000;

export async function withProgress<T>(log: LogFn, opts: StepOptions, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const elapsed = (): string => formatDuration(Date.now() - started);
  log(`${opts.title}${opts.firstTime !== undefined ? ` (first time: ${opts.firstTime})` : ''} ...`);
  const timer = setInterval(() => {
    const detail = opts.detail?.() ?? '';
    log(`  ${opts.title}: ${elapsed()} elapsed${detail !== '' ? `, ${detail}` : ''}`);
  }, opts.heartbeatMs ?? HEARTBEAT_MS);
  // The child process keeps the event loop alive; the timer must not on its own.
  timer.unref();
  try {
    const result = await work();
    log(`${opts.title}: done in ${elapsed()}`);
    return result;
  } catch (err) {
    log(`${opts.title}: FAILED after ${elapsed()}`);
    throw err;
  } finally {
    clearInterval(timer);
  }
}
