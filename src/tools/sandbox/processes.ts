// Child processes of the sandbox. Every child is started under
// `setpriv --pdeathsig KILL`, so it dies with the process that started it,
// even when that process is killed without a chance to clean up: a failed or
// killed test never leaves an apiserver behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync, existsSync } from 'node:fs';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcessSpec {
  /** Short name used in messages and the log file name. */
  name: string;
  command: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  /** Run in a UTS namespace with this hostname (apiserver identity is derived from it). */
  hostname?: string;
  /**
   * The command that enters the sandbox's network namespace (netns.ts), put
   * before everything else: absent, the process shares the host's network.
   */
  enter?: readonly string[];
}

/** The longest one readiness probe may take before the next is sent. */
const PROBE_TIMEOUT_MS = 5000;

/** `probe`, or a rejection once `signal` aborts (`givenMs` after it was made): whichever comes first. */
function untilAborted<T>(probe: Promise<T>, signal: AbortSignal, givenMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error(`probe unanswered after ${givenMs} ms`));
    signal.addEventListener('abort', onAbort, { once: true });
    probe.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export class ManagedProcess {
  private readonly child: ChildProcess;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<void>;

  constructor(readonly spec: ProcessSpec) {
    const fd = openSync(spec.logFile, 'a');
    try {
      const [command, args] = wrapCommand(spec);
      this.child = spawn(command, args, {
        stdio: ['ignore', fd, fd],
        env: spec.env ?? process.env,
      });
    } finally {
      closeSync(fd);
    }
    this.exited = once(this.child, 'exit').then(([code, signal]) => {
      this.exitInfo = { code: code as number | null, signal: signal as NodeJS.Signals | null };
    });
    // A spawn error (missing binary) surfaces as 'error' before 'exit'.
    this.child.on('error', () => undefined);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  describeExit(): string {
    if (!this.exitInfo) return 'running';
    return this.exitInfo.signal ? `killed by ${this.exitInfo.signal}` : `exited with code ${this.exitInfo.code}`;
  }

  logTail(lines = 20): string {
    return tailOfFile(this.spec.logFile, lines);
  }

  /**
   * Polls `ready` (a throw counts as not ready yet) until it returns true,
   * each probe given PROBE_TIMEOUT_MS (its signal aborts then); fails fast
   * with the log tail if the process dies, or after `timeoutMs` with what
   * the last probe said.
   */
  async waitReady(what: string, ready: (signal: AbortSignal) => Promise<boolean>, timeoutMs = 120_000, pollMs = 250): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let lastProbe = 'none answered';
    while (Date.now() < deadline) {
      if (!this.running) throw new ComponentStartError(what, this.describeExit(), this.spec.logFile, this.logTail());
      // One probe that never answers (a connection accepted before its server serves) must not outlast the deadline.
      const givenMs = Math.max(1, Math.min(PROBE_TIMEOUT_MS, deadline - Date.now()));
      const signal = AbortSignal.timeout(givenMs);
      try {
        if (await untilAborted(ready(signal), signal, givenMs)) return;
        lastProbe = 'not ready';
      } catch (err) {
        lastProbe = (err as Error).message; // not listening yet, or the probe timed out
      }
      await sleep(pollMs);
    }
    throw new ComponentStartError(what, `not ready after ${timeoutMs / 1000} s (last probe: ${lastProbe})`, this.spec.logFile, this.logTail());
  }

  /** SIGKILL at once, as a crash would: no handler runs, nothing is flushed. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * setpriv first: nsenter and unshare exec in place (no fork) and keep the
 * effective user, so the parent-death signal holds for the command at the end.
 */
export function wrapCommand(spec: Pick<ProcessSpec, 'command' | 'args' | 'hostname' | 'enter'>): [string, string[]] {
  const inner = spec.hostname
    ? [...utsNamespacePrefix(spec.enter !== undefined), 'sh', '-c', 'hostname "$0" && exec "$@"', spec.hostname, spec.command, ...spec.args]
    : [spec.command, ...spec.args];
  return ['setpriv', ['--pdeathsig', 'KILL', ...(spec.enter ?? []), ...inner]];
}

/**
 * Root can unshare UTS directly; others need a user namespace to do it. A
 * process that entered the sandbox's network namespace is root already (in
 * the user namespace that owns it, when the sandbox is not run as root).
 */
function utsNamespacePrefix(entered: boolean): string[] {
  return entered || process.getuid?.() === 0 ? ['unshare', '--uts'] : ['unshare', '--user', '--map-root-user', '--uts'];
}

export function tailOfFile(path: string, lines: number): string {
  if (!existsSync(path)) return '(no log)';
  const text = readFileSync(path, 'utf8');
  return text
    .split('\n')
    .slice(-lines - 1)
    .join('\n')
    .trimEnd();
}

/** Error for a component that failed to start: names it and shows its log tail. */
class ComponentStartError extends Error {
  constructor(component: string, reason: string, logFile: string, tail: string) {
    super(`${component} failed to start: ${reason}\n--- last lines of ${logFile} ---\n${tail}`);
    this.name = 'ComponentStartError';
  }
}
