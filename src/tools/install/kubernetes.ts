// kube-apiserver, kubectl, kube-controller-manager and kubeadm, built from the
// k8s.io/kubernetes module at a release.

import fs from 'node:fs/promises';
import path from 'node:path';
import { goWorkspaceDir, installFileAtomically, isInstalled, kubernetesPaths, logPath, removeStaleTemps, writeIfChanged, writeMarker } from './cache.js';
import type { InstallContext } from './context.js';
import { downloadModule, goBuild, goEnv, listModuleVersions } from './go.js';
import { kubernetesBuildGoMod, kubernetesLdflags } from './gomod.js';
import { verifyVersion } from './run.js';
import { assertPublished, parseKubernetesVersion, type KubernetesVersion } from './versions.js';

const KUBERNETES_MODULE = 'k8s.io/kubernetes';

export interface KubernetesBinaries {
  kubeApiserver: string;
  kubectl: string;
  kubeControllerManager: string;
  /** Renders the sandbox's control-plane command lines (src/tools/sandbox/kubeadmRender.ts). */
  kubeadm: string;
}

interface BinarySpec {
  name: 'kube-apiserver' | 'kubectl' | 'kube-controller-manager' | 'kubeadm';
  pkg: string;
  /** Rough cold build time on 2 cores, for the start line. */
  firstTime: string;
  versionArgs: string[];
  expected: (v: KubernetesVersion) => string;
}

const BINARIES: readonly BinarySpec[] = [
  {
    name: 'kube-apiserver',
    pkg: 'k8s.io/kubernetes/cmd/kube-apiserver',
    firstTime: '~20 min',
    versionArgs: ['--version'],
    expected: (v) => `Kubernetes ${v.version}`,
  },
  {
    // Built second: it shares most packages with kube-apiserver, so it mostly links.
    name: 'kubectl',
    pkg: 'k8s.io/kubernetes/cmd/kubectl',
    firstTime: '~2 min',
    versionArgs: ['version', '--client'],
    expected: (v) => `Client Version: ${v.version}`,
  },
  {
    // The namespace controller and garbage collector KEP-4020 protects (docs/kubeadm.md).
    name: 'kube-controller-manager',
    pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager',
    firstTime: '~8 min',
    versionArgs: ['--version'],
    expected: (v) => `Kubernetes ${v.version}`,
  },
  {
    // Last: a cache installed before kubeadm was added builds only this one (the others are re-verified).
    name: 'kubeadm',
    pkg: 'k8s.io/kubernetes/cmd/kubeadm',
    firstTime: '~4 min',
    versionArgs: ['version', '-o', 'short'],
    expected: (v) => v.version,
  },
];

/** Every binary of a release, by where it is (or would be) installed. */
function binariesOf(cacheRoot: string, v: KubernetesVersion): KubernetesBinaries {
  const paths = kubernetesPaths(cacheRoot, v.version);
  return {
    kubeApiserver: paths.kubeApiserver,
    kubectl: paths.kubectl,
    kubeControllerManager: paths.kubeControllerManager,
    kubeadm: path.join(paths.dir, 'kubeadm'),
  };
}

export function kubernetesBinaries(cacheRoot: string, version: string): KubernetesBinaries {
  return binariesOf(cacheRoot, parseKubernetesVersion(version));
}

export async function kubernetesInstalled(cacheRoot: string, version: string): Promise<boolean> {
  const v = parseKubernetesVersion(version);
  return isInstalled(kubernetesPaths(cacheRoot, v.version).marker, Object.values(binariesOf(cacheRoot, v)));
}

/** Fails fast, before any long build, if a release is not on the module proxy. */
export async function assertKubernetesReleasesExist(versions: readonly string[]): Promise<void> {
  if (versions.length === 0) return;
  const published = await listModuleVersions(await goEnv(), KUBERNETES_MODULE);
  for (const v of versions) assertPublished('Kubernetes', parseKubernetesVersion(v).version, published);
}

/** Writes the build workspace's go.mod from the release's own go.mod; returns the workspace. */
async function prepareWorkspace(ctx: InstallContext, env: NodeJS.ProcessEnv, v: KubernetesVersion): Promise<string> {
  const goModPath = await downloadModule(env, ctx.log, KUBERNETES_MODULE, v.version);
  const upstreamGoMod = await fs.readFile(goModPath, 'utf8');
  const dir = goWorkspaceDir(ctx.cacheRoot, 'kubernetes', v.version);
  await fs.mkdir(dir, { recursive: true });
  await writeIfChanged(path.join(dir, 'go.mod'), kubernetesBuildGoMod(upstreamGoMod, v));
  return dir;
}

export async function ensureKubernetes(ctx: InstallContext, version: string): Promise<KubernetesBinaries> {
  const v = parseKubernetesVersion(version);
  const paths = kubernetesPaths(ctx.cacheRoot, v.version);
  const result = binariesOf(ctx.cacheRoot, v);
  if (await isInstalled(paths.marker, Object.values(result))) return result;

  const env = await goEnv();
  await fs.mkdir(paths.dir, { recursive: true });
  await removeStaleTemps(paths.dir);
  const workspace = await prepareWorkspace(ctx, env, v);
  const reported: string[] = [];
  for (const spec of BINARIES) {
    const finalPath = path.join(paths.dir, spec.name);
    const line = await installFileAtomically(
      finalPath,
      (tmp) =>
        goBuild({
          env,
          log: ctx.log,
          cwd: workspace,
          pkg: spec.pkg,
          output: tmp,
          ldflags: kubernetesLdflags(v),
          logFile: logPath(ctx.cacheRoot, `${spec.name}-${v.version}`),
          title: `building ${spec.name} ${v.version}`,
          firstTime: spec.firstTime,
        }),
      (binary) => verifyVersion(binary, spec.versionArgs, spec.expected(v)),
    );
    reported.push(line);
  }
  await writeMarker(paths.marker, {
    component: 'kubernetes',
    version: v.version,
    binaries: {
      'kube-apiserver': result.kubeApiserver,
      kubectl: result.kubectl,
      'kube-controller-manager': result.kubeControllerManager,
      kubeadm: result.kubeadm,
    },
    reportedVersion: reported.join('; '),
    installedAt: new Date().toISOString(),
  });
  return result;
}
