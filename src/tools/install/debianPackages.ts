// System tools some commands need that are not npm packages (h2load for the
// benchmark, Prometheus for the dashboard test): installed from Debian's
// archive with apt-get when missing, by `mvproxy-dev install` (DEBIAN_PACKAGES).
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { LineSplitter } from './run.js';
import type { LogFn } from './progress.js';

/** Where `binary` is on PATH (or the absolute path itself when executable), else undefined. */
export function findExecutable(binary: string, path: string = process.env['PATH'] ?? ''): string | undefined {
  const candidates = binary.includes('/') ? [binary] : path.split(delimiter).map((dir) => join(dir, binary));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not there
    }
  }
  return undefined;
}

/** A Debian package the project needs, found by one of its executables. */
export interface DebianPackage {
  binary: string;
  pkg: string;
  /** What needs it (for progress lines and errors). */
  neededBy: string;
}

/** Every Debian package `mvproxy-dev install` makes sure of. */
export const DEBIAN_PACKAGES: readonly DebianPackage[] = [
  { binary: 'h2load', pkg: 'nghttp2-client', neededBy: 'the benchmark (throughput at 8 and 64 in flight)' },
  { binary: 'prometheus', pkg: 'prometheus', neededBy: 'the dashboard test (a real Prometheus scraping the sandbox)' },
  { binary: 'ip', pkg: 'iproute2', neededBy: "the sandbox's node layout (node addresses in its network namespace)" },
  { binary: 'chromium', pkg: 'chromium', neededBy: 'the status page test (a real headless browser, driven by playwright-core)' },
];

/** Pure: the command that installs `pkgs`, run directly as root and through sudo otherwise. */
export function aptInstallCommand(pkgs: string | readonly string[], isRoot: boolean): { cmd: string; args: string[] } {
  const apt = ['apt-get', 'install', '-y', '--no-install-recommends', ...(typeof pkgs === 'string' ? [pkgs] : pkgs)];
  return isRoot ? { cmd: apt[0] ?? 'apt-get', args: apt.slice(1) } : { cmd: 'sudo', args: ['-n', ...apt] };
}

/**
 * Makes sure `binary` exists, installing Debian package `pkg` when it does
 * not (as root, or with passwordless sudo). Returns the binary's path; throws
 * with what to run by hand when it cannot install.
 */
export async function ensureDebianPackage(binary: string, pkg: string, log: LogFn): Promise<string> {
  const paths = await ensureDebianPackages([{ binary, pkg, neededBy: binary }], log);
  const path = paths[binary];
  if (path === undefined) throw new Error(`internal: no path for ${binary}`);
  return path;
}

/**
 * Makes sure every package's binary exists, installing the missing packages
 * in one apt-get run (as root, or with passwordless sudo), its output passed
 * on line by line as progress. Returns each binary's path; throws with what
 * to run by hand when it cannot install.
 */
export async function ensureDebianPackages(packages: readonly DebianPackage[], log: LogFn): Promise<Record<string, string>> {
  const paths: Record<string, string> = {};
  const missing: DebianPackage[] = [];
  for (const p of packages) {
    const found = findExecutable(p.binary);
    if (found) paths[p.binary] = found;
    else missing.push(p);
  }
  if (missing.length === 0) return paths;
  const pkgs = missing.map((p) => p.pkg);
  const what = missing.map((p) => `${p.binary} (Debian package ${p.pkg}, for ${p.neededBy})`).join(', ');
  const byHand = `install by hand: sudo apt-get install -y ${pkgs.join(' ')}`;
  if (!findExecutable('apt-get')) throw new Error(`missing: ${what}, and this machine has no apt-get; install them by hand`);
  const isRoot = process.getuid?.() === 0;
  if (!isRoot && !findExecutable('sudo')) throw new Error(`missing: ${what}; this process is not root and has no sudo; ${byHand}`);
  log(`missing: ${what}: installing with apt-get ...`);
  // A stale package index makes install fail to find the package: refresh it first.
  for (const step of [aptCommand(['update'], isRoot), aptInstallCommand(pkgs, isRoot)]) {
    const code = await runLogged(step.cmd, step.args, log);
    if (code !== 0) throw new Error(`${step.cmd} ${step.args.join(' ')} failed (exit code ${code}); ${byHand}`);
  }
  for (const p of missing) {
    const installed = findExecutable(p.binary);
    if (!installed) throw new Error(`package ${p.pkg} installed but ${p.binary} is still not on PATH`);
    log(`${p.binary} installed: ${installed}`);
    paths[p.binary] = installed;
  }
  return paths;
}

function aptCommand(args: string[], isRoot: boolean): { cmd: string; args: string[] } {
  return isRoot ? { cmd: 'apt-get', args } : { cmd: 'sudo', args: ['-n', 'apt-get', ...args] };
}

/** Runs a command, passing its output on as progress lines (apt-get prints one per step, so a slow mirror does not look hung). */
function runLogged(cmd: string, args: string[], log: LogFn): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    const splitter = new LineSplitter();
    const onData = (chunk: Buffer): void => {
      for (const line of splitter.push(chunk)) {
        if (line.trim() !== '') log(`  ${line}`);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (err) => {
      log(`  cannot run ${cmd}: ${err.message}`);
      resolve(127);
    });
    child.on('close', (code) => resolve(code ?? 1));
  });
}
