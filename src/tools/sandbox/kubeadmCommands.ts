// The sandbox's kube-apiserver and kube-controller-manager command lines come
// from kubeadm's own render (kubeadmRender.ts): the kubeadm configuration and
// patches it is rendered with, the flags read back from the rendered pods,
// and the named flags the sandbox puts in place of kubeadm's values, each for
// a reason said here. Pure: no I/O.
import { stringify } from 'yaml';
import { apiserverPatch, endpointReconcilerPatch, kubeadmLayout } from '../../entry/controlPlane.js';
import { SANDBOX_SERVICE_CLUSTER_IP_RANGE } from './pki.js';

/** What a render depends on (the render cache's key, with the kubeadm binary). */
export interface KubeadmRenderOptions {
  /** The release kubeadm renders for (`kubernetesVersion`), also the kubeadm binary's. */
  version: string;
  /** `none` adds mvproxy's second patch (`--endpoint-reconciler-type=none`); `lease` is kube-apiserver's default, so no flag. */
  endpointReconciler: 'lease' | 'none';
}

/** Placeholders the render is made with; every flag that carries one is substituted. */
export const RENDER_NODE = { name: 'sandbox-node', advertiseAddress: '192.0.2.1', etcd: 'http://127.0.0.1:2379' } as const;

/**
 * The kubeadm configuration (v1beta4) the sandbox's control plane is rendered
 * from: the release pinned, the sandbox's Service range, an external etcd
 * without TLS (the sandbox's etcd speaks plain HTTP on loopback, so kubeadm
 * sets no etcd client certificate flags) and kubeadm's default
 * certificatesDir, which the sandbox's own files replace. The CRI socket is
 * named so kubeadm does not look for a container runtime: nothing runs pods.
 * The patches folder is named here, as kubeadm refuses `--patches` beside
 * `--config`.
 */
export function kubeadmRenderConfig(version: string, patchesDir: string): string {
  const init = {
    apiVersion: 'kubeadm.k8s.io/v1beta4',
    kind: 'InitConfiguration',
    localAPIEndpoint: { advertiseAddress: RENDER_NODE.advertiseAddress, bindPort: 6443 },
    nodeRegistration: { name: RENDER_NODE.name, criSocket: 'unix:///var/run/containerd/containerd.sock' },
    patches: { directory: patchesDir },
  };
  const cluster = {
    apiVersion: 'kubeadm.k8s.io/v1beta4',
    kind: 'ClusterConfiguration',
    kubernetesVersion: version,
    certificatesDir: '/etc/kubernetes/pki',
    networking: { serviceSubnet: SANDBOX_SERVICE_CLUSTER_IP_RANGE, dnsDomain: 'cluster.local' },
    etcd: { external: { endpoints: [RENDER_NODE.etcd] } },
  };
  return `${stringify(init)}---\n${stringify(cluster)}`;
}

/**
 * mvproxy's kubeadm patches (src/deploy/kubeadm.ts, what `mvproxy deploy
 * kubeadm` writes), by file name in the `--patches` folder: the apiserver moved
 * to 6444 with certificate UIDs from the front proxy, and with `none` the
 * endpoint reconciler off.
 */
export function kubeadmRenderPatches(endpointReconciler: 'lease' | 'none'): Record<string, ReturnType<typeof apiserverPatch>> {
  const layout = kubeadmLayout([{ name: RENDER_NODE.name, ip: RENDER_NODE.advertiseAddress }], { image: 'mvproxy' });
  return {
    'kube-apiserver+json.json': apiserverPatch(layout, RENDER_NODE.name),
    ...(endpointReconciler === 'none' ? { 'kube-apiserver1+json.json': endpointReconcilerPatch() } : {}),
  };
}

/** A rendered command line: the program and its flags in kubeadm's order; a flag given twice keeps its last value (as the programs read it). */
export interface RenderedCommand {
  program: string;
  flags: Map<string, string>;
}

/** Reads a container command kubeadm wrote (`program --name=value ...`); anything else is a render this code does not know. */
export function parseKubeadmCommand(command: readonly string[]): RenderedCommand {
  const [program, ...args] = command;
  if (!program) throw new Error('kubeadm rendered an empty command');
  const flags = new Map<string, string>();
  for (const arg of args) {
    const m = /^--([a-z0-9][a-z0-9-]*)=(.*)$/s.exec(arg);
    if (!m?.[1] || m[2] === undefined) throw new Error(`kubeadm rendered ${JSON.stringify(arg)} for ${program}: expected --name=value`);
    flags.set(m[1], m[2]);
  }
  return { program, flags };
}

/** A named list of flags the sandbox sets itself: flag name -> why. */
export type SubstitutedFlags = Readonly<Record<string, string>>;

/**
 * kubeadm's flags with the sandbox's values: a value puts the flag in place
 * (kubeadm's position, or at the end when kubeadm has none), undefined leaves
 * it out, a flag not given keeps kubeadm's value. Only flags of `named` may
 * be given.
 */
export function substituteFlags<K extends string>(
  rendered: ReadonlyMap<string, string>,
  named: Readonly<Record<K, string>>,
  values: Readonly<Partial<Record<K, string | undefined>>>,
): string[] {
  const own = new Map<string, string | undefined>(Object.entries(values) as Array<[string, string | undefined]>);
  for (const flag of own.keys()) {
    if (!Object.hasOwn(named, flag)) throw new Error(`internal: --${flag} is not in the list of flags the sandbox substitutes`);
  }
  const out: string[] = [];
  for (const [flag, value] of rendered) {
    if (own.has(flag)) {
      const mine = own.get(flag);
      own.delete(flag);
      if (mine !== undefined) out.push(`--${flag}=${mine}`);
      continue;
    }
    out.push(`--${flag}=${value}`);
  }
  for (const [flag, value] of own) if (value !== undefined) out.push(`--${flag}=${value}`);
  return out;
}

const PKI = "the sandbox's own PKI file, in place of kubeadm's /etc/kubernetes/pki";
const AUDIT = "the sandbox's audit log, when asked for (a test reads each event as soon as its answer arrives: blocking mode)";
const UPSTREAM = "sandbox mode `upstream`: kube-apiserver's own Mixed Version Proxy, which dials what a peer advertises";

/** The kube-apiserver flags the sandbox sets, and why; every other flag is kubeadm's, as rendered with mvproxy's patches. */
export const APISERVER_SUBSTITUTED_FLAGS = {
  'advertise-address': 'a documentation address (192.0.2.1) on loopback, the node address in a network namespace, where it listens in mode upstream',
  'secure-port': "its own picked port on loopback (several apiservers share one host); 6444 in a network namespace, as mvproxy's patch says",
  'bind-address': 'kubeadm leaves every interface; each sandbox apiserver binds only its own address',
  'etcd-servers': "the sandbox's etcd, on its picked port",
  'tls-cert-file': "this apiserver's serving certificate (one per apiserver, in one folder)",
  'tls-private-key-file': "this apiserver's serving key",
  'client-ca-file': PKI,
  'requestheader-client-ca-file': PKI,
  'proxy-client-cert-file': PKI,
  'proxy-client-key-file': PKI,
  'service-account-key-file': PKI,
  'service-account-signing-key-file': PKI,
  'kubelet-client-certificate': 'left out: the sandbox runs no kubelet, so it issues no kubelet client pair',
  'kubelet-client-key': 'left out, as kubelet-client-certificate',
  'peer-advertise-ip': UPSTREAM,
  'peer-advertise-port': UPSTREAM,
  'peer-ca-file': UPSTREAM,
  'feature-gates': `${UPSTREAM} (UnknownVersionInteroperabilityProxy named, so 1.35 works too)`,
  'runtime-config': 'ApiserverSpec.runtimeConfig: tests turn API groups off on one apiserver',
  'shutdown-delay-duration': 'ApiserverSpec.shutdownDelaySeconds: keeps serving after SIGTERM with /readyz failing, as behind a load balancer',
  'audit-policy-file': AUDIT,
  'audit-log-path': AUDIT,
  'audit-log-mode': AUDIT,
  'audit-log-format': AUDIT,
} as const satisfies SubstitutedFlags;

export type ApiserverSubstitutedFlag = keyof typeof APISERVER_SUBSTITUTED_FLAGS;

/** The kube-controller-manager flags the sandbox sets, and why; every other flag is kubeadm's. */
export const CONTROLLER_MANAGER_SUBSTITUTED_FLAGS = {
  kubeconfig: "the sandbox's controller-manager.conf: the node-local endpoint (the sidecar in mode mvproxy), as kubeadm's points at its node",
  'authentication-kubeconfig': 'the same file, as kubeadm names it three times',
  'authorization-kubeconfig': 'the same file, as kubeadm names it three times',
  'client-ca-file': PKI,
  'requestheader-client-ca-file': PKI,
  'root-ca-file': PKI,
  'service-account-private-key-file': PKI,
  'cluster-signing-cert-file': PKI,
  'cluster-signing-key-file': PKI,
  'secure-port': 'kubeadm leaves the default 10257; two sandboxes side by side need a port each',
} as const satisfies SubstitutedFlags;

export type ControllerManagerSubstitutedFlag = keyof typeof CONTROLLER_MANAGER_SUBSTITUTED_FLAGS;
