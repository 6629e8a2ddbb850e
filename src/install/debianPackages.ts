// System tools some commands need that are not npm packages (h2load for the
// benchmark): installed from Debian's archive with apt-get when missing.
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

/** Pure: the command that installs `pkg`, run directly as root and through sudo otherwise. */
export function aptInstallCommand(pkg: string, isRoot: boolean): { cmd: string; args: string[] } {
  const apt = ['apt-get', 'install', '-y', '--no-install-recommends', pkg];
  return isRoot ? { cmd: apt[0] ?? 'apt-get', args: apt.slice(1) } : { cmd: 'sudo', args: ['-n', ...apt] };
}

/**
 * Makes sure `binary` exists, installing Debian package `pkg` when it does
 * not (as root, or with passwordless sudo). Returns the binary's path; throws
 * with what to run by hand when it cannot install.
 */
export async function ensureDebianPackage(binary: string, pkg: string, log: LogFn): Promise<string> {
  const found = findExecutable(binary);
  if (found) return found;
  const byHand = `install it by hand: sudo apt-get install -y ${pkg}`;
  if (!findExecutable('apt-get')) throw new Error(`${binary} is missing and this machine has no apt-get: install ${binary} (Debian package ${pkg}) by hand`);
  const isRoot = process.getuid?.() === 0;
  if (!isRoot && !findExecutable('sudo')) throw new Error(`${binary} is missing, this process is not root and has no sudo; ${byHand}`);
  log(`${binary} is missing: installing Debian package ${pkg} (apt-get) ...`);
  // A stale package index makes install fail to find the package: refresh it first.
  for (const step of [aptCommand(['update'], isRoot), aptInstallCommand(pkg, isRoot)]) {
    const code = await runLogged(step.cmd, step.args, log);
    if (code !== 0) throw new Error(`${step.cmd} ${step.args.join(' ')} failed (exit code ${code}); ${byHand}`);
  }
  const installed = findExecutable(binary);
  if (!installed) throw new Error(`package ${pkg} installed but ${binary} is still not on PATH`);
  log(`${binary} installed: ${installed}`);
  return installed;
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
