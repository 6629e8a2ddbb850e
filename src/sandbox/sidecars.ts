// The sandbox's mvproxy: the control plane (`mvproxy serve` with its config
// file, as an operator runs it) and one Envoy sidecar per apiserver; starting,
// pausing, killing and restarting them.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { httpsGet } from '../util/https.js';
import { sidecarBootstrap } from '../xds/bootstrap.js';
import type { RunningApiserver } from './apiservers.js';
import type { SandboxPki } from './pki.js';
import { ManagedProcess } from './processes.js';
import type { SandboxState } from './state.js';

const cliMain = fileURLToPath(new URL('../cli/main.js', import.meta.url));

export interface SandboxSidecarsOptions {
  dir: string;
  logsDir: string;
  /** The Envoy binary. */
  envoy: string;
  /** `host:port` of an HTTP CONNECT proxy the sidecars reach peers through. */
  peerEgressProxy?: string;
  progress: (line: string) => void;
}

export class SandboxSidecars {
  private controlPlane?: ManagedProcess;
  private controlPlaneAdminPort = 0;
  private readonly sidecars = new Map<string, ManagedProcess>();

  constructor(private readonly opts: SandboxSidecarsOptions) {}

  private get dir(): string {
    return this.opts.dir;
  }
  private get logsDir(): string {
    return this.opts.logsDir;
  }
  private get controlPlaneConfigPath(): string {
    return join(this.dir, 'mvproxy.json');
  }
  private get xdsSocket(): string {
    return join(this.dir, 'xds.sock');
  }
  private get adminSocket(): string {
    return join(this.dir, 'admin.sock');
  }
  private get warmStartFile(): string {
    return join(this.dir, 'warm-start.json');
  }

  /** The control plane is `mvproxy serve`, the same command an operator runs; it watches through `kubeconfig`. */
  async startControlPlane(adminPort: number, apiservers: RunningApiserver[], kubeconfig: string, pki: SandboxPki): Promise<void> {
    const config = {
      kubeconfig,
      apiservers: apiservers.map((run) => ({
        name: run.spec.name,
        hostname: run.spec.name,
        address: `127.0.0.1:${run.port}`,
        sidecar: { listen: `127.0.0.1:${run.sidecarPort}`, servingCert: pki.serving[run.spec.name]?.cert, servingKey: pki.serving[run.spec.name]?.key },
      })),
      tls: {
        clientCa: pki.ca.cert,
        frontProxyClientCert: pki.frontProxyClient.cert,
        frontProxyClientKey: pki.frontProxyClient.key,
        peerCa: pki.peerCa,
      },
      xds: { unixSocket: this.xdsSocket },
      admin: { listen: `127.0.0.1:${adminPort}`, socket: this.adminSocket },
      warmStartFile: this.warmStartFile,
      ...(this.opts.peerEgressProxy ? { peerEgressProxy: this.opts.peerEgressProxy } : {}),
      departedGraceSeconds: 300,
      localOnlyGraceSeconds: 300,
      discoveryPollMillis: 500,
    };
    writeFileSync(this.controlPlaneConfigPath, `${JSON.stringify(config, null, 2)}\n`);
    // A new sandbox starts with nothing kept (its etcd is new: nothing drained either); restarts of its control plane keep the file.
    rmSync(this.warmStartFile, { force: true });
    this.opts.progress(`starting the mvproxy control plane (admin http://127.0.0.1:${adminPort})`);
    this.controlPlaneAdminPort = adminPort;
    await this.launchControlPlane();
  }

  private async launchControlPlane(): Promise<void> {
    const proc = new ManagedProcess({
      name: 'mvproxy',
      command: process.execPath,
      args: [cliMain, 'serve', `--config=${this.controlPlaneConfigPath}`, '--log-level=info'],
      logFile: join(this.logsDir, 'mvproxy.log'),
    });
    this.controlPlane = proc;
    await proc.waitReady('mvproxy control plane', async () => (await fetch(`http://127.0.0.1:${this.controlPlaneAdminPort}/healthz`)).ok);
  }

  /** Stops the control plane in its tracks (SIGSTOP): its sockets stay open and answer nothing, as a hung process would. */
  pauseControlPlane(): void {
    this.signalControlPlane('SIGSTOP');
  }

  /** Lets a paused control plane run again (SIGCONT). */
  resumeControlPlane(): void {
    this.signalControlPlane('SIGCONT');
  }

  private signalControlPlane(signal: NodeJS.Signals): void {
    const pid = this.controlPlane?.pid;
    if (pid === undefined || !this.controlPlane?.running) throw new Error('the control plane is not running');
    process.kill(pid, signal);
  }

  /** Kills the control plane (no clean shutdown), as a crash would. */
  async killControlPlane(): Promise<void> {
    await this.controlPlane?.stop(0);
  }

  async restartControlPlane(): Promise<void> {
    if (this.controlPlane?.running) throw new Error('the control plane is already running');
    await this.launchControlPlane();
  }

  /** Forgets what the control plane kept for its warm start (the next start knows nothing). */
  forgetWarmStart(): void {
    rmSync(this.warmStartFile, { force: true });
  }

  /** Stops the Envoy sidecar of `name` (its config goes with it). */
  async stopSidecar(name: string): Promise<void> {
    await this.sidecars.get(name)?.stop(2000);
    this.sidecars.delete(name);
  }

  /**
   * Starts the Envoy sidecar of `run`; ready once it answers /readyz with the
   * apiserver behind it (as `adminToken`), polled every `pollMs`.
   */
  async startSidecar(run: RunningApiserver, pki: SandboxPki, adminToken: string, pollMs?: number): Promise<void> {
    const name = run.spec.name;
    if (this.sidecars.get(name)?.running) throw new Error(`the sidecar of ${name} is already running`);
    const bootstrapPath = join(this.dir, `envoy-${name}.json`);
    writeFileSync(
      bootstrapPath,
      `${JSON.stringify(sidecarBootstrap({ nodeId: name, controlPlane: { unixSocket: this.xdsSocket }, admin: { unixSocket: this.sidecarAdminSocket(name) } }), null, 2)}\n`,
    );
    this.opts.progress(`starting the Envoy sidecar of ${name} on https://127.0.0.1:${run.sidecarPort}`);
    const sidecar = new ManagedProcess({
      name: `envoy-${name}`,
      command: this.opts.envoy,
      args: ['-c', bootstrapPath, '--use-dynamic-base-id', '-l', 'warning', '--drain-time-s', '1'],
      logFile: join(this.logsDir, `envoy-${name}.log`),
    });
    this.sidecars.set(name, sidecar);
    // Ready when the listener (pushed over ADS) answers with the apiserver behind it.
    await sidecar.waitReady(
      `Envoy sidecar of ${name}`,
      async () => {
        const res = await httpsGet(`https://127.0.0.1:${run.sidecarPort}/readyz`, { ca: pki.ca.cert }, { authorization: `Bearer ${adminToken}` }, 2000);
        return res.status === 200;
      },
      undefined,
      pollMs,
    );
  }

  /** The Unix socket of a sidecar's Envoy admin interface (owner only, as `mvproxy bootstrap` makes it). */
  sidecarAdminSocket(name: string): string {
    return join(this.dir, `envoy-${name}-admin.sock`);
  }

  /** The process id of an apiserver's Envoy sidecar. */
  sidecarPid(name: string): number | undefined {
    return this.sidecars.get(name)?.pid;
  }

  /** What the state file says of the control plane. */
  state(): NonNullable<SandboxState['controlPlane']> {
    return {
      admin: `http://127.0.0.1:${this.controlPlaneAdminPort}`,
      adminSocket: this.adminSocket,
      config: this.controlPlaneConfigPath,
      xdsSocket: this.xdsSocket,
    };
  }

  /** Stops the sidecars, then the control plane. */
  async stop(): Promise<void> {
    await Promise.all([...this.sidecars.values()].map((sidecar) => sidecar.stop(2000)));
    await this.controlPlane?.stop(2000);
  }
}
