// The sandbox's network, by mode: `loopback` (the default), every process on
// the host's 127.0.0.1; `namespace`, every process in the sandbox's own
// network namespace (netns.ts), each node at its own address, the host
// reaching them through relays on its 127.0.0.1 (relay.ts). In both, the
// host uses the same 127.0.0.1 ports: what the state file gives the host
// (kubeconfigs, URLs) does not depend on the mode.
import { NODE_APISERVER_PORT, NODE_SIDECAR_PORT, nodeAddress, SandboxNetworkNamespace, type SandboxNetworkMode } from './netns.js';
import { dialInside, HostRelays } from './relay.js';
import { RELAY_TCP } from './relayPipe.js';
import { connect, type Socket } from 'node:net';
import type { RelayTarget } from './relayHeader.js';
import type { SandboxNetworkState } from './state.js';
import type { ApiserverSpec, RunningApiserver } from './apiservers.js';
import type { PortLayout } from './portLayout.js';

export class SandboxNetwork {
  private constructor(
    readonly mode: SandboxNetworkMode,
    private readonly namespace?: SandboxNetworkNamespace,
    private readonly relays?: HostRelays,
  ) {}

  /** Makes the network of `nodes` nodes: nothing for `loopback`; the namespace and its relay agent for `namespace`. */
  static async create(mode: SandboxNetworkMode, dir: string, logsDir: string, nodes: number): Promise<SandboxNetwork> {
    if (mode === 'loopback') return new SandboxNetwork(mode);
    const namespace = await SandboxNetworkNamespace.create(
      logsDir,
      Array.from({ length: nodes }, (_, i) => nodeAddress(i)),
    );
    try {
      return new SandboxNetwork(mode, namespace, await HostRelays.start(dir, logsDir, namespace.enter));
    } catch (err) {
      await namespace.stop();
      throw err;
    }
  }

  /** The command that enters the namespace (absent in mode `loopback`). */
  get enter(): readonly string[] | undefined {
    return this.namespace?.enter;
  }

  /** Node `index`'s address in the namespace (absent in mode `loopback`). */
  nodeAddress(index: number): string | undefined {
    return this.namespace ? nodeAddress(index) : undefined;
  }

  /** Makes `target` inside the namespace reachable at the host's 127.0.0.1:`hostPort` (nothing to do in mode `loopback`). */
  async expose(hostPort: number, target: RelayTarget): Promise<void> {
    await this.relays?.expose(hostPort, target);
  }

  /** Makes the host's 127.0.0.1:`port` reachable inside the namespace at `at`:`port` (default 127.0.0.1; nothing to do in mode `loopback`). */
  async reachHost(port: number, at?: string): Promise<void> {
    await this.relays?.reachHost(port, at);
  }

  /** A connection from the host to `target` as seen inside the namespace (in mode `loopback`, the host's own network). */
  dial(target: RelayTarget): Socket {
    if (!this.relays) return connect({ ...RELAY_TCP, ...target });
    return dialInside(this.relays.socketPath, target);
  }

  /** The extra SANs of each apiserver's serving certificate: its node's address, in mode `namespace`. */
  servingSans(names: readonly string[]): Record<string, string[]> {
    const sans: Record<string, string[]> = {};
    names.forEach((name, i) => {
      const address = this.nodeAddress(i);
      if (address !== undefined) sans[name] = [address];
    });
    return sans;
  }

  /**
   * The apiservers at their ports (and, in mode `namespace`, node addresses),
   * and the host's relay of every port the host uses but the control-plane
   * replicas' (controlPlanes.ts relays those), up before anything starts:
   * every readiness check goes through them.
   */
  async wire(
    specs: readonly ApiserverSpec[],
    ports: PortLayout,
    uses: { sidecars: boolean; controllerManager: boolean; peerEgressProxy?: string },
  ): Promise<RunningApiserver[]> {
    const runs = specs.map((spec, i): RunningApiserver => {
      const [port, sidecarPort, sidecarStatsPort] = [ports.apiservers[i], ports.sidecars[i], ports.sidecarStats[i]];
      if (port === undefined || sidecarPort === undefined || sidecarStatsPort === undefined) throw new Error('internal: port allocation mismatch');
      const address = this.nodeAddress(i);
      return { spec, port, sidecarPort, sidecarStatsPort, ...(address === undefined ? {} : { nodeAddress: address }) };
    });
    if (!this.relays) return runs;
    const local = (port: number): RelayTarget => ({ host: '127.0.0.1', port });
    await this.expose(ports.etcdClient, local(ports.etcdClient));
    if (uses.controllerManager) await this.expose(ports.controllerManager, local(ports.controllerManager));
    // An egress proxy on the host's loopback is reached by the sidecars at the same address.
    const egress = uses.sidecars && uses.peerEgressProxy ? /^127\.0\.0\.1:(\d+)$/.exec(uses.peerEgressProxy) : null;
    if (egress?.[1]) await this.reachHost(Number(egress[1]));
    for (const run of runs) {
      if (run.nodeAddress === undefined) continue;
      await this.expose(run.port, { host: run.nodeAddress, port: NODE_APISERVER_PORT });
      if (!uses.sidecars) continue;
      await this.expose(run.sidecarPort, { host: run.nodeAddress, port: NODE_SIDECAR_PORT });
      await this.expose(run.sidecarStatsPort, local(run.sidecarStatsPort));
    }
    return runs;
  }

  /** The state file's view. */
  state(): SandboxNetworkState {
    if (!this.namespace || !this.relays) return { mode: this.mode };
    return {
      mode: this.mode,
      namespacePid: this.namespace.pid,
      enter: this.namespace.enterShell,
      relaySocket: this.relays.socketPath,
      relays: [...this.relays.targets()].map(([port, t]) => ({ host: `127.0.0.1:${port}`, namespace: `${t.host}:${t.port}` })),
    };
  }

  async stop(): Promise<void> {
    await this.relays?.stop();
    await this.namespace?.stop();
  }
}
