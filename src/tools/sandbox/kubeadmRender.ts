// kubeadm renders the sandbox's control-plane static pods: `kubeadm init phase
// control-plane all --dry-run` with the configuration and mvproxy's patches of
// kubeadmCommands.ts. With --dry-run kubeadm writes the manifests into the
// folder KUBEADM_INIT_DRYRUN_DIR names (cmd/kubeadm/app/constants
// GetDryRunDir) instead of /etc/kubernetes/manifests, needs no root and
// starts nothing; this phase reads no certificate (kubeadm only looks for
// certificatesDir's ca.crt without ca.key, an external CA: a machine without
// /etc/kubernetes/pki has neither). The commands are
// cached beside the kubeadm binary per (version, options), so a sandbox
// starts without running kubeadm again.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { writeFileAtomicSync } from '../../util/atomicWrite.js';
import { kubeadmRenderConfig, kubeadmRenderPatches, type KubeadmRenderOptions } from './kubeadmCommands.js';

const run = promisify(execFile);

/** The container commands kubeadm rendered. */
export interface KubeadmCommands {
  apiserver: string[];
  controllerManager: string[];
}

interface StaticPod {
  spec?: { containers?: Array<{ command?: unknown }> };
}

/** The first container's command of a static pod manifest. */
export function staticPodCommand(manifest: string, what: string): string[] {
  const command = (parse(manifest) as StaticPod | null)?.spec?.containers?.[0]?.command;
  if (!Array.isArray(command) || !command.every((a): a is string => typeof a === 'string')) {
    throw new Error(`kubeadm's ${what} manifest has no container command`);
  }
  return command;
}

/** Writes the configuration and the patches folder kubeadm reads into `dir`; returns their paths. */
export async function writeRenderInputs(dir: string, opts: KubeadmRenderOptions): Promise<{ config: string; patches: string }> {
  const config = join(dir, 'kubeadm.yaml');
  const patches = join(dir, 'patches');
  await mkdir(patches, { recursive: true });
  await writeFile(config, kubeadmRenderConfig(opts.version, patches));
  for (const [name, patch] of Object.entries(kubeadmRenderPatches(opts.endpointReconciler))) {
    await writeFile(join(patches, name), `${JSON.stringify(patch, null, 2)}\n`);
  }
  return { config, patches };
}

/** Runs kubeadm (no cache); returns the rendered kube-apiserver and kube-controller-manager manifests. */
export async function renderControlPlaneManifests(kubeadm: string, opts: KubeadmRenderOptions): Promise<{ apiserver: string; controllerManager: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'mvproxy-kubeadm-render-'));
  try {
    const { config } = await writeRenderInputs(dir, opts);
    const out = join(dir, 'manifests');
    await mkdir(out);
    const args = ['init', 'phase', 'control-plane', 'all', '--config', config, '--dry-run'];
    try {
      await run(kubeadm, args, { env: { ...process.env, KUBEADM_INIT_DRYRUN_DIR: out }, timeout: 60_000 });
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr ?? '';
      throw new Error(`${kubeadm} ${args.join(' ')} failed: ${(err as Error).message}${stderr ? `\n${stderr.trim()}` : ''}`);
    }
    return {
      apiserver: await readFile(join(out, 'kube-apiserver.yaml'), 'utf8'),
      controllerManager: await readFile(join(out, 'kube-controller-manager.yaml'), 'utf8'),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Where a render is cached: beside the binary (one per release), named by what it depends on. */
export function renderCacheFile(kubeadm: string, opts: KubeadmRenderOptions): string {
  const key = createHash('sha256')
    .update(JSON.stringify({ config: kubeadmRenderConfig(opts.version, 'patches'), patches: kubeadmRenderPatches(opts.endpointReconciler) }))
    .digest('hex')
    .slice(0, 16);
  return join(dirname(kubeadm), 'kubeadm-render', `${key}.json`);
}

const memo = new Map<string, Promise<KubeadmCommands>>();

async function cachedOrRendered(kubeadm: string, opts: KubeadmRenderOptions): Promise<KubeadmCommands> {
  const file = renderCacheFile(kubeadm, opts);
  try {
    return JSON.parse(await readFile(file, 'utf8')) as KubeadmCommands;
  } catch {
    // not rendered yet (or unreadable): render
  }
  const manifests = await renderControlPlaneManifests(kubeadm, opts);
  const commands: KubeadmCommands = {
    apiserver: staticPodCommand(manifests.apiserver, 'kube-apiserver'),
    controllerManager: staticPodCommand(manifests.controllerManager, 'kube-controller-manager'),
  };
  await mkdir(dirname(file), { recursive: true });
  writeFileAtomicSync(file, `${JSON.stringify(commands, null, 2)}\n`);
  return commands;
}

/** kubeadm's kube-apiserver and kube-controller-manager commands for these options: from the cache, or rendered once. */
export function kubeadmCommands(kubeadm: string, opts: KubeadmRenderOptions): Promise<KubeadmCommands> {
  const key = renderCacheFile(kubeadm, opts);
  let pending = memo.get(key);
  if (!pending) {
    pending = cachedOrRendered(kubeadm, opts);
    memo.set(key, pending);
    pending.catch(() => memo.delete(key));
  }
  return pending;
}
