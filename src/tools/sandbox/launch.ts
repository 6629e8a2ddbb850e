// Starting the sandbox's etcd and kube-apiservers, and waiting until each is
// ready: etcd answers /health, an apiserver's /readyz answers 200. Each
// process is handed over as soon as it is spawned, so a start that fails
// can still be stopped.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { InstalledComponents } from '../install/index.js';
import { httpsGet } from '../../util/https.js';
import { apiserverListen, auditLogPath, etcdProcess, kubeApiserverProcess, type ApiserverAuditLog, type RunningApiserver } from './apiservers.js';
import { kubeadmCommands } from './kubeadmRender.js';
import type { SandboxPki } from './pki.js';
import { ManagedProcess } from './processes.js';

/** Where the sandbox's processes live, and whom they report to. */
export interface LaunchContext {
  dir: string;
  logsDir: string;
  components: InstalledComponents;
  progress: (line: string) => void;
  /** Network mode `namespace`: the command that enters the sandbox's network namespace (netns.ts). */
  enter?: readonly string[];
}

/** etcd on fresh data: the process at once, and its readiness to wait for. */
export function startEtcd(ctx: LaunchContext, clientPort: number, peerPort: number): { process: ManagedProcess; ready: Promise<void> } {
  const dataDir = join(ctx.dir, 'etcd-data');
  rmSync(dataDir, { recursive: true, force: true });
  const client = `http://127.0.0.1:${clientPort}`;
  ctx.progress(`starting etcd on ${client}`);
  const etcd = new ManagedProcess(
    etcdProcess({ command: ctx.components.etcd, dataDir, clientPort, peerPort, logsDir: ctx.logsDir, ...(ctx.enter ? { enter: ctx.enter } : {}) }),
  );
  const ready = etcd.waitReady('etcd', async (signal) => {
    const res = await fetch(`${client}/health`, { signal });
    return res.ok;
  });
  return { process: etcd, ready };
}

/** How a sandbox's apiservers are run: against which etcd, with which certificates, audit policy and peer proxy. */
export interface ApiserverLaunch extends LaunchContext {
  etcdPort: number;
  pki: SandboxPki;
  /** The audit policy, when the sandbox keeps audit logs. */
  auditPolicyPath?: string;
  upstreamPeerProxy: boolean;
}

/** Starts the kube-apiserver of `run` (its process is `run.process` from the start); resolves once it is ready. */
export async function launchApiserver(run: RunningApiserver, launch: ApiserverLaunch): Promise<void> {
  const name = run.spec.name;
  const binaries = launch.components.kubernetes[run.spec.version];
  if (!binaries) throw new Error(`kube-apiserver ${run.spec.version} is not installed`);
  const listen = apiserverListen(run);
  launch.progress(
    `starting kube-apiserver ${run.spec.version} as ${name} on https://${listen.host}:${listen.port}` +
      (run.nodeAddress === undefined ? '' : ` (in the sandbox network namespace; host relay https://127.0.0.1:${run.port})`) +
      (run.spec.runtimeConfig ? ` (--runtime-config=${run.spec.runtimeConfig})` : ''),
  );
  const pki = launch.pki;
  const audit: ApiserverAuditLog | undefined = launch.auditPolicyPath
    ? { policyFile: launch.auditPolicyPath, logPath: auditLogPath(launch.logsDir, name) }
    : undefined;
  const kubeadm = await kubeadmCommands(binaries.kubeadm, { version: run.spec.version, endpointReconciler: run.spec.endpointReconciler ?? 'none' });
  run.process = new ManagedProcess(
    kubeApiserverProcess({
      spec: run.spec,
      command: binaries.kubeApiserver,
      kubeadm: kubeadm.apiserver,
      port: run.port,
      etcdPort: launch.etcdPort,
      pki,
      logsDir: launch.logsDir,
      ...(audit ? { audit } : {}),
      upstreamPeerProxy: launch.upstreamPeerProxy,
      listen,
      ...(launch.enter ? { enter: launch.enter } : {}),
    }),
  );
  const process = run.process;
  await process.waitReady(`kube-apiserver ${name}`, async () => {
    const res = await httpsGet(`https://127.0.0.1:${run.port}/readyz`, { ca: pki.ca.cert, ...pki.admin }, {}, 2000);
    return res.status === 200;
  });
  launch.progress(`kube-apiserver ${name} is ready`);
}
