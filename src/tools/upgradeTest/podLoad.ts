// The in-cluster part of the load: pods' clients, which reach the cluster
// through the `kubernetes` Service, not the load balancer. The harness gives
// them a service account that may read the pair's resources, waits until the
// Service lists every node, and runs podLoadClient.ts inside the sandbox's
// network namespace, where the Service's endpoints are. Its requests are
// judged with the rest; what kube-proxy would have done is recorded too.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseSlices, SERVICE_SLICES_PATH, serviceEndpoints } from '../sandbox/podHttp.js';
import { SANDBOX_KUBERNETES_SERVICE_IP } from '../sandbox/pki.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { serviceAccountToken } from '../sandbox/serviceAccount.js';
import type { ClusterReader } from './cluster.js';
import { collectionPath } from './objects.js';
import { RESOURCE_SPECS, type RequestRecord, type ResourceKey } from './observations.js';
import type { PodLoadInput, PodLoadLine } from './podLoadClient.js';

const CLIENT_MAIN = fileURLToPath(new URL('./podLoadClient.js', import.meta.url));
const READER_ROLE = 'upgrade-test-pod-reader';
/** How often the kube-proxy stand-in reads the slices: kube-proxy follows them by a watch, within about a second. */
const SLICE_INTERVAL_MS = 1000;

export interface PodLoadOptions {
  resources: readonly ResourceKey[];
  /** Milliseconds since the mode's start. */
  now: () => number;
  workers: number;
  thinkMs: number;
}

/** What the pods saw besides their requests: each change of the Service's ready endpoints (kube-proxy's view). */
export interface PodEndpointChange {
  t_s: number;
  endpoints: string[];
}

export class PodLoad {
  readonly records: RequestRecord[] = [];
  readonly endpointChanges: PodEndpointChange[] = [];
  private stderr = '';
  private readonly exited: Promise<number | null>;

  private constructor(private readonly child: ChildProcess) {
    if (!child.stdout || !child.stderr) throw new Error('the pod load has no output pipes');
    createInterface({ input: child.stdout }).on('line', (line) => this.take(line));
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-2000);
    });
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  }

  /**
   * Starts the pods' clients, or says why it cannot: only a sandbox with its
   * own network namespace has a `kubernetes` Service (on loopback the API
   * refuses the addresses).
   */
  static async start(sandbox: Sandbox, cluster: ClusterReader, opts: PodLoadOptions): Promise<PodLoad | { skipped: string }> {
    const enter = sandbox.namespaceEnter;
    if (!enter) return { skipped: 'the sandbox runs on loopback, where no kubernetes Service can be published' };
    const state = sandbox.state();
    const entries = Object.fromEntries(state.apiservers.flatMap((a) => (a.nodeAddress ? [[a.nodeAddress, a.name]] : [])));
    const role = await cluster.direct('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      metadata: { name: READER_ROLE },
      rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list'] }],
    });
    if (role.status !== 201 && role.status !== 409) throw new Error(`pod load: ClusterRole ${READER_ROLE}: ${role.status} ${role.body.slice(0, 300)}`);
    const kubeconfig = state.apiservers.find((a) => a.running)?.kubeconfig.direct ?? '';
    const token = await serviceAccountToken(kubeconfig, { namespace: 'default', name: 'upgrade-test-pod', clusterRole: READER_ROLE, expirationSeconds: 7200 });
    const input: PodLoadInput = {
      bootstraps: await everyNodeListed(cluster, Object.keys(entries).length),
      ca: state.ca,
      token,
      clusterIp: SANDBOX_KUBERNETES_SERVICE_IP,
      startEpochMs: Date.now() - opts.now(),
      workers: opts.workers,
      thinkMs: opts.thinkMs,
      sliceIntervalMs: SLICE_INTERVAL_MS,
      paths: opts.resources.map((resource) => ({ resource, path: collectionPath(RESOURCE_SPECS[resource]) })),
      entries,
    };
    const [command, ...prefix] = enter;
    if (!command) throw new Error('pod load: the sandbox gives no command to enter its namespace');
    return new PodLoad(spawn(command, [...prefix, process.execPath, CLIENT_MAIN, JSON.stringify(input)], { stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  /** Ends the pods' requests (those in flight finish) and fails if the client did not run to the end. */
  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    const code = await this.exited;
    if (code !== 0) throw new Error(`pod load exited ${code}: ${this.stderr}`);
  }

  private take(line: string): void {
    const parsed = JSON.parse(line) as PodLoadLine;
    if ('record' in parsed) this.records.push(parsed.record);
    else this.endpointChanges.push({ t_s: Math.round(parsed.t) / 1000, endpoints: parsed.endpoints });
  }
}

/** The Service's ready endpoints once it lists one per node (within a minute): where the pods start. */
async function everyNodeListed(cluster: ClusterReader, nodes: number): Promise<{ address: string; port: number }[]> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const listed = await cluster.direct('GET', SERVICE_SLICES_PATH).catch(() => undefined);
    const ready = listed?.status === 200 ? serviceEndpoints(parseSlices(listed.body), 'ready') : [];
    if (ready.length >= nodes) return ready;
    if (Date.now() > deadline) throw new Error(`pod load: the kubernetes Service lists ${ready.length} ready endpoints of ${nodes} nodes after 60 s`);
    await sleep(500);
  }
}
