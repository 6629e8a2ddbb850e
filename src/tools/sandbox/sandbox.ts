// The local mixed-version control plane: one etcd, several kube-apiservers
// (each in its own UTS namespace so each has its own identity lease), all
// sharing etcd (their command lines: apiservers.ts). Later layers add the
// mvproxy control plane and one Envoy sidecar per apiserver (sidecars.ts).
// The Sandbox starts and stops them all and writes the state file. Its
// network (network.ts): the host's loopback, or a network namespace of its own.
import { mkdirSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ensureSandboxPki, type SandboxPki } from './pki.js';
import { writeApiserverKubeconfigs } from './kubeconfig.js';
import type { ManagedProcess } from './processes.js';
import { writeState, type SandboxState } from './state.js';
import { serviceAccountToken } from './serviceAccount.js';
import {
  apiserverListen,
  auditLogPath,
  compareVersions,
  newestKubectl,
  SANDBOX_AUDIT_POLICY,
  sidecarListen,
  validateApiserverSpecs,
  type ApiserverSpec,
  type RunningApiserver,
} from './apiservers.js';
import { SandboxSidecars } from './sidecars.js';
import { SandboxControlPlanes } from './controlPlanes.js';
import { endpointReconcilerFor, type SandboxMode, type SandboxOptions } from './options.js';
import { allocatePorts } from './portLayout.js';
import { launchApiserver, startEtcd, type LaunchContext } from './launch.js';
import { SandboxControllerManager } from './controllerManager.js';
import { SandboxNetwork } from './network.js';
import { DEFAULT_SANDBOX_NETWORK } from './netns.js';
import { sandboxState } from './stateView.js';

/** The service account whose token the sandbox's sidecar kubeconfigs use (cluster-admin). */
export const SANDBOX_ADMIN_SERVICE_ACCOUNT = 'mvproxy-sandbox-admin';

export class Sandbox {
  private etcd?: ManagedProcess;
  private etcdPort = 0;
  private readonly apiservers = new Map<string, RunningApiserver>();
  private pki?: SandboxPki;
  private adminToken?: string;
  private readonly dir: string;
  private readonly progress: (line: string) => void;
  private readonly sidecars: SandboxSidecars;
  private readonly controlPlanes: SandboxControlPlanes;
  /** Apiservers given an audit policy of their own at a restart (startApiserver): its file. */
  private readonly auditPolicies = new Map<string, string>();
  private controllerManager?: SandboxControllerManager;

  private constructor(
    private readonly opts: SandboxOptions,
    private readonly network: SandboxNetwork,
  ) {
    this.dir = resolve(opts.dir);
    this.progress = opts.progress ?? (() => undefined);
    const enter = network.enter;
    this.sidecars = new SandboxSidecars({
      dir: this.dir,
      logsDir: this.logsDir,
      envoy: opts.components.envoy,
      progress: this.progress,
      ...(enter ? { enter } : {}),
      ...(opts.envoyConcurrency === undefined ? {} : { envoyConcurrency: opts.envoyConcurrency }),
    });
    this.controlPlanes = new SandboxControlPlanes({
      dir: this.dir,
      logsDir: this.logsDir,
      replicas: opts.controlPlaneReplicas ?? 'one',
      ...(opts.peerEgressProxy ? { peerEgressProxy: opts.peerEgressProxy } : {}),
      ...(opts.publishKubernetesService === undefined ? {} : { publishKubernetesService: opts.publishKubernetesService }),
      progress: this.progress,
      ...(enter ? { namespace: { enter, relay: (port, target) => network.expose(port, target) } } : {}),
    });
  }

  get statePath(): string {
    return join(this.dir, 'state.json');
  }
  get logsDir(): string {
    return join(this.dir, 'logs');
  }
  private get auditPolicyPath(): string {
    return join(this.dir, 'audit-policy.yaml');
  }

  /** The audit log of apiserver `name` (one JSON event per line), when the sandbox was started with `auditLogs`. */
  auditLogPath(name: string): string | undefined {
    this.requireApiserver(name);
    return this.opts.auditLogs || this.auditPolicies.has(name) ? auditLogPath(this.logsDir, name) : undefined;
  }

  /** Starts everything and waits until every apiserver is ready; on failure stops what it started. */
  static async up(opts: SandboxOptions): Promise<Sandbox> {
    validateApiserverSpecs(opts.apiservers, opts.components);
    const logsDir = join(resolve(opts.dir), 'logs');
    mkdirSync(logsDir, { recursive: true });
    const mode = opts.network ?? DEFAULT_SANDBOX_NETWORK;
    if (mode === 'namespace') opts.progress?.('making the sandbox network namespace and its relay agent');
    const network = await SandboxNetwork.create(mode, resolve(opts.dir), logsDir, opts.apiservers.length);
    const sandbox = new Sandbox(opts, network);
    try {
      await sandbox.start();
      return sandbox;
    } catch (err) {
      await sandbox.down();
      throw err;
    }
  }

  private async start(): Promise<void> {
    mkdirSync(this.logsDir, { recursive: true });
    if (this.opts.auditLogs) writeFileSync(this.auditPolicyPath, SANDBOX_AUDIT_POLICY);
    const names = this.opts.apiservers.map((a) => a.name);
    this.pki = await ensureSandboxPki(join(this.dir, 'pki'), { apiserverNames: names, extraSans: this.network.servingSans(names) });
    const ports = await allocatePorts(names, this.opts.basePort);
    this.etcdPort = ports.etcdClient;
    const reconciler = endpointReconcilerFor(this.mode, this.network.mode);
    const specs = this.opts.apiservers.map((spec): ApiserverSpec => ({ endpointReconciler: reconciler, ...spec }));
    const { controllerManager = false, peerEgressProxy } = this.opts;
    const runs = await this.network.wire(specs, ports, { sidecars: this.withSidecars, controllerManager, ...(peerEgressProxy ? { peerEgressProxy } : {}) });
    for (const run of runs) this.apiservers.set(run.spec.name, run);
    const etcd = startEtcd(this.launchContext, ports.etcdClient, ports.etcdPeer);
    this.etcd = etcd.process;
    await etcd.ready;
    // Start them together (each takes seconds to become ready), then wait for all.
    await Promise.all([...this.apiservers.keys()].map((name) => this.launchApiserver(name)));
    this.adminToken = await this.createAdminToken();
    if (this.withSidecars) {
      const kubectl = newestKubectl(this.apiservers.values(), this.opts.components);
      await this.controlPlanes.start(ports.controlPlaneAdmin, [...this.apiservers.values()], this.requirePki(), kubectl);
      await Promise.all([...this.apiservers.keys()].map((name) => this.launchSidecar(name)));
    }
    if (this.opts.controllerManager) await this.startControllerManager(ports.controllerManager);
    await this.writeState();
  }

  get mode(): SandboxMode {
    return this.opts.mode ?? 'mvproxy';
  }

  private get withSidecars(): boolean {
    return this.mode === 'mvproxy';
  }

  /** A cluster-admin service-account token: what token clients use through the sidecars. */
  private async createAdminToken(): Promise<string> {
    const first = [...this.apiservers.values()][0];
    if (!first) throw new Error('internal: no apiserver');
    await this.writeKubeconfigs();
    return serviceAccountToken(join(this.dir, `kubeconfig-${first.spec.name}-direct`), {
      namespace: 'kube-system',
      name: SANDBOX_ADMIN_SERVICE_ACCOUNT,
      clusterRole: 'cluster-admin',
      expirationSeconds: 24 * 3600,
    });
  }

  /** kube-controller-manager on the first node of the oldest version (or the one asked for), at its node's version, through that node's endpoint. */
  private async startControllerManager(port: number): Promise<void> {
    const oldest = [...this.apiservers.values()].sort((a, b) => compareVersions(a.spec.version, b.spec.version))[0];
    if (!oldest) throw new Error('internal: no apiserver');
    const node = this.opts.controllerManagerNode === undefined ? oldest : this.requireApiserver(this.opts.controllerManagerNode);
    const binaries = this.opts.components.kubernetes[node.spec.version];
    const command = binaries?.kubeControllerManager;
    if (!binaries || !command) throw new Error(`internal: no kube-controller-manager ${node.spec.version} installed`);
    const endpoint = this.withSidecars ? sidecarListen(node) : apiserverListen(node);
    const enter = this.network.enter;
    this.controllerManager = new SandboxControllerManager({
      command,
      kubeadm: binaries.kubeadm,
      version: node.spec.version,
      server: `https://${endpoint.host}:${endpoint.port}`,
      ...(enter ? { enter } : {}),
      node: node.spec.name,
      port,
      pki: this.requirePki(),
      dir: this.dir,
      logsDir: this.logsDir,
    });
    await this.controllerManager.start(this.progress);
  }

  /** Kills the kube-controller-manager with SIGKILL, as a crash would; it is restarted with kubelet's back-off. */
  async killControllerManager(): Promise<void> {
    if (!this.controllerManager) throw new Error('this sandbox runs no kube-controller-manager');
    await this.controllerManager.kill();
  }

  /** The process id of the kube-controller-manager while it runs (tests kill it). */
  controllerManagerPid(): number | undefined {
    return this.controllerManager?.pid;
  }

  /** The sandbox's certificates and keys. */
  pkiFiles(): SandboxPki {
    return this.requirePki();
  }

  /** The process id of an apiserver's Envoy sidecar (benchmarks read its CPU time). */
  sidecarPid(name: string): number | undefined {
    this.requireApiserver(name);
    return this.sidecars.sidecarPid(name);
  }

  /** Where an apiserver listens, for tools that build their own proxies in front of it. */
  apiserverPort(name: string): number {
    return this.requireApiserver(name).port;
  }

  /** The cluster-admin service-account token (what token clients use in tests and benchmarks). */
  adminBearerToken(): string {
    if (!this.adminToken) throw new Error('internal: the sandbox has not made its token yet');
    return this.adminToken;
  }

  /** The process id of a control-plane replica (default: the first), for its CPU and memory figures. */
  controlPlanePid(replica?: string): number | undefined {
    return this.controlPlanes.pid(replica);
  }

  /** Stops a control-plane replica (default: the first) in its tracks (SIGSTOP): its sockets stay open and answer nothing, as a hung process would. */
  pauseControlPlane(replica?: string): void {
    this.controlPlanes.pause(replica);
  }

  /** Lets a paused replica run again (SIGCONT). */
  resumeControlPlane(replica?: string): void {
    this.controlPlanes.resume(replica);
  }

  /** Kills a replica (no clean shutdown), as a crash would. */
  async killControlPlane(replica?: string): Promise<void> {
    await this.controlPlanes.kill(replica);
  }

  /** Stops a replica cleanly (SIGTERM). */
  async stopControlPlane(replica?: string): Promise<void> {
    await this.controlPlanes.stopReplica(replica);
  }

  /** Starts a stopped replica; `publishKubernetesService` changes its config from this start on. */
  async restartControlPlane(replica?: string, change: { publishKubernetesService?: boolean } = {}): Promise<void> {
    await this.controlPlanes.restart(replica, change);
  }

  /** Makes a replica's next start a cold one: nothing kept from earlier runs. */
  forgetWarmStart(replica?: string): void {
    this.controlPlanes.forgetWarmStart(replica);
  }

  /** Stops one apiserver's Envoy sidecar (the apiserver keeps running). */
  async stopSidecar(name: string): Promise<void> {
    this.requireApiserver(name);
    await this.sidecars.stopSidecar(name);
  }

  /** Kills one apiserver's Envoy sidecar with SIGKILL, as a crash would (the apiserver keeps running). */
  async killSidecar(name: string): Promise<void> {
    this.requireApiserver(name);
    await this.sidecars.killSidecar(name);
  }

  /** Network mode `namespace`: the command that enters the sandbox's network namespace (put before a command to run it there). */
  get namespaceEnter(): readonly string[] | undefined {
    return this.network.enter;
  }

  /** The sandbox's network (network.ts): dial into it, or make a host port reachable from inside it. */
  get net(): Pick<SandboxNetwork, 'dial' | 'reachHost'> {
    return this.network;
  }

  /**
   * Starts a stopped sidecar again: a fresh Envoy with no config; resolves once it serves its apiserver's /readyz (polled every 20 ms).
   * `envoyConcurrency`: its worker threads from this start on (default: the sandbox's).
   */
  async startSidecar(name: string, change: { envoyConcurrency?: number } = {}): Promise<void> {
    await this.launchSidecar(name, 20, change.envoyConcurrency);
  }

  private async launchSidecar(name: string, pollMs?: number, envoyConcurrency?: number): Promise<void> {
    const pki = this.requirePki();
    await this.sidecars.startSidecar(
      this.requireApiserver(name),
      this.controlPlanes.addressesFor(name, pki),
      pki,
      this.adminBearerToken(),
      pollMs,
      envoyConcurrency,
    );
  }

  private get launchContext(): LaunchContext {
    const enter = this.network.enter;
    return { dir: this.dir, logsDir: this.logsDir, components: this.opts.components, progress: this.progress, ...(enter ? { enter } : {}) };
  }

  private async launchApiserver(name: string): Promise<void> {
    await launchApiserver(this.requireApiserver(name), {
      ...this.launchContext,
      etcdPort: this.etcdPort,
      pki: this.requirePki(),
      ...this.auditPolicyOf(name),
      upstreamPeerProxy: this.mode === 'upstream',
    });
  }

  private auditPolicyOf(name: string): { auditPolicyPath?: string } {
    const own = this.auditPolicies.get(name);
    if (own !== undefined) return { auditPolicyPath: own };
    return this.opts.auditLogs ? { auditPolicyPath: this.auditPolicyPath } : {};
  }

  /** Stops one apiserver (its identity lease is deleted by its clean shutdown); its sidecar keeps running. */
  async stopApiserver(name: string): Promise<void> {
    const run = this.requireApiserver(name);
    await run.process?.stop();
    run.process = undefined;
    await this.writeState();
  }

  /**
   * Starts one apiserver again, at another version or runtime-config if asked; same identity.
   * `auditPolicy` (a policy document) gives it an audit log (auditLogPath) from this start on,
   * whether or not the sandbox keeps audit logs (benchmarks audit only what they probe).
   */
  async startApiserver(
    name: string,
    change: { version?: string; runtimeConfig?: string; auditPolicy?: string; endpointReconciler?: ApiserverSpec['endpointReconciler'] } = {},
  ): Promise<void> {
    const run = this.requireApiserver(name);
    if (run.process?.running) throw new Error(`apiserver ${name} is already running`);
    const { auditPolicy, ...specChange } = change;
    const spec: ApiserverSpec = { ...run.spec, ...specChange };
    // An empty runtime-config means "back to the release's defaults".
    if (spec.runtimeConfig === '') delete spec.runtimeConfig;
    validateApiserverSpecs([spec], this.opts.components);
    run.spec = spec;
    if (auditPolicy !== undefined) {
      const file = join(this.dir, `audit-policy-${name}.yaml`);
      writeFileSync(file, auditPolicy);
      this.auditPolicies.set(name, file);
    }
    await this.launchApiserver(name);
    // kubeadm upgrades a node's kube-controller-manager right after its apiserver.
    await this.controllerManager?.followNode(name, spec.version, this.opts.components, this.progress);
    await this.writeState();
  }

  state(): SandboxState {
    return sandboxState({
      dir: this.dir,
      logsDir: this.logsDir,
      mode: this.mode,
      apiservers: [...this.apiservers.values()],
      pki: this.requirePki(),
      kubectl: newestKubectl(this.apiservers.values(), this.opts.components),
      etcdPort: this.etcdPort,
      ...(this.withSidecars ? { sidecars: this.sidecars, controlPlanes: this.controlPlanes } : {}),
      ...(this.controllerManager ? { controllerManager: this.controllerManager } : {}),
      network: this.network,
    });
  }

  private async writeKubeconfigs(): Promise<SandboxState> {
    const state = this.state();
    await writeApiserverKubeconfigs(state.apiservers, this.requirePki());
    return state;
  }

  private async writeState(): Promise<void> {
    writeState(this.statePath, await this.writeKubeconfigs());
  }

  /** Stops every process (apiservers first, so they delete their leases while etcd is up). */
  async down(): Promise<void> {
    await this.controllerManager?.stop();
    await this.sidecars.stop();
    await this.controlPlanes.stop();
    await Promise.all([...this.apiservers.values()].map((run) => run.process?.stop()));
    await this.etcd?.stop();
    await this.network.stop();
    if (existsSync(this.statePath)) rmSync(this.statePath);
  }

  private requirePki(): SandboxPki {
    if (!this.pki) throw new Error('internal: sandbox PKI not created');
    return this.pki;
  }

  private requireApiserver(name: string): RunningApiserver {
    const run = this.apiservers.get(name);
    if (!run) throw new Error(`no apiserver named ${name} in this sandbox (have: ${[...this.apiservers.keys()].join(', ')})`);
    return run;
  }
}
