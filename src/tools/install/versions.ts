// Version names accepted by the installer. Pure: no I/O, so the rules are unit tested.
// Versions end up in file paths and command lines, so anything that is not a plain
// release number is rejected before it reaches either.

export const DEFAULT_KUBERNETES_VERSIONS: readonly string[] = Object.freeze(['v1.36.3', 'v1.37.2']);
export const DEFAULT_ENVOY_VERSION = '1.40.0';
export const DEFAULT_ETCD_VERSION = 'v3.6.16';

export interface KubernetesVersion {
  /** As given, e.g. `v1.37.2`: the k8s.io/kubernetes module version. */
  readonly version: string;
  readonly minor: number;
  readonly patch: number;
  /** The matching version of the k8s.io/<staging> modules, e.g. `v0.37.2`. */
  readonly stagingVersion: string;
}

export interface EtcdVersion {
  /** Module version, e.g. `v3.6.16`. */
  readonly version: string;
  /** What `etcd --version` prints, e.g. `3.6.16`. */
  readonly bare: string;
}

const NUMBER = '(0|[1-9][0-9]*)';
const KUBERNETES_RE = new RegExp(`^v1\\.${NUMBER}\\.${NUMBER}$`);
const ETCD_RE = new RegExp(`^v3\\.${NUMBER}\\.${NUMBER}$`);
const ENVOY_RE = new RegExp(`^${NUMBER}\\.${NUMBER}\\.${NUMBER}$`);

export function parseKubernetesVersion(v: string): KubernetesVersion {
  const m = KUBERNETES_RE.exec(v);
  if (!m) {
    throw new Error(`invalid Kubernetes version ${JSON.stringify(v)}: expected a release such as v1.37.2`);
  }
  const minor = Number(m[1]);
  const patch = Number(m[2]);
  return { version: v, minor, patch, stagingVersion: `v0.${minor}.${patch}` };
}

export function parseEtcdVersion(v: string): EtcdVersion {
  if (!ETCD_RE.test(v)) {
    throw new Error(`invalid etcd version ${JSON.stringify(v)}: expected a 3.x release such as v3.6.16`);
  }
  return { version: v, bare: v.slice(1) };
}

export function parseEnvoyVersion(v: string): string {
  if (!ENVOY_RE.test(v)) {
    throw new Error(`invalid Envoy version ${JSON.stringify(v)}: expected a release such as 1.40.0`);
  }
  return v;
}

/** Numeric parts of a plain `vX.Y.Z`, or undefined for pre-releases and anything else. */
function releaseParts(v: string): [number, number, number] | undefined {
  const m = /^v(\d+)\.(\d+)\.(\d+)$/.exec(v);
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/**
 * The newest stable releases to suggest when a requested one does not exist:
 * the patch releases of the newest `minors` minor versions, newest first, at most `max`.
 */
export function suggestReleases(published: readonly string[], minors = 3, max = 10): string[] {
  const releases = published
    .map((v) => ({ v, parts: releaseParts(v) }))
    .filter((r): r is { v: string; parts: [number, number, number] } => r.parts !== undefined)
    .sort((a, b) => b.parts[0] - a.parts[0] || b.parts[1] - a.parts[1] || b.parts[2] - a.parts[2]);
  const keptMinors = new Set<string>();
  const out: string[] = [];
  for (const r of releases) {
    const minorKey = `${r.parts[0]}.${r.parts[1]}`;
    if (!keptMinors.has(minorKey)) {
      if (keptMinors.size >= minors) break;
      keptMinors.add(minorKey);
    }
    out.push(r.v);
    if (out.length >= max) break;
  }
  return out;
}

/** Throws, naming usable releases, when `version` is not among the published ones. */
export function assertPublished(what: string, version: string, published: readonly string[]): void {
  if (published.includes(version)) return;
  const hint = suggestReleases(published);
  const usable = hint.length > 0 ? hint.join(', ') : '(none found)';
  throw new Error(`${what} ${version} is not available from the Go module proxy; usable releases: ${usable}`);
}
