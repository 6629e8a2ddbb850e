// The legacy discovery client the e2e tests run (test/support/legacy-discovery):
// client-go's own discovery client in legacy mode, a small Go program built
// from the Go module proxy like kube-apiserver (Go only as the means to run a
// real third-party client). Its sources live in the repository; the build and
// its binary live in the cache:
//   legacy-discovery/<client-go version>-<source digest>/legacy-discovery
//   gobuild/legacy-discovery-<client-go version>-<source digest>/ (main.go, go.mod, go.sum)
// The digest of the sources in the folder name makes an edited main.go a new
// build, never a stale binary.

import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { repoFile } from '../../util/protoRoot.js';
import { goWorkspaceDir, installFileAtomically, isInstalled, logPath, MARKER_NAME, removeStaleTemps, writeIfChanged, writeMarker } from './cache.js';
import type { InstallContext } from './context.js';
import { goBuild, goEnv } from './go.js';
import { verifyVersion } from './run.js';

const CLIENT_GO_MODULE = 'k8s.io/client-go';
const BINARY_NAME = 'legacy-discovery';
/** The files the build reads, copied into its workspace. */
const SOURCE_FILES = ['main.go', 'go.mod', 'go.sum'] as const;

export interface LegacyDiscoveryClientPaths {
  dir: string;
  binary: string;
  marker: string;
  workspace: string;
  /** The k8s.io/client-go version go.mod pins, e.g. `v0.37.2`. */
  clientGoVersion: string;
}

/** The version of `module` a go.mod requires (single-line or block form), or undefined. */
export function requiredVersion(goModText: string, module: string): string | undefined {
  const escaped = module.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(String.raw`^\s*(?:require\s+)?${escaped}\s+(v\S+)\s*(?://.*)?$`, 'm');
  return re.exec(goModText)?.[1];
}

/** Twelve hex digits of SHA-256 over the sources, each file's name and bytes in order. */
export function sourceDigest(files: ReadonlyArray<{ name: string; content: Buffer | string }>): string {
  const hash = createHash('sha256');
  for (const f of files) hash.update(`${f.name}\0${f.content.length}\0`).update(f.content);
  return hash.digest('hex').slice(0, 12);
}

export function legacyDiscoveryClientPaths(cacheRoot: string, clientGoVersion: string, digest: string): LegacyDiscoveryClientPaths {
  const key = `${clientGoVersion}-${digest}`;
  const dir = path.join(cacheRoot, 'legacy-discovery', key);
  return {
    dir,
    binary: path.join(dir, BINARY_NAME),
    marker: path.join(dir, MARKER_NAME),
    workspace: goWorkspaceDir(cacheRoot, 'legacy-discovery', key),
    clientGoVersion,
  };
}

interface Sources {
  files: Array<{ name: string; content: Buffer }>;
  clientGoVersion: string;
  digest: string;
}

async function readSources(): Promise<Sources> {
  const dir = path.dirname(repoFile(path.join('test', 'support', 'legacy-discovery', 'go.mod')));
  const files = await Promise.all(SOURCE_FILES.map(async (name) => ({ name, content: await fs.readFile(path.join(dir, name)) })));
  const goMod = files.find((f) => f.name === 'go.mod')?.content.toString('utf8') ?? '';
  const clientGoVersion = requiredVersion(goMod, CLIENT_GO_MODULE);
  if (clientGoVersion === undefined) throw new Error(`${path.join(dir, 'go.mod')} requires no ${CLIENT_GO_MODULE}`);
  return { files, clientGoVersion, digest: sourceDigest(files) };
}

/**
 * Makes sure the legacy discovery client for the repository's sources is in
 * the cache, building it when missing (about 2 min cold: client-go and its
 * dependencies; most are in the module cache after kube-apiserver's build).
 * Returns the binary's path; a warm call runs no child process.
 */
export async function ensureLegacyDiscoveryClient(ctx: InstallContext): Promise<string> {
  const sources = await readSources();
  const paths = legacyDiscoveryClientPaths(ctx.cacheRoot, sources.clientGoVersion, sources.digest);
  if (await isInstalled(paths.marker, [paths.binary])) return paths.binary;

  const env = await goEnv();
  await fs.mkdir(paths.dir, { recursive: true });
  await removeStaleTemps(paths.dir);
  for (const f of sources.files) await writeIfChanged(path.join(paths.workspace, f.name), f.content.toString('utf8'));
  const expected = `${BINARY_NAME} client-go ${sources.clientGoVersion}`;
  const reported = await installFileAtomically(
    paths.binary,
    (tmp) =>
      goBuild({
        env,
        log: ctx.log,
        cwd: paths.workspace,
        pkg: '.',
        output: tmp,
        ldflags: '-s -w',
        logFile: logPath(ctx.cacheRoot, `${BINARY_NAME}-${sources.clientGoVersion}`),
        title: `building the legacy discovery client (client-go ${sources.clientGoVersion})`,
        firstTime: '~2 min',
      }),
    (binary) => verifyVersion(binary, ['-version'], expected),
  );
  await writeMarker(paths.marker, {
    component: BINARY_NAME,
    version: `${sources.clientGoVersion}-${sources.digest}`,
    binaries: { [BINARY_NAME]: paths.binary },
    reportedVersion: reported,
    installedAt: new Date().toISOString(),
  });
  return paths.binary;
}
