// The sandbox's Envoy sidecars, one per apiserver, each started from the
// bootstrap `mvproxy bootstrap` would print (the control plane they connect
// to: controlPlanes.ts); starting and stopping them.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { httpsGet } from '../../util/https.js';
import { PROMETHEUS_STATS_PATH, sidecarBootstrap, sidecarEnvoyArgs, type ControlPlaneAddress } from '../../entry/sidecar.js';
import { sidecarListen, type RunningApiserver } from './apiservers.js';
import type { SandboxPki } from './pki.js';
import { ManagedProcess } from './processes.js';
import type { SandboxApiserverState } from './state.js';

export interface SandboxSidecarsOptions {
  dir: string;
  logsDir: string;
  /** The Envoy binary. */
  envoy: string;
  progress: (line: string) => void;
  /** Network mode `namespace`: the command that enters the sandbox's network namespace. */
  enter?: readonly string[];
  /** Envoy's worker threads (`--concurrency`); default: the sidecar's (sidecarEnvoyArgs). */
  envoyConcurrency?: number;
}

export class SandboxSidecars {
  private readonly sidecars = new Map<string, ManagedProcess>();

  constructor(private readonly opts: SandboxSidecarsOptions) {}

  private get dir(): string {
    return this.opts.dir;
  }
  private get logsDir(): string {
    return this.opts.logsDir;
  }

  /** Stops the Envoy sidecar of `name` (its config goes with it). */
  async stopSidecar(name: string): Promise<void> {
    await this.sidecars.get(name)?.stop(2000);
    this.sidecars.delete(name);
  }

  /** Kills the Envoy sidecar of `name` with SIGKILL, as a crash would (no drain, no goodbye). */
  async killSidecar(name: string): Promise<void> {
    await this.sidecars.get(name)?.kill();
    this.sidecars.delete(name);
  }

  /**
   * Starts the Envoy sidecar of `run`; ready once it answers /readyz with the
   * apiserver behind it (as `adminToken`), polled every `pollMs`; with
   * `envoyConcurrency` worker threads (default: the sandbox's).
   */
  async startSidecar(
    run: RunningApiserver,
    controlPlanes: ControlPlaneAddress[],
    pki: SandboxPki,
    adminToken: string,
    pollMs?: number,
    envoyConcurrency = this.opts.envoyConcurrency,
  ): Promise<void> {
    const name = run.spec.name;
    const [controlPlane, ...failover] = controlPlanes;
    if (!controlPlane) throw new Error(`internal: no control plane for the sidecar of ${name}`);
    if (this.sidecars.get(name)?.running) throw new Error(`the sidecar of ${name} is already running`);
    const bootstrapPath = join(this.dir, `envoy-${name}.json`);
    writeFileSync(
      bootstrapPath,
      `${JSON.stringify(sidecarBootstrap({ nodeId: name, controlPlane, failover, admin: { unixSocket: this.sidecarAdminSocket(name) }, stats: { port: run.sidecarStatsPort } }), null, 2)}\n`,
    );
    const listen = sidecarListen(run);
    this.opts.progress(`starting the Envoy sidecar of ${name} on https://${listen.host}:${listen.port}`);
    const sidecar = new ManagedProcess({
      name: `envoy-${name}`,
      command: this.opts.envoy,
      args: sidecarEnvoyArgs(bootstrapPath, 1, envoyConcurrency),
      logFile: join(this.logsDir, `envoy-${name}.log`),
      ...(this.opts.enter ? { enter: this.opts.enter } : {}),
    });
    this.sidecars.set(name, sidecar);
    // Ready when the listener (pushed over ADS) answers with the apiserver behind it
    // (through the host's relay in network mode `namespace`).
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

  /** Where the sidecar of `run` serves clients, its admin socket and its Prometheus stats (the sandbox state file). */
  sidecarState(run: RunningApiserver): Pick<SandboxApiserverState, 'sidecar' | 'sidecarAdminSocket' | 'sidecarStats'> {
    return {
      sidecar: `https://127.0.0.1:${run.sidecarPort}`,
      sidecarAdminSocket: this.sidecarAdminSocket(run.spec.name),
      sidecarStats: `http://127.0.0.1:${run.sidecarStatsPort}${PROMETHEUS_STATS_PATH}`,
    };
  }

  /** The Unix socket of a sidecar's Envoy admin interface (owner only, as `mvproxy bootstrap` makes it). */
  sidecarAdminSocket(name: string): string {
    return join(this.dir, `envoy-${name}-admin.sock`);
  }

  /** The process id of an apiserver's Envoy sidecar. */
  sidecarPid(name: string): number | undefined {
    return this.sidecars.get(name)?.pid;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sidecars.values()].map((sidecar) => sidecar.stop(2000)));
  }
}
