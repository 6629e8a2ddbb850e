// The sandbox's kube-controller-manager: the real namespace controller and
// garbage collector KEP-4020 exists for, run the way kubeadm runs it (its
// command is kubeadm's own render for its version, kubeadmRender.ts, with the
// files and port of CONTROLLER_MANAGER_SUBSTITUTED_FLAGS the sandbox's) and
// connected the way kubeadm connects it: controller-manager.conf points at
// the node-local endpoint, which in mode mvproxy is the node's sidecar.
//
// It exits when it loses leader election (it does when its apiserver goes
// away for longer than the renew deadline); kubelet restarts a static pod's
// container then, and so does this supervisor, with kubelet's back-off. It is
// upgraded with its node, as `kubeadm upgrade node` does: once the node's
// apiserver runs another version, the old process is killed and one of that
// version started at once (kubelet replacing the static pod).
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { InstalledComponents } from '../install/index.js';
import { CONTROLLER_MANAGER_SUBSTITUTED_FLAGS, parseKubeadmCommand, substituteFlags } from './kubeadmCommands.js';
import { kubeadmCommands } from './kubeadmRender.js';
import { writeKubeconfig } from './kubeconfig.js';
import type { SandboxPki } from './pki.js';
import { ManagedProcess, type ProcessSpec } from './processes.js';
import type { ControllerManagerState } from './state.js';

export interface ControllerManagerSpec {
  command: string;
  /** The kubeadm binary of `version`, which renders its command. */
  kubeadm: string;
  version: string;
  /** The node-local endpoint it talks to (URL, as seen from where it runs): a sidecar in mode mvproxy, else the apiserver itself. */
  server: string;
  /** The apiserver whose node it runs on. */
  node: string;
  /** Its own secure (healthz, metrics) port, on loopback. */
  port: number;
  pki: SandboxPki;
  dir: string;
  logsDir: string;
  /** Network mode `namespace`: the command that enters the sandbox's network namespace. */
  enter?: readonly string[];
  /** kubeadm's command for it at `version` (default: rendered by that `kubeadm`; tests give a stand-in). */
  render?: (kubeadm: string, version: string) => Promise<readonly string[]>;
}

/** kubeadm's own render of kube-controller-manager's command at `version`. */
async function renderedCommand(kubeadm: string, version: string): Promise<readonly string[]> {
  return (await kubeadmCommands(kubeadm, { version, endpointReconciler: 'none' })).controllerManager;
}

/** kubeadm's arguments for kube-controller-manager (`kubeadm`, its rendered command), with the sandbox's files and port in place. */
export function kubeControllerManagerArgs(o: { kubeadm: readonly string[]; kubeconfig: string; port: number; pki: SandboxPki }): string[] {
  const { pki } = o;
  return substituteFlags(parseKubeadmCommand(o.kubeadm).flags, CONTROLLER_MANAGER_SUBSTITUTED_FLAGS, {
    'secure-port': String(o.port),
    kubeconfig: o.kubeconfig,
    'authentication-kubeconfig': o.kubeconfig,
    'authorization-kubeconfig': o.kubeconfig,
    'client-ca-file': pki.ca.cert,
    'requestheader-client-ca-file': pki.frontProxyCa.cert,
    'root-ca-file': pki.ca.cert,
    'service-account-private-key-file': pki.serviceAccount.privateKey,
    'cluster-signing-cert-file': pki.ca.cert,
    'cluster-signing-key-file': pki.ca.key,
  });
}

/** kubelet's container restart back-off: at once the first time, then 10 s doubling to 5 min; forgotten after 10 min of running. */
export function kubeletRestartDelayMs(failuresInARow: number): number {
  if (failuresInARow <= 1) return 0;
  return Math.min(10_000 * 2 ** (failuresInARow - 2), 300_000);
}
const BACKOFF_RESET_MS = 600_000;

/** Runs kube-controller-manager and restarts it whenever it exits, until stopped. */
export class SandboxControllerManager {
  private process?: ManagedProcess;
  /** kubeadm's rendered command, once start() has it. */
  private rendered: readonly string[] = [];
  private stopped = false;
  private readonly stopping = new AbortController();
  private restartCount = 0;
  /** Set while it is being replaced by another version: its exit is no failure, the next one starts at once. */
  private replacing = false;
  /** Cut short by an upgrade: a new static pod does not wait out the old one's back-off. */
  private backOff = new AbortController();
  private loop?: Promise<void>;
  readonly kubeconfig: string;
  readonly logFile: string;

  constructor(private spec: ControllerManagerSpec) {
    this.kubeconfig = join(spec.dir, 'kubeconfig-kube-controller-manager');
    this.logFile = join(spec.logsDir, 'kube-controller-manager.log');
  }

  async start(progress: (line: string) => void): Promise<void> {
    await writeKubeconfig(this.kubeconfig, {
      server: this.spec.server,
      caFile: this.spec.pki.ca.cert,
      user: { certFile: this.spec.pki.controllerManagerClient.cert, keyFile: this.spec.pki.controllerManagerClient.key },
      name: 'kube-controller-manager',
    });
    this.rendered = await (this.spec.render ?? renderedCommand)(this.spec.kubeadm, this.spec.version);
    progress(`starting kube-controller-manager ${this.spec.version} beside ${this.spec.node}, through ${this.spec.server}`);
    this.loop = this.supervise();
  }

  private processSpec(): ProcessSpec {
    return {
      name: 'kube-controller-manager',
      command: this.spec.command,
      args: kubeControllerManagerArgs({ kubeadm: this.rendered, kubeconfig: this.kubeconfig, port: this.spec.port, pki: this.spec.pki }),
      logFile: this.logFile,
      ...(this.spec.enter ? { enter: this.spec.enter } : {}),
    };
  }

  private async supervise(): Promise<void> {
    let failuresInARow = 0;
    while (!this.stopped) {
      const startedAt = Date.now();
      const child = new ManagedProcess(this.processSpec());
      this.process = child;
      await child.exited;
      if (this.stopped) return;
      this.restartCount += 1;
      if (this.replacing) {
        this.replacing = false;
        failuresInARow = 0;
        continue;
      }
      failuresInARow = Date.now() - startedAt > BACKOFF_RESET_MS ? 1 : failuresInARow + 1;
      this.backOff = new AbortController();
      const wake = AbortSignal.any([this.stopping.signal, this.backOff.signal]);
      await sleep(kubeletRestartDelayMs(failuresInARow), undefined, { signal: wake }).catch(() => undefined);
    }
  }

  /** The release it runs. */
  get version(): string {
    return this.spec.version;
  }

  /** The apiserver whose node it runs on. */
  get node(): string {
    return this.spec.node;
  }

  /** Kills it with SIGKILL, as a crash would; it is restarted as kubelet would (back-off). */
  async kill(): Promise<void> {
    await this.process?.kill();
  }

  /** When apiserver `node` (just started) is its node and runs another release: replaced by that release's (upgrade). */
  async followNode(node: string, version: string, components: InstalledComponents, progress: (line: string) => void): Promise<void> {
    if (node !== this.spec.node || version === this.spec.version) return;
    const binaries = components.kubernetes[version];
    if (!binaries?.kubeControllerManager) throw new Error(`kube-controller-manager ${version} is not installed`);
    progress(`replacing kube-controller-manager ${this.spec.version} beside ${node} by ${version}`);
    await this.upgrade(binaries.kubeControllerManager, binaries.kubeadm, version);
  }

  /** Replaces it by release `version` (binary `command`, its command line rendered by that release's `kubeadm`): the running one killed, the new one started at once. */
  async upgrade(command: string, kubeadm: string, version: string): Promise<void> {
    if (version === this.spec.version) return;
    this.rendered = await (this.spec.render ?? renderedCommand)(kubeadm, version);
    this.spec = { ...this.spec, command, kubeadm, version };
    if (this.process?.running) {
      this.replacing = true;
      await this.process.kill();
    } else {
      this.backOff.abort();
    }
  }

  /** Its process id while it runs (tests kill it). */
  get pid(): number | undefined {
    return this.process?.running ? this.process.pid : undefined;
  }

  state(): ControllerManagerState {
    return {
      version: this.spec.version,
      node: this.spec.node,
      server: this.spec.server,
      kubeconfig: this.kubeconfig,
      logFile: this.logFile,
      running: this.process?.running ?? false,
      restarts: this.restartCount,
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    await this.process?.stop();
    await this.loop;
  }
}
