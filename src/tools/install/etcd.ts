// etcd, built from the go.etcd.io/etcd/server/v3 module (its root is `package main`).
// kube-apiserver 1.36+ wants etcd 3.5.11+ or 3.6; distribution packages are older.

import fs from 'node:fs/promises';
import path from 'node:path';
import { etcdPaths, goWorkspaceDir, installFileAtomically, isInstalled, logPath, removeStaleTemps, writeIfChanged, writeMarker } from './cache.js';
import type { InstallContext } from './context.js';
import { downloadModule, goBuild, goEnv, listModuleVersions } from './go.js';
import { ETCD_MODULE, etcdBuildGoMod } from './gomod.js';
import { verifyVersion } from './run.js';
import { assertPublished, parseEtcdVersion } from './versions.js';

export function etcdBinary(cacheRoot: string, version: string): string {
  return etcdPaths(cacheRoot, parseEtcdVersion(version).version).binary;
}

export async function etcdInstalled(cacheRoot: string, version: string): Promise<boolean> {
  const paths = etcdPaths(cacheRoot, parseEtcdVersion(version).version);
  return isInstalled(paths.marker, [paths.binary]);
}

export async function assertEtcdReleaseExists(version: string): Promise<void> {
  const published = await listModuleVersions(await goEnv(), ETCD_MODULE);
  assertPublished('etcd', parseEtcdVersion(version).version, published);
}

export async function ensureEtcd(ctx: InstallContext, version: string): Promise<string> {
  const v = parseEtcdVersion(version);
  const paths = etcdPaths(ctx.cacheRoot, v.version);
  if (await isInstalled(paths.marker, [paths.binary])) return paths.binary;

  const env = await goEnv();
  await fs.mkdir(paths.dir, { recursive: true });
  await removeStaleTemps(paths.dir);
  const goModPath = await downloadModule(env, ctx.log, ETCD_MODULE, v.version);
  const workspace = goWorkspaceDir(ctx.cacheRoot, 'etcd', v.version);
  await fs.mkdir(workspace, { recursive: true });
  await writeIfChanged(path.join(workspace, 'go.mod'), etcdBuildGoMod(await fs.readFile(goModPath, 'utf8'), v));

  const reported = await installFileAtomically(
    paths.binary,
    (tmp) =>
      goBuild({
        env,
        log: ctx.log,
        cwd: workspace,
        pkg: ETCD_MODULE,
        output: tmp,
        // No debug tables: a third smaller, nobody debugs the test bed's etcd.
        ldflags: '-s -w',
        logFile: logPath(ctx.cacheRoot, `etcd-${v.version}`),
        title: `building etcd ${v.version}`,
        firstTime: '~3 min',
      }),
    (binary) => verifyVersion(binary, ['--version'], `etcd Version: ${v.bare}`),
  );
  await writeMarker(paths.marker, {
    component: 'etcd',
    version: v.version,
    binaries: { etcd: paths.binary },
    reportedVersion: reported,
    installedAt: new Date().toISOString(),
  });
  return paths.binary;
}
