// go.mod files and go flags for building upstream binaries from the Go module proxy.
// Pure text in, text out, so they are unit tested without a network.

import type { EtcdVersion, KubernetesVersion } from './versions.js';

/** Used when an upstream go.mod has no `go` line (it always has one today). */
const FALLBACK_GO_DIRECTIVE = '1.26.0';

/**
 * The k8s.io/<staging> modules that k8s.io/kubernetes replaces with its own
 * `./staging/src/...` folders. Those replaces only apply inside the kubernetes
 * repository, so a module requiring k8s.io/kubernetes must redo them with
 * published versions or the build resolves to the unusable v0.0.0 requires.
 */
export function stagingModules(kubernetesGoModText: string): string[] {
  const module = String.raw`(k8s\.io/[A-Za-z0-9._-]+)`;
  const re = new RegExp(String.raw`^\s*(?:replace\s+)?${module}\s*=>\s*\./staging/src/${module}\s*(?://.*)?$`);
  const found: string[] = [];
  for (const line of kubernetesGoModText.split(/\r?\n/)) {
    const m = re.exec(line);
    if (m && m[1] === m[2] && !found.includes(m[1] as string)) found.push(m[1] as string);
  }
  return found;
}

/** The `go` directive's version, e.g. `1.26.0`, or undefined when absent. */
export function goDirective(goModText: string): string | undefined {
  return /^go\s+(\d+\.\d+(?:\.\d+)?)\s*(?:\/\/.*)?$/m.exec(goModText)?.[1];
}

/**
 * `godebug` settings (`default=go1.26`, ...). They only take effect in the main
 * module, so copying them keeps our build's runtime behaviour the same as upstream's.
 */
export function godebugSettings(goModText: string): string[] {
  const settings: string[] = [];
  let inBlock = false;
  for (const raw of goModText.split(/\r?\n/)) {
    const line = raw.replace(/\/\/.*$/, '').trim();
    if (inBlock) {
      if (line === ')') inBlock = false;
      else if (line !== '') settings.push(line);
      continue;
    }
    if (/^godebug\s*\($/.test(line)) inBlock = true;
    else {
      const m = /^godebug\s+(\S+=\S+)$/.exec(line);
      if (m) settings.push(m[1] as string);
    }
  }
  return settings;
}

function headerLines(module: string, upstreamGoModText: string): string[] {
  const lines = [`module ${module}`, '', `go ${goDirective(upstreamGoModText) ?? FALLBACK_GO_DIRECTIVE}`, ''];
  const godebug = godebugSettings(upstreamGoModText);
  if (godebug.length > 0) lines.push('godebug (', ...godebug.map((s) => `\t${s}`), ')', '');
  return lines;
}

/** go.mod of the workspace that builds kube-apiserver and kubectl at `version`. */
export function kubernetesBuildGoMod(kubernetesGoModText: string, version: KubernetesVersion): string {
  const staging = stagingModules(kubernetesGoModText);
  if (staging.length === 0) {
    // Without the replaces go fails far later with a confusing message; say why here.
    throw new Error(`k8s.io/kubernetes ${version.version} go.mod has no "k8s.io/X => ./staging/src/k8s.io/X" replaces`);
  }
  return [
    ...headerLines('mvproxy.local/k8sbuild', kubernetesGoModText),
    `require k8s.io/kubernetes ${version.version}`,
    '',
    'replace (',
    ...staging.map((m) => `\t${m} => ${m} ${version.stagingVersion}`),
    ')',
    '',
  ].join('\n');
}

export const ETCD_MODULE = 'go.etcd.io/etcd/server/v3';

/** go.mod of the workspace that builds etcd (the etcd server module root is `package main`). */
export function etcdBuildGoMod(etcdServerGoModText: string, version: EtcdVersion): string {
  const header = headerLines('mvproxy.local/etcdbuild', etcdServerGoModText);
  return [...header, `require ${ETCD_MODULE} ${version.version}`, ''].join('\n');
}

/**
 * `-ldflags` value stamping the release into the binaries; without it `/version`
 * and `--version` say v0.0.0. kubectl reads client-go's copy of the variables,
 * the servers component-base's; -X on a package that is not linked is ignored.
 * `-s -w` drops debug tables, as upstream release builds do (a third smaller).
 */
export function kubernetesLdflags(version: KubernetesVersion): string {
  const values: Array<[string, string]> = [
    ['gitVersion', version.version],
    ['gitMajor', '1'],
    ['gitMinor', String(version.minor)],
    ['gitTreeState', 'clean'],
  ];
  const flags = ['-s', '-w'];
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    for (const [name, value] of values) flags.push(`-X ${pkg}.${name}=${value}`);
  }
  return flags.join(' ');
}

/**
 * GOFLAGS with VCS stamping off: the build workspace may sit inside a git
 * checkout (a cache under the repo), where stamping fails or varies.
 * An explicit -buildvcs setting from the user wins.
 */
export function withBuildVcsOff(goflags: string): string {
  if (/(^|\s)-{1,2}buildvcs(=|\s|$)/.test(goflags)) return goflags;
  return goflags.trim() === '' ? '-buildvcs=false' : `${goflags.trim()} -buildvcs=false`;
}

export interface GoBuildCounts {
  downloads: number;
  packages: number;
}

/**
 * Counts one line of `go build -v` output: `go: downloading M V` per module
 * fetched, a bare import path per package compiled (cache hits print nothing).
 */
export function countGoBuildLine(counts: GoBuildCounts, line: string): void {
  if (line.startsWith('go: downloading ')) counts.downloads += 1;
  else if (/^[A-Za-z0-9_.~-]+(\/[A-Za-z0-9_.~+-]+)*$/.test(line.trim())) counts.packages += 1;
}
