// The sandbox's state file content (state.ts), from what runs: every URL the
// host uses (the host's relays in network mode `namespace`), and where each
// thing is inside the namespace in that mode.
import { join } from 'node:path';
import { apiserverListen, sidecarListen, type RunningApiserver } from './apiservers.js';
import type { SandboxControllerManager } from './controllerManager.js';
import type { SandboxControlPlanes } from './controlPlanes.js';
import type { SandboxNetwork } from './network.js';
import type { SandboxMode } from './options.js';
import type { SandboxPki } from './pki.js';
import type { SandboxSidecars } from './sidecars.js';
import type { SandboxApiserverState, SandboxState } from './state.js';

export interface SandboxView {
  dir: string;
  logsDir: string;
  mode: SandboxMode;
  apiservers: RunningApiserver[];
  pki: SandboxPki;
  kubectl: string;
  etcdPort: number;
  sidecars?: SandboxSidecars;
  controlPlanes?: SandboxControlPlanes;
  controllerManager?: SandboxControllerManager;
  network: SandboxNetwork;
}

function apiserverState(v: SandboxView, run: RunningApiserver): SandboxApiserverState {
  const kubeconfigDirect = join(v.dir, `kubeconfig-${run.spec.name}-direct`);
  const url = (a: { host: string; port: number }): string => `https://${a.host}:${a.port}`;
  return {
    name: run.spec.name,
    version: run.spec.version,
    ...(run.spec.runtimeConfig ? { runtimeConfig: run.spec.runtimeConfig } : {}),
    hostname: run.spec.name,
    direct: `https://127.0.0.1:${run.port}`,
    ...(v.sidecars ? v.sidecars.sidecarState(run) : {}),
    kubeconfig: { direct: kubeconfigDirect, ...(v.sidecars ? { sidecar: join(v.dir, `kubeconfig-${run.spec.name}-sidecar`) } : {}) },
    running: run.process?.running ?? false,
    logFile: join(v.logsDir, `${run.spec.name}.log`),
    ...(run.nodeAddress === undefined
      ? {}
      : {
          nodeAddress: run.nodeAddress,
          inNamespace: { direct: url(apiserverListen(run)), ...(v.sidecars ? { sidecar: url(sidecarListen(run)) } : {}) },
        }),
  };
}

export function sandboxState(v: SandboxView): SandboxState {
  return {
    pid: process.pid,
    mode: v.mode,
    dir: v.dir,
    apiservers: v.apiservers.map((run) => apiserverState(v, run)),
    kubectl: v.kubectl,
    ca: v.pki.ca.cert,
    clientCerts: { admin: v.pki.admin, user: v.pki.user },
    etcd: `http://127.0.0.1:${v.etcdPort}`,
    logs: v.logsDir,
    controlSocket: join(v.dir, 'control.sock'),
    network: v.network.state(),
    ...(v.controlPlanes ? v.controlPlanes.state() : {}),
    ...(v.controllerManager ? { controllerManager: v.controllerManager.state() } : {}),
  };
}
