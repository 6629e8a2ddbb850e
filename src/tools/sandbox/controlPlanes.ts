// The sandbox's mvproxy control plane: `mvproxy serve` with its config file,
// as an operator runs it. One replica (the default), or one per apiserver as
// on a kubeadm cluster: each replica serves its own node's sidecar on a Unix
// socket and every other sidecar, as failover, over mutual TLS. Every replica
// watches the same cluster and the same drain record, so any of them gives a
// sidecar the same snapshots.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { join } from 'node:path';
import type { ControlPlaneAddress } from '../../entry/sidecar.js';
import {
  MVPROXY_CLI,
  REPLICA_ENV,
  REPLICA_NODE_FLAGS,
  publishingSetting,
  replicaServeConfig,
  serveArgs,
  serviceObjectsForConfig,
  sidecarControlPlanes,
  type NodeApiserver,
  type ReplicaTuning,
} from '../../entry/controlPlane.js';
import { apiserverListen, sidecarListen, type RunningApiserver } from './apiservers.js';
import { CONTROL_PLANE_USER, SANDBOX_KUBERNETES_SERVICE_IP, type SandboxPki } from './pki.js';
import { writeKubeconfig } from './kubeconfig.js';
import { repoFile } from '../../util/protoRoot.js';
import { freePorts } from './ports.js';
import { ManagedProcess } from './processes.js';
import type { SandboxState } from './state.js';

const execFileAsync = promisify(execFile);

/** What the sandbox tunes beyond serve's defaults: it polls discovery twice as often. */
export const SANDBOX_REPLICA_TUNING: ReplicaTuning = { departedGraceSeconds: 300, localOnlyGraceSeconds: 300, discoveryPollMillis: 500 };

/** The DNS SAN of the sandbox's xDS serving certificate (pki.ts), sent as SNI by failing-over sidecars. */
export const SANDBOX_XDS_SERVER_NAME = 'localhost';

/** `one`: a single control plane; `per-apiserver`: one replica beside each apiserver, as deploy/kubeadm does. */
export type ControlPlaneReplicas = 'one' | 'per-apiserver';

export interface SandboxControlPlanesOptions {
  dir: string;
  logsDir: string;
  replicas: ControlPlaneReplicas;
  /** `host:port` of an HTTP CONNECT proxy the sidecars reach peers through. */
  peerEgressProxy?: string;
  progress: (line: string) => void;
  /**
   * Network mode `namespace`: the command that enters the sandbox's network
   * namespace, and the host relay each replica's admin port gets (relay.ts).
   * The replicas then publish the `kubernetes` Service's endpoints: every node
   * has an address the API accepts.
   */
  namespace?: { enter: readonly string[]; relay: (hostPort: number, target: { host: string; port: number }) => Promise<void> };
  /** In network mode `namespace`: false starts the replicas without publishing (as before the operator's switch). Default true. */
  publishKubernetesService?: boolean;
}

interface Replica {
  /** `mvproxy`, or the name of the apiserver it runs beside. */
  name: string;
  /** Apiserver whose node it runs on (per-apiserver only). */
  node?: string;
  adminPort: number;
  /** Mutual-TLS xDS port (per-apiserver only: the other nodes' sidecars fail over to it). */
  xdsTcpPort?: number;
  process?: ManagedProcess;
}

export class SandboxControlPlanes {
  private readonly replicas: Replica[] = [];
  /** What the operator does before a replica publishes (set by start). */
  private prepare: (replicaConfig: string) => Promise<void> = async () => undefined;

  constructor(private readonly opts: SandboxControlPlanesOptions) {}

  private file(replica: Replica, base: string, ext: string): string {
    return join(this.opts.dir, replica.node ? `${base}-${replica.node}${ext}` : `${base}${ext}`);
  }
  private configPath(r: Replica): string {
    return this.file(r, 'mvproxy', '.json');
  }
  private xdsSocket(r: Replica): string {
    return this.file(r, 'xds', '.sock');
  }
  private adminSocket(r: Replica): string {
    return this.file(r, 'admin', '.sock');
  }
  private warmStartFile(r: Replica): string {
    return this.file(r, 'warm-start', '.json');
  }

  /**
   * The control plane is `mvproxy serve`, the same command an operator runs,
   * as the user deploy/rbac.yaml binds and with only those rights: every test
   * that uses the sandbox also checks that the shipped RBAC is enough (the
   * `kubernetes` Service's publication included, in network mode `namespace`).
   * Applies it (with `kubectl`, as the admin), writes every replica's config and
   * starts them all; `adminPort` is the first replica's admin HTTP port.
   */
  async start(adminPort: number, apiservers: RunningApiserver[], pki: SandboxPki, kubectl: string): Promise<void> {
    // Watches go to the last apiserver: tests mostly stop the first ones.
    const watched = apiservers.at(-1);
    if (!watched) throw new Error('internal: no apiserver');
    const adminKubeconfig = join(this.opts.dir, `kubeconfig-${watched.spec.name}-direct`);
    await execFileAsync(kubectl, [`--kubeconfig=${adminKubeconfig}`, 'apply', '--server-side', '-f', repoFile('deploy/rbac.yaml')], { timeout: 60_000 });
    /**
     * Where a replica reads the cluster. A node's replica reads through its
     * node's sidecar, as on kubeadm (docs/kubeadm.md, step 3: it keeps
     * watching while its own apiserver restarts). The single replica reads
     * the last apiserver directly: tests stop the first ones, and kill
     * sidecars one at a time, and with one replica that would blind all.
     */
    const readThrough = async (node: RunningApiserver | undefined): Promise<string> => {
      const kubeconfig = join(this.opts.dir, `kubeconfig-mvproxy-control-plane${node ? `-${node.spec.name}` : ''}`);
      // The replicas run where the apiservers run: in the namespace, at its node address.
      const listen = node ? sidecarListen(node) : apiserverListen(watched);
      await writeKubeconfig(kubeconfig, {
        server: `https://${listen.host}:${listen.port}`,
        caFile: pki.ca.cert,
        user: { certFile: pki.controlPlaneClient.cert, keyFile: pki.controlPlaneClient.key },
        name: CONTROL_PLANE_USER,
      });
      return kubeconfig;
    };
    this.prepare = (config) => this.preparePublishing(kubectl, adminKubeconfig, config);
    await this.startReplicas(adminPort, apiservers, readThrough, pki, this.prepare);
  }

  /**
   * What the operator does before replicas publish the `kubernetes` Service
   * (docs/operating.md): apply deploy/rbac-publish.yaml, and create the three
   * objects the replicas fill (they never create one); an object an
   * apiserver on the lease reconciler made already is left as it is.
   */
  private async preparePublishing(kubectl: string, adminKubeconfig: string, replicaConfig: string): Promise<void> {
    const objects = serviceObjectsForConfig(JSON.parse(readFileSync(replicaConfig, 'utf8')) as unknown, 'all');
    if (!objects) return;
    const run = (args: string[]) => execFileAsync(kubectl, [`--kubeconfig=${adminKubeconfig}`, ...args], { timeout: 60_000 });
    await run(['apply', '--server-side', '-f', repoFile('deploy/rbac-publish.yaml')]);
    const manifest = join(this.opts.dir, 'kubernetes-service-objects.json');
    writeFileSync(manifest, JSON.stringify(objects));
    try {
      await run(['create', '-f', manifest]);
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr ?? '';
      // kubectl also warns (v1 Endpoints is deprecated): only its errors count.
      const failures = stderr.split('\n').filter((l) => l.startsWith('Error'));
      if (failures.length === 0 || !failures.every((l) => /AlreadyExists|already exists/.test(l))) throw err;
    }
  }

  private async startReplicas(
    adminPort: number,
    apiservers: RunningApiserver[],
    readThrough: (node: RunningApiserver | undefined) => Promise<string>,
    pki: SandboxPki,
    beforeLaunch: (replicaConfig: string) => Promise<void>,
  ): Promise<void> {
    if (this.opts.replicas === 'one') {
      this.replicas.push({ name: 'mvproxy', adminPort });
    } else {
      const ports = await freePorts(2 * apiservers.length);
      apiservers.forEach((run, i) => {
        const [admin, xds] = [i === 0 ? adminPort : ports[2 * i], ports[2 * i + 1]];
        if (admin === undefined || xds === undefined) throw new Error('internal: port allocation mismatch');
        this.replicas.push({ name: `mvproxy-${run.spec.name}`, node: run.spec.name, adminPort: admin, xdsTcpPort: xds });
      });
    }
    const namespace = this.opts.namespace;
    if (namespace) for (const r of this.replicas) await namespace.relay(r.adminPort, { host: '127.0.0.1', port: r.adminPort });
    const nodes: NodeApiserver[] = apiservers.map((run) => {
      const serving = pki.serving[run.spec.name];
      if (!serving) throw new Error(`internal: no serving certificate for ${run.spec.name}`);
      const [address, sidecar] = [apiserverListen(run), sidecarListen(run)].map((a) => `${a.host}:${a.port}`) as [string, string];
      return {
        name: run.spec.name,
        hostname: run.spec.name,
        address,
        sidecarListen: sidecar,
        // Said outright, though the defaults are the same: what pods are sent to is the operator's word.
        ...(namespace ? { publish: address, sidecarPublish: sidecar } : {}),
        servingCert: serving.cert,
        servingKey: serving.key,
      };
    });
    const tls = { clientCa: pki.ca.cert, frontProxyClientCert: pki.frontProxyClient.cert, frontProxyClientKey: pki.frontProxyClient.key, peerCa: pki.peerCa };
    for (const replica of this.replicas) {
      const config = replicaServeConfig(
        nodes,
        tls,
        {
          // All replicas share one host here: the name tells them apart in the sync record.
          replicaName: replica.name,
          kubeconfig: await readThrough(apiservers.find((run) => run.spec.name === replica.node)),
          xdsSocket: this.xdsSocket(replica),
          ...(replica.xdsTcpPort === undefined
            ? {}
            : { xdsTcp: { listen: `127.0.0.1:${replica.xdsTcpPort}`, cert: pki.xdsServer.cert, key: pki.xdsServer.key, clientCa: pki.ca.cert } }),
          adminListen: `127.0.0.1:${replica.adminPort}`,
          adminSocket: this.adminSocket(replica),
          warmStartFile: this.warmStartFile(replica),
        },
        {
          ...(this.opts.peerEgressProxy ? { peerEgressProxy: this.opts.peerEgressProxy } : {}),
          ...SANDBOX_REPLICA_TUNING,
          ...(namespace && this.opts.publishKubernetesService !== false
            ? { publishKubernetesService: true, kubernetesServiceIp: SANDBOX_KUBERNETES_SERVICE_IP }
            : {}),
        },
      );
      writeFileSync(this.configPath(replica), `${JSON.stringify(config, null, 2)}\n`);
      // A new sandbox starts with nothing kept (its etcd is new: nothing drained either); restarts keep the file.
      rmSync(this.warmStartFile(replica), { force: true });
    }
    const first = this.replicas[0];
    if (namespace && first) await beforeLaunch(this.configPath(first));
    this.opts.progress(
      `starting the mvproxy control plane (${this.replicas.length === 1 ? '' : `${this.replicas.length} replicas, `}admin http://127.0.0.1:${adminPort})`,
    );
    await Promise.all(this.replicas.map((r) => this.launch(r)));
  }

  /** The process id of a replica (default: the first), for its memory figures. */
  pid(name?: string): number | undefined {
    return this.replica(name).process?.pid;
  }

  /**
   * Where the sidecar of apiserver `node` finds the control plane: its own
   * node's replica on the Unix socket first, then the others over mutual TLS.
   */
  addressesFor(node: string, pki: SandboxPki): ControlPlaneAddress[] {
    const own = this.replicas.find((r) => r.node === node) ?? this.replicas[0];
    if (!own) throw new Error('internal: no control plane');
    const cert = pki.xdsClients[node];
    const others = this.replicas.filter((r) => r !== own && r.xdsTcpPort !== undefined).map((r) => `127.0.0.1:${r.xdsTcpPort}`);
    if (others.length > 0 && !cert) throw new Error(`internal: no xDS client certificate for ${node}`);
    return sidecarControlPlanes(
      this.xdsSocket(own),
      others,
      cert ? { ca: pki.ca.cert, cert: cert.cert, key: cert.key, serverName: SANDBOX_XDS_SERVER_NAME } : undefined,
    );
  }

  private async launch(replica: Replica): Promise<void> {
    const proc = new ManagedProcess({
      name: replica.name,
      command: process.execPath,
      args: [...REPLICA_NODE_FLAGS, MVPROXY_CLI, ...serveArgs(this.configPath(replica), 'info')],
      env: { ...process.env, ...REPLICA_ENV },
      logFile: join(this.opts.logsDir, `${replica.name}.log`),
      ...(this.opts.namespace ? { enter: this.opts.namespace.enter } : {}),
    });
    replica.process = proc;
    await proc.waitReady(
      `mvproxy control plane ${replica.name}`,
      async (signal) => (await fetch(`http://127.0.0.1:${replica.adminPort}/healthz`, { signal })).ok,
    );
  }

  private replica(name: string | undefined): Replica {
    const replica = name === undefined ? this.replicas[0] : this.replicas.find((r) => r.name === name || r.node === name);
    if (!replica) throw new Error(`no control-plane replica ${name ?? ''} (have: ${this.replicas.map((r) => r.name).join(', ')})`);
    return replica;
  }

  /** Stops a replica in its tracks (SIGSTOP): its sockets stay open and answer nothing, as a hung process would. */
  pause(name?: string): void {
    this.signal(this.replica(name), 'SIGSTOP');
  }

  /** Lets a paused replica run again (SIGCONT). */
  resume(name?: string): void {
    this.signal(this.replica(name), 'SIGCONT');
  }

  private signal(replica: Replica, signal: NodeJS.Signals): void {
    const pid = replica.process?.pid;
    if (pid === undefined || !replica.process?.running) throw new Error(`the control plane ${replica.name} is not running`);
    process.kill(pid, signal);
  }

  /** Kills a replica with SIGKILL (no clean shutdown: its warm-start file keeps what it last wrote), as a crash would. */
  async kill(name?: string): Promise<void> {
    await this.replica(name).process?.kill();
  }

  /** Stops a replica cleanly (SIGTERM), as an operator moving its static pod out would. */
  async stopReplica(name?: string): Promise<void> {
    await this.replica(name).process?.stop(2000);
  }

  /**
   * Starts a stopped replica again. `publishKubernetesService`: from this start
   * on its config publishes the `kubernetes` Service or not (the operator's
   * switch and its way back: docs/kubeadm.md).
   */
  async restart(name?: string, change: { publishKubernetesService?: boolean } = {}): Promise<void> {
    const replica = this.replica(name);
    if (replica.process?.running) throw new Error(`the control plane ${replica.name} is already running`);
    if (change.publishKubernetesService !== undefined) {
      const config = JSON.parse(readFileSync(this.configPath(replica), 'utf8')) as Record<string, unknown>;
      if (change.publishKubernetesService) config['kubernetesService'] = publishingSetting(SANDBOX_KUBERNETES_SERVICE_IP);
      else delete config['kubernetesService'];
      writeFileSync(this.configPath(replica), `${JSON.stringify(config, null, 2)}\n`);
      await this.prepare(this.configPath(replica));
    }
    await this.launch(replica);
  }

  /** Forgets what a replica kept for its warm start (its next start knows nothing). */
  forgetWarmStart(name?: string): void {
    rmSync(this.warmStartFile(this.replica(name)), { force: true });
  }

  /** The state file's view: the first replica, and every replica. */
  state(): Pick<SandboxState, 'controlPlane' | 'controlPlanes'> {
    const view = (r: Replica) => ({
      name: r.name,
      admin: `http://127.0.0.1:${r.adminPort}`,
      adminSocket: this.adminSocket(r),
      config: this.configPath(r),
      warmStartFile: this.warmStartFile(r),
      xdsSocket: this.xdsSocket(r),
      ...(r.xdsTcpPort === undefined ? {} : { xdsTcp: `127.0.0.1:${r.xdsTcpPort}` }),
    });
    const all = this.replicas.map(view);
    return { ...(all[0] ? { controlPlane: all[0] } : {}), controlPlanes: all };
  }

  async stop(): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.process?.stop(2000)));
  }
}
