// The Go toolchain as the installer uses it: module proxy look-ups and builds.

import os from 'node:os';
import { countGoBuildLine, withBuildVcsOff, type GoBuildCounts } from './gomod.js';
import { withProgress, type LogFn } from './progress.js';
import { capture, runLogged } from './run.js';

let cachedEnv: NodeJS.ProcessEnv | undefined;

/**
 * The caller's environment for go, plus: VCS stamping off (keeping every other
 * GOFLAGS setting, including the go env file's), static binaries unless
 * CGO_ENABLED is set (as upstream release builds: no C toolchain needed, no
 * libc coupling), and no go.work from a parent folder steering our builds.
 */
export async function goEnv(): Promise<NodeJS.ProcessEnv> {
  if (cachedEnv !== undefined) return cachedEnv;
  let goflags: string;
  try {
    goflags = (await capture('go', ['env', 'GOFLAGS'], { cwd: os.tmpdir(), timeoutMs: 60_000 })).trim();
  } catch (err) {
    throw new Error(`the Go toolchain is needed to build etcd and kube-apiserver: ${(err as Error).message}`);
  }
  cachedEnv = {
    ...process.env,
    GOFLAGS: withBuildVcsOff(goflags),
    CGO_ENABLED: process.env['CGO_ENABLED'] ?? '0',
    GOWORK: 'off',
  };
  return cachedEnv;
}

/** Published versions of a module, as the module proxy lists them (pre-releases included). */
export async function listModuleVersions(env: NodeJS.ProcessEnv, modulePath: string): Promise<string[]> {
  // Run outside any module so the query goes to the proxy, not a build list.
  const args = ['list', '-m', '-versions', modulePath];
  const out = await capture('go', args, { cwd: os.tmpdir(), env, timeoutMs: 120_000 });
  return out.trim().split(/\s+/).slice(1);
}

interface ModDownloadJson {
  GoMod?: string;
  Error?: string;
}

/** Downloads `module@version` into the module cache; returns the path of its go.mod. */
export async function downloadModule(env: NodeJS.ProcessEnv, log: LogFn, modulePath: string, version: string): Promise<string> {
  const args = ['mod', 'download', '-json', `${modulePath}@${version}`];
  const out = await withProgress(log, { title: `downloading ${modulePath} ${version}` }, () =>
    capture('go', args, { cwd: os.tmpdir(), env, timeoutMs: 30 * 60_000 }),
  );
  const info = JSON.parse(out) as ModDownloadJson;
  if (info.Error !== undefined || info.GoMod === undefined) {
    throw new Error(`go mod download ${modulePath}@${version}: ${info.Error ?? 'no go.mod reported'}`);
  }
  return info.GoMod;
}

export interface GoBuildOptions {
  env: NodeJS.ProcessEnv;
  log: LogFn;
  /** Workspace folder holding the go.mod. */
  cwd: string;
  pkg: string;
  output: string;
  ldflags?: string;
  logFile: string;
  title: string;
  firstTime: string;
}

export async function goBuild(opts: GoBuildOptions): Promise<void> {
  const counts: GoBuildCounts = { downloads: 0, packages: 0 };
  const args = ['build', '-mod=mod', '-v', '-o', opts.output];
  if (opts.ldflags !== undefined) args.push('-ldflags', opts.ldflags);
  args.push(opts.pkg);
  await withProgress(
    opts.log,
    {
      title: opts.title,
      firstTime: opts.firstTime,
      detail: () => `${counts.downloads} modules downloaded, ${counts.packages} packages compiled`,
    },
    () =>
      runLogged('go', args, {
        cwd: opts.cwd,
        env: opts.env,
        logFile: opts.logFile,
        onLine: (line) => countGoBuildLine(counts, line),
      }),
  );
}
