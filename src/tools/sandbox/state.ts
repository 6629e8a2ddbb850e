// The sandbox state file: how tests, benchmarks and operators find the
// running sandbox. Fields are added, never renamed; one goes only with the thing it described.
import { readFileSync } from 'node:fs';
import { writeFileAtomicSync } from '../../util/atomicWrite.js';

export interface KeyPair {
  cert: string;
  key: string;
}

export interface SandboxApiserverState {
  name: string;
  version: string;
  runtimeConfig?: string;
  /** Hostname in its UTS namespace: what its identity lease is named after. */
  hostname: string;
  direct: string;
  /** The Envoy sidecar in front of it (when the sandbox runs sidecars). */
  sidecar?: string;
  /** The Unix socket of the sidecar's Envoy admin interface (it has no TCP port). */
  sidecarAdminSocket?: string;
  /** The sidecar's Envoy statistics for Prometheus (a loopback listener serving only GET /stats/prometheus). */
  sidecarStats?: string;
  kubeconfig: { direct: string; sidecar?: string };
  running: boolean;
  logFile: string;
  /** Network mode `namespace`: its node's address in the sandbox's network namespace. */
  nodeAddress?: string;
  /** Network mode `namespace`: `direct` and `sidecar` as seen inside the namespace (the fields above are the host's relays to them). */
  inNamespace?: { direct: string; sidecar?: string };
}

/** How the sandbox's processes are networked (network.ts). */
export interface SandboxNetworkState {
  /** `loopback`: on the host's 127.0.0.1; `namespace`: in the sandbox's own network namespace, the host's URLs being relays. */
  mode: 'loopback' | 'namespace';
  /** The process holding the namespace. */
  namespacePid?: number;
  /** The command that enters it, e.g. `nsenter --net=/proc/PID/ns/net` (then a command to run there). */
  enter?: string;
  /** The relay agent's Unix socket inside the namespace (relay.ts). */
  relaySocket?: string;
  /** Every host relay: the host's address, and what it reaches inside the namespace. */
  relays?: { host: string; namespace: string }[];
}

export interface SandboxState {
  /** Process that owns the sandbox (the foreground `sandbox up`). */
  pid: number;
  /** What stands in front of the apiservers: `mvproxy`, `upstream` (kube-apiserver's own proxy) or `none`. Absent in files written before modes. */
  mode?: 'mvproxy' | 'upstream' | 'none';
  dir: string;
  apiservers: SandboxApiserverState[];
  kubectl: string;
  ca: string;
  clientCerts: { admin: KeyPair; user: KeyPair };
  etcd: string;
  logs: string;
  /** Unix socket of the sandbox's control endpoint (stop/start apiservers). */
  controlSocket: string;
  /** How its processes are networked. Absent in files written before network modes (then: loopback). */
  network?: SandboxNetworkState;
  /** The mvproxy control plane (its first replica), when the sandbox runs sidecars. */
  controlPlane?: SandboxControlPlaneState;
  /** Every replica of the control plane (one, or one per apiserver). */
  controlPlanes?: SandboxControlPlaneState[];
  /** The sandbox's kube-controller-manager, when it runs one: its version, node, endpoint, kubeconfig and log. */
  controllerManager?: ControllerManagerState;
}

/** The sandbox's kube-controller-manager (controllerManager.ts). */
export interface ControllerManagerState {
  version: string;
  /** The apiserver whose node it runs on. */
  node: string;
  /** The node-local endpoint it talks to. */
  server: string;
  kubeconfig: string;
  logFile: string;
  running: boolean;
  /** Times the sandbox started it again: after it exited (as kubelet would), or at its node's new version. */
  restarts: number;
}

export interface SandboxControlPlaneState {
  /** `mvproxy`, or `mvproxy-<apiserver>` for the replica beside that apiserver. */
  name: string;
  /** HTTP: /metrics, /status, /healthz. */
  admin: string;
  /** Unix socket of the admin gRPC API (`mvproxy admin`). */
  adminSocket: string;
  config: string;
  /** Where it keeps the model for its warm start (its configuration's warmStartFile). */
  warmStartFile: string;
  xdsSocket: string;
  /** Its mutual-TLS xDS address, when other nodes' sidecars fail over to it. */
  xdsTcp?: string;
}

export function writeState(path: string, state: SandboxState): void {
  writeFileAtomicSync(path, `${JSON.stringify(state, null, 2)}\n`);
}

export function readState(path: string): SandboxState {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new Error(`no sandbox state at ${path}: is the sandbox up? (npx mvproxy-dev sandbox up)`);
  }
  return JSON.parse(text) as SandboxState;
}
