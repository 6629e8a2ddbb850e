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
   * Run a real kube-controller-manager (controllerManager.ts) at the oldest
   * version in the sandbox, beside the first apiserver of that version and
   * connected to that node's endpoint as kubeadm connects it. Off by default:
   * it costs CPU on a small machine.
   */
  controllerManager?: boolean;
  /**
   * `loopback` (default): every process on the host's 127.0.0.1. `namespace`:
   * every process in the sandbox's own network namespace, each node at its
   * own address (192.0.2.11, .12, ...; apiserver on 6444, sidecar on 6443, as
   * kubeadm lays a node out), the host reaching them through relays on the
   * same 127.0.0.1 ports; and the control plane publishes the `kubernetes`
   * Service's endpoints (the API refuses loopback addresses there).
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
