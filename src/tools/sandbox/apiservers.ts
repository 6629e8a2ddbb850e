// The sandbox's kube-apiservers and the etcd they share: what an apiserver is
// asked to be (ApiserverSpec, checked against what is installed) and each
// process's command line, and the optional audit log that shows how each
// apiserver read each request.
import { join } from 'node:path';
import { parseKubernetesVersion, type InstalledComponents } from '../install/index.js';
import type { SandboxPki } from './pki.js';
import type { ManagedProcess, ProcessSpec } from './processes.js';
import { NODE_APISERVER_PORT, NODE_SIDECAR_PORT } from './netns.js';
import { APISERVER_SUBSTITUTED_FLAGS, parseKubeadmCommand, substituteFlags, type ApiserverSubstitutedFlag } from './kubeadmCommands.js';

export interface ApiserverSpec {
  name: string;
  version: string;
  /** Passed to --runtime-config, e.g. `batch/v1=false`. */
  runtimeConfig?: string;
  /**
   * --shutdown-delay-duration in seconds: after SIGTERM it keeps serving this
   * long with /readyz failing, as production apiservers behind load balancers do.
   */
  shutdownDelaySeconds?: number;
  /**
   * --endpoint-reconciler-type: `none` (default: mvproxy publishes the
   * `kubernetes` Service, or nothing does), or `lease`, as kubeadm leaves an
   * apiserver: it writes its own advertised address into the Service's
   * endpoints every 10 s.
   */
  endpointReconciler?: 'lease' | 'none';
}

/** An apiserver of a sandbox: what it runs, where it and its sidecar listen, its process while it runs. */
export interface RunningApiserver {
  spec: ApiserverSpec;
  port: number;
  sidecarPort: number;
  /** The sidecar's loopback Prometheus stats listener (GET /stats/prometheus only). */
  sidecarStatsPort: number;
  /**
   * Network mode `namespace`: its node's address in the sandbox's network
   * namespace, where it listens on 6444 and its sidecar on 6443; `port` and
   * `sidecarPort` are then the host's relays to them (relay.ts).
   */
  nodeAddress?: string;
  process?: ManagedProcess;
}

/** Where an apiserver listens, seen from the network it runs in. */
export function apiserverListen(run: RunningApiserver): { host: string; port: number } {
  return run.nodeAddress === undefined ? { host: '127.0.0.1', port: run.port } : { host: run.nodeAddress, port: NODE_APISERVER_PORT };
}

/** Where its sidecar listens, seen from the network it runs in. */
export function sidecarListen(run: RunningApiserver): { host: string; port: number } {
  return run.nodeAddress === undefined ? { host: '127.0.0.1', port: run.sidecarPort } : { host: run.nodeAddress, port: NODE_SIDECAR_PORT };
}

/**
 * The sandbox's audit policy when audit logs are on: every request at level
 * Metadata (who, what, the apiserver's own reading of the path as `objectRef`,
 * `requestURI`, `verb`, `userAgent`), never bodies; the RequestReceived stage is
 * left out (ResponseStarted, for watches, and ResponseComplete say the same).
 */
export const SANDBOX_AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
`;

/** Where an apiserver's audit policy is read and its audit log written, when audit logs are on. */
export interface ApiserverAuditLog {
  policyFile: string;
  logPath: string;
}

/** The audit log of apiserver `name` in a sandbox's log folder: `<name>-audit.log`, one JSON event per line. */
export function auditLogPath(logsDir: string, name: string): string {
  return join(logsDir, `${name}-audit.log`);
}

/** `kas-a`, `kas-b`, ...: apiserver names (and hostnames) in the order given. */
export function defaultApiserverName(index: number): string {
  return `kas-${String.fromCharCode('a'.charCodeAt(0) + index)}`;
}

export function validateApiserverSpecs(specs: ApiserverSpec[], components: InstalledComponents): void {
  if (specs.length === 0) throw new Error('a sandbox needs at least one apiserver');
  const names = new Set<string>();
  for (const spec of specs) {
    if (names.has(spec.name)) throw new Error(`apiserver name ${spec.name} is used twice`);
    names.add(spec.name);
    if (!components.kubernetes[spec.version]) {
      throw new Error(`kube-apiserver ${spec.version} is not installed (installed: ${Object.keys(components.kubernetes).join(', ')})`);
    }
    if (spec.runtimeConfig !== undefined && !/^[a-z0-9./=,-]+$/i.test(spec.runtimeConfig)) {
      throw new Error(`invalid --runtime-config value for ${spec.name}: ${JSON.stringify(spec.runtimeConfig)}`);
    }
  }
}

/** Orders Kubernetes releases oldest first (the installer owns their syntax). */
export function compareVersions(a: string, b: string): number {
  const [va, vb] = [parseKubernetesVersion(a), parseKubernetesVersion(b)];
  return va.minor - vb.minor || va.patch - vb.patch;
}

/** kubectl of the newest release among `apiservers`. */
export function newestKubectl(apiservers: Iterable<RunningApiserver>, components: InstalledComponents): string {
  const newest = [...apiservers]
    .map((a) => a.spec.version)
    .sort(compareVersions)
    .at(-1);
  const kubectl = newest ? components.kubernetes[newest]?.kubectl : undefined;
  if (!kubectl) throw new Error('internal: no kubectl installed');
  return kubectl;
}

/** etcd on fresh data in `dataDir` (a throwaway store). */
export function etcdProcess(o: {
  command: string;
  dataDir: string;
  clientPort: number;
  peerPort: number;
  logsDir: string;
  /** Network mode `namespace`: it runs there, on the namespace's own 127.0.0.1. */
  enter?: readonly string[];
}): ProcessSpec {
  const client = `http://127.0.0.1:${o.clientPort}`;
  const peer = `http://127.0.0.1:${o.peerPort}`;
  return {
    name: 'etcd',
    command: o.command,
    args: [
      '--name=sandbox',
      `--data-dir=${o.dataDir}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=sandbox=${peer}`,
      '--log-level=warn',
      '--unsafe-no-fsync', // a throwaway test store; durability is not the point
    ],
    logFile: join(o.logsDir, 'etcd.log'),
    ...(o.enter ? { enter: o.enter } : {}),
  };
}

/**
 * What an apiserver advertises. By default a documentation address
 * (192.0.2.1): the sandbox needs no `kubernetes` Service endpoints and nobody
 * dials it; in network mode `namespace`, its node address. Upstream's Mixed
 * Version Proxy dials the address a peer advertises in its identity lease, so
 * in mode `upstream` every apiserver advertises where it listens, and the feature is switched on the only way it
 * works: the feature gate (beta, on by default since 1.36, named here so 1.35
 * would work too) and `--peer-ca-file` (the CA of the peers' serving
 * certificates); peers authenticate with the front-proxy client certificate.
 */
function advertiseFlags(
  listen: { host: string; port: number },
  pki: SandboxPki,
  upstreamPeerProxy: boolean,
): Partial<Record<ApiserverSubstitutedFlag, string>> {
  if (!upstreamPeerProxy) return { 'advertise-address': listen.host === '127.0.0.1' ? '192.0.2.1' : listen.host };
  return {
    'advertise-address': listen.host,
    'peer-advertise-ip': listen.host,
    'peer-advertise-port': String(listen.port),
    'peer-ca-file': pki.ca.cert,
    'feature-gates': 'UnknownVersionInteroperabilityProxy=true',
  };
}

/**
 * One kube-apiserver, in its own UTS namespace with its name as hostname (so
 * it holds its own identity lease): kubeadm's command for its version
 * (`kubeadm`, kubeadmRender.ts) with the flags of APISERVER_SUBSTITUTED_FLAGS
 * set by the sandbox.
 */
export function kubeApiserverProcess(o: {
  spec: ApiserverSpec;
  command: string;
  /** kubeadm's rendered container command for this version and endpoint reconciler. */
  kubeadm: readonly string[];
  port: number;
  etcdPort: number;
  pki: SandboxPki;
  logsDir: string;
  /** Off by default. */
  audit?: ApiserverAuditLog;
  /** Turn on kube-apiserver's own Mixed Version Proxy (sandbox mode `upstream`). */
  upstreamPeerProxy?: boolean;
  /** Where it listens: default 127.0.0.1:`port`; in network mode `namespace`, its node address and 6444. */
  listen?: { host: string; port: number };
  /** The command that enters the sandbox's network namespace, in that mode. */
  enter?: readonly string[];
}): ProcessSpec {
  const { spec, pki } = o;
  const serving = pki.serving[spec.name];
  if (!serving) throw new Error(`internal: no serving certificate for ${spec.name}`);
  const listen = o.listen ?? { host: '127.0.0.1', port: o.port };
  const args = substituteFlags(parseKubeadmCommand(o.kubeadm).flags, APISERVER_SUBSTITUTED_FLAGS, {
    'etcd-servers': `http://127.0.0.1:${o.etcdPort}`,
    'secure-port': String(listen.port),
    'bind-address': listen.host,
    ...advertiseFlags(listen, pki, o.upstreamPeerProxy ?? false),
    'tls-cert-file': serving.cert,
    'tls-private-key-file': serving.key,
    'client-ca-file': pki.ca.cert,
    'requestheader-client-ca-file': pki.frontProxyCa.cert,
    'proxy-client-cert-file': pki.frontProxyClient.cert,
    'proxy-client-key-file': pki.frontProxyClient.key,
    'service-account-key-file': pki.serviceAccount.publicKey,
    'service-account-signing-key-file': pki.serviceAccount.privateKey,
    'kubelet-client-certificate': undefined,
    'kubelet-client-key': undefined,
    ...(spec.runtimeConfig ? { 'runtime-config': spec.runtimeConfig } : {}),
    ...(spec.shutdownDelaySeconds ? { 'shutdown-delay-duration': `${spec.shutdownDelaySeconds}s` } : {}),
    // Blocking: each event is written before the request returns, so a test
    // reads it as soon as its answer arrives (batching would hold it for seconds).
    ...(o.audit
      ? { 'audit-policy-file': o.audit.policyFile, 'audit-log-path': o.audit.logPath, 'audit-log-mode': 'blocking', 'audit-log-format': 'json' }
      : {}),
  });
  return {
    name: spec.name,
    command: o.command,
    args,
    logFile: join(o.logsDir, `${spec.name}.log`),
    hostname: spec.name,
    ...(o.enter ? { enter: o.enter } : {}),
  };
}
