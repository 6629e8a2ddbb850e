// The sandbox's network namespace (network mode `namespace`): one namespace
// for every sandbox process, with `lo` up and one documentation address
// (192.0.2.0/24, RFC 5737) per node on it, because kube-apiserver refuses
// loopback addresses in the `kubernetes` Service's endpoints. A holder
// process keeps the namespace alive (it dies with the sandbox, as every child
// does); every other process enters it with nsenter.
import { join } from 'node:path';
import { readFileSync, rmSync } from 'node:fs';
import { ManagedProcess } from './processes.js';

export const SANDBOX_NETWORKS = ['loopback', 'namespace'] as const;
/** `loopback`: every process on the host's 127.0.0.1; `namespace`: in the sandbox's own network namespace, each node at its own address. */
export type SandboxNetworkMode = (typeof SANDBOX_NETWORKS)[number];
/** The node layout, as kubeadm builds a cluster: what every sandbox runs unless told otherwise. */
export const DEFAULT_SANDBOX_NETWORK: SandboxNetworkMode = 'namespace';

/** kubeadm's layout: the sidecar takes the node's 6443, its apiserver moves to 6444. */
export const NODE_SIDECAR_PORT = 6443;
export const NODE_APISERVER_PORT = 6444;

/** The address of node `index` (0-based) inside the namespace: 192.0.2.11, .12, ... */
export function nodeAddress(index: number): string {
  if (!Number.isInteger(index) || index < 0 || index > 200) throw new Error(`internal: no node address for index ${index}`);
  return `192.0.2.${11 + index}`;
}

/** The line the holder prints once `lo` is up with every address: the namespace is ready. */
const READY_LINE = 'mvproxy-netns-ready';

/**
 * The holder's command: a new network namespace (and, when not root, a user
 * namespace that owns it, as an unprivileged user may make), `lo` up, the
 * node addresses on it, then nothing but waiting.
 */
export function holderCommand(addresses: readonly string[], root: boolean): { command: string; args: string[] } {
  const setup = ['ip link set lo up', ...addresses.map((a) => `ip addr add ${a}/32 dev lo`), `echo ${READY_LINE}`, 'exec sleep infinity'].join(' && ');
  return { command: 'unshare', args: [...(root ? [] : ['--user', '--map-root-user']), '--net', 'sh', '-c', setup] };
}

/**
 * How a process enters the namespace held by `pid` (the user namespace too
 * when not root). --preserve-credentials: nsenter would otherwise call
 * setgroups, which a user namespace mapped by an unprivileged user refuses;
 * the caller's own user is root in that namespace already.
 */
export function enterCommand(pid: number, root: boolean): string[] {
  return ['nsenter', ...(root ? [] : ['--preserve-credentials', `--user=/proc/${pid}/ns/user`]), `--net=/proc/${pid}/ns/net`];
}

/** The running namespace: its holder, and the command that enters it. */
export class SandboxNetworkNamespace {
  private constructor(
    private readonly holder: ManagedProcess,
    readonly pid: number,
    readonly enter: readonly string[],
  ) {}

  /** Makes the namespace with `addresses` on its `lo`; resolves once they are there. */
  static async create(logsDir: string, addresses: readonly string[]): Promise<SandboxNetworkNamespace> {
    const root = process.getuid?.() === 0;
    const logFile = join(logsDir, 'netns.log');
    // A log kept from an earlier sandbox in the same folder holds the line already.
    rmSync(logFile, { force: true });
    const holder = new ManagedProcess({ name: 'netns', ...holderCommand(addresses, root), logFile });
    try {
      await holder.waitReady('the sandbox network namespace', async () => readFileSync(logFile, 'utf8').includes(READY_LINE), 10_000, 50);
    } catch (err) {
      await holder.kill();
      throw err;
    }
    const pid = holder.pid;
    if (pid === undefined) throw new Error('internal: the network namespace holder has no pid');
    return new SandboxNetworkNamespace(holder, pid, enterCommand(pid, root));
  }

  /** How an operator enters it from a shell. */
  get enterShell(): string {
    return this.enter.join(' ');
  }

  async stop(): Promise<void> {
    await this.holder.kill();
  }
}
