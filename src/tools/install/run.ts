// Child processes for the installer. Long steps stream their whole output to a
// log file in the cache; a failure's Error carries the command, the last lines
// of output and the log path, which is usually enough to act without opening it.

import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';

const TAIL_LINES = 20;

/** Shell-like rendering of a command, for messages a person may copy and rerun. */
export function formatCommand(cmd: string, args: readonly string[]): string {
  return [cmd, ...args].map(quoteArg).join(' ');
}

function quoteArg(arg: string): string {
  if (/^[A-Za-z0-9_/.:=@,+%-]+$/.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * Splits one byte stream into lines; `\r` counts as a break so progress bars do
 * not pile up. The decoder keeps a UTF-8 character cut between chunks whole.
 */
export class LineSplitter {
  private rest = '';
  private readonly decoder = new StringDecoder('utf8');

  push(chunk: Buffer | string): string[] {
    const text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const parts = (this.rest + text).split(/\r\n|\n|\r/);
    this.rest = parts.pop() ?? '';
    return parts;
  }

  flush(): string[] {
    const last = this.rest + this.decoder.end();
    this.rest = '';
    return last === '' ? [] : [last];
  }
}

/** The last `size` non-empty lines seen. */
export class Tail {
  private readonly kept: string[] = [];

  constructor(private readonly size: number = TAIL_LINES) {}

  push(line: string): void {
    if (line.trim() === '') return;
    this.kept.push(line);
    if (this.kept.length > this.size) this.kept.shift();
  }

  lines(): string[] {
    return [...this.kept];
  }
}

export interface FailureInfo {
  command: string;
  /** e.g. `exit code 1`, `killed by SIGTERM`, `timed out after 30s`. */
  reason: string;
  cwd?: string;
  tail: readonly string[];
  logFile?: string;
}

export function commandFailureMessage(info: FailureInfo): string {
  const lines = [`command failed (${info.reason}): ${info.command}`];
  if (info.cwd !== undefined) lines.push(`  in ${info.cwd}`);
  if (info.tail.length > 0) {
    lines.push(`last ${info.tail.length} lines of output:`, ...info.tail.map((l) => `  | ${l}`));
  } else {
    lines.push('(no output)');
  }
  if (info.logFile !== undefined) lines.push(`full log: ${info.logFile}`);
  return lines.join('\n');
}

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  spawnError?: Error;
  timedOut: boolean;
}

interface SpawnOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

function runChild(cmd: string, args: readonly string[], opts: SpawnOptions, onData: (chunk: Buffer, stream: 'stdout' | 'stderr') => void): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let timedOut = false;
    let spawnError: Error | undefined;
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGTERM');
          }, opts.timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => onData(chunk, 'stdout'));
    child.stderr.on('data', (chunk: Buffer) => onData(chunk, 'stderr'));
    child.on('error', (err) => {
      spawnError = err;
    });
    child.on('close', (code, signal) => {
      if (timer !== undefined) clearTimeout(timer);
      resolve({ code, signal, timedOut, ...(spawnError !== undefined ? { spawnError } : {}) });
    });
  });
}

function failureReason(outcome: Outcome, timeoutMs: number | undefined): string | undefined {
  if (outcome.spawnError !== undefined) return `could not start: ${outcome.spawnError.message}`;
  if (outcome.timedOut) return `timed out after ${Math.round((timeoutMs ?? 0) / 1000)}s`;
  if (outcome.signal !== null) return `killed by ${outcome.signal}`;
  if (outcome.code !== 0) return `exit code ${outcome.code ?? 'unknown'}`;
  return undefined;
}

export interface RunLoggedOptions extends SpawnOptions {
  /** Receives the full output (truncated first). */
  logFile: string;
  /** Called with each output line, stdout and stderr alike. */
  onLine?: (line: string) => void;
}

/** Runs a command with its output going to `logFile`; throws a descriptive Error on failure. */
export async function runLogged(cmd: string, args: readonly string[], opts: RunLoggedOptions): Promise<void> {
  const command = formatCommand(cmd, args);
  await fs.mkdir(path.dirname(opts.logFile), { recursive: true });
  const log = createWriteStream(opts.logFile);
  // Kept and reported after the command: an unhandled stream error would crash the process.
  let logError: Error | undefined;
  log.on('error', (err) => {
    logError = err;
  });
  log.write(`# ${new Date().toISOString()} in ${opts.cwd ?? process.cwd()}\n$ ${command}\n`);
  const splitters = { stdout: new LineSplitter(), stderr: new LineSplitter() };
  const tail = new Tail();
  const takeLine = (line: string): void => {
    tail.push(line);
    opts.onLine?.(line);
  };
  const outcome = await runChild(cmd, args, opts, (chunk, stream) => {
    log.write(chunk);
    for (const line of splitters[stream].push(chunk)) takeLine(line);
  });
  for (const line of [...splitters.stdout.flush(), ...splitters.stderr.flush()]) takeLine(line);
  const reason = failureReason(outcome, opts.timeoutMs);
  log.write(`\n# ${reason ?? 'ok'}\n`);
  await new Promise<void>((resolve) => {
    log.once('close', () => resolve());
    log.end();
  });
  if (reason !== undefined) {
    throw new Error(
      commandFailureMessage({
        command,
        reason,
        tail: tail.lines(),
        logFile: opts.logFile,
        ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      }),
    );
  }
  if (logError !== undefined) {
    throw new Error(`${command} succeeded but its log ${opts.logFile} could not be written: ${logError.message}`);
  }
}

/** Runs a short command and returns its stdout; on failure the Error carries its output. */
export async function capture(cmd: string, args: readonly string[], opts: SpawnOptions = {}): Promise<string> {
  const stdout: Buffer[] = [];
  const splitters = { stdout: new LineSplitter(), stderr: new LineSplitter() };
  const tail = new Tail();
  const outcome = await runChild(cmd, args, opts, (chunk, stream) => {
    if (stream === 'stdout') stdout.push(chunk);
    for (const line of splitters[stream].push(chunk)) tail.push(line);
  });
  for (const line of [...splitters.stdout.flush(), ...splitters.stderr.flush()]) tail.push(line);
  const reason = failureReason(outcome, opts.timeoutMs);
  if (reason !== undefined) {
    throw new Error(
      commandFailureMessage({
        command: formatCommand(cmd, args),
        reason,
        tail: tail.lines(),
        ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      }),
    );
  }
  return Buffer.concat(stdout).toString('utf8');
}

/**
 * Runs `binary ...args` and checks its output names `expected`; returns the
 * matching line. Guards against a build that silently stamped no version.
 */
export async function verifyVersion(binary: string, args: readonly string[], expected: string, env?: NodeJS.ProcessEnv): Promise<string> {
  const output = await capture(binary, args, { timeoutMs: 60_000, ...(env !== undefined ? { env } : {}) });
  // Some binaries echo argv[0] (a temp path here); keep the marker free of it.
  const line = versionLine(output.split(binary).join(''), expected);
  if (line === undefined) {
    const shown = output.trim().split('\n').slice(0, 3).join(' / ');
    throw new Error(`${formatCommand(binary, args)} printed "${shown}", expected it to contain "${expected}"`);
  }
  return line;
}

/** The first output line containing `expected`, if any. */
export function versionLine(output: string, expected: string): string | undefined {
  return output
    .split(/\r?\n/)
    .map((l) => l.trim())
    .find((l) => l.includes(expected));
}
