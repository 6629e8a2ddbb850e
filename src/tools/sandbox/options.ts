// What a sandbox is asked to be: its apiservers, what stands in front of
// them (its mode), and the options of its control plane and sidecars.
import type { InstalledComponents } from '../install/index.js';
import type { ApiserverSpec } from './apiservers.js';
import type { ControlPlaneReplicas } from './controlPlanes.js';
import type { SandboxNetworkMode } from './netns.js';

export const SANDBOX_MODES = ['mvproxy', 'upstream', 'none'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

export interface SandboxOptions {
  dir: string;
  apiservers: ApiserverSpec[];
  components: InstalledComponents;
  /** First port of a fixed block; by default every port is picked free by the kernel. */
  basePort?: number;
  /**
   * What stands between clients and the apiservers (default `mvproxy`):
   * `mvproxy`, the control plane and one Envoy sidecar per apiserver;
   * `upstream`, no sidecars, kube-apiserver's own Mixed Version Proxy on;
   * `none`, neither (the skew problem as it is).
   */
  mode?: SandboxMode;
  /** In mode mvproxy: one control plane (default), or one replica per apiserver as on a kubeadm cluster (controlPlanes.ts). */
  controlPlaneReplicas?: ControlPlaneReplicas;
  /** `host:port` of an HTTP CONNECT proxy the sidecars reach peers through. */
  peerEgressProxy?: string;
  /** In mode mvproxy: each sidecar's Envoy worker threads (`--concurrency`); default DEFAULT_ENVOY_CONCURRENCY, as deploy kubeadm. */
  envoyConcurrency?: number;
  /**
   * Give every apiserver an audit log (Metadata level, written before each
   * request returns) in the logs folder: `auditLogPath(name)`. Off by default.
   */
  auditLogs?: boolean;
  /**
   * Run a real kube-controller-manager (controllerManager.ts) beside the
   * first apiserver of the oldest version (or `controllerManagerNode`), at
   * that node's version and connected to that node's endpoint as kubeadm
   * connects it; upgraded with that node (startApiserver at another version).
   * Off by default: it costs CPU on a small machine.
   */
  controllerManager?: boolean;
  /**
   * `namespace` (default), the node layout kubeadm builds: every process in
   * the sandbox's own network namespace, each node at its own address
   * (192.0.2.11, .12, ...; apiserver on 6444, sidecar on 6443), the host
   * reaching them through relays on 127.0.0.1 ports; the `kubernetes` Service
   * is published (by the control plane in mode mvproxy, by the apiservers'
   * lease reconcilers otherwise). `loopback`: every process on the host's
   * 127.0.0.1, for machines that refuse unprivileged user namespaces; nothing
   * publishes the `kubernetes` Service there.
   */
  network?: SandboxNetworkMode;
  /**
   * Network mode `namespace`, mode mvproxy: whether the replicas publish the
   * `kubernetes` Service (default true). False is a kubeadm cluster before the
   * operator's switch (docs/kubeadm.md): give the apiservers
   * `endpointReconciler: 'lease'` to have them publish themselves.
   */
  publishKubernetesService?: boolean;
  /** The apiserver whose node the kube-controller-manager runs on (its endpoint); by default the first of the oldest version. */
  controllerManagerNode?: string;
  progress?: (line: string) => void;
}

/**
 * Who keeps the `kubernetes` Service's endpoints, as each mode runs for real:
 * in mode mvproxy its control plane publishes the sidecars (the apiservers'
 * own reconciler off, as deploy/kubeadm sets it); in modes `none` and
 * `upstream` every apiserver's lease reconciler, kubeadm's default. On
 * loopback nothing can: the API refuses loopback addresses there.
 */
export function endpointReconcilerFor(mode: SandboxMode, network: SandboxNetworkMode): 'lease' | 'none' {
  return mode !== 'mvproxy' && network === 'namespace' ? 'lease' : 'none';
}
