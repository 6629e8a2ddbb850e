// Issue 29, item 3: the `kubernetes` Service's switch run for real, as
// docs/kubeadm.md ("Publishing the kubernetes Service through the sidecars")
// tells an operator. The sandbox starts as kubeadm leaves a cluster that runs
// mvproxy without publishing: every apiserver on the lease endpoint reconciler
// (publishing itself at NODE:6444), the replicas not publishing. Then the
// switch, step by step: each replica to `kubernetesService.publish` (it holds
// what the apiservers still on the lease reconciler write), then each
// apiserver to `--endpoint-reconciler-type=none` (the last one's lease
// reconciler empties the Endpoints and the slice `kubernetes` as it stops:
// upstream's lease.go; mvproxy's own slice `kubernetes-mvproxy-sidecars`
// keeps listing the sidecars); then the way back. All
// the while a client standing in for a pod (test/support/podWatcher.ts,
// inside the sandbox's network namespace) reads the Service's EndpointSlices
// and calls /version at every listed address, verifying the ClusterIP. It
// must never find a listed address refusing for longer than upstream's lease
// reconciler would leave it listed (its 15 s expiry), never find the set
// empty, and end on the sidecars (the switch) and on the apiservers (the way
// back).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { emptyRounds, listedEndpoints, longestOutage, type WatchRound } from '../support/podWatcherRounds.js';
import { eventually, startTestSandbox, type TestSandbox } from '../support/sandbox.js';

const podWatcherMain = fileURLToPath(new URL('../support/podWatcher.js', import.meta.url));
const NODES = { 'kas-a': '192.0.2.11', 'kas-b': '192.0.2.12' } as const;
const NAMES = Object.keys(NODES) as Array<keyof typeof NODES>;
const APISERVERS = NAMES.map((n) => `${NODES[n]}:6444`);
const SIDECARS = NAMES.map((n) => `${NODES[n]}:6443`);
/** The lease reconciler's expiry: how long upstream leaves a dead apiserver listed. */
const UPSTREAM_LISTED_MS = 15_000;
/** The watcher's round period; an outage is measured to the round that saw it end. */
const ROUND_MS = 500;

/** The pod stand-in, running until stopped; its rounds as it printed them. */
class PodWatcher {
  private readonly child: ChildProcess;
  private output = '';

  constructor(tb: TestSandbox) {
    const enter = tb.sandbox.namespaceEnter;
    const [command, ...prefix] = enter ?? [];
    if (!command) throw new Error('the sandbox has no network namespace');
    const input = {
      bootstraps: [...SIDECARS, ...APISERVERS],
      ca: tb.state().ca,
      token: tb.sandbox.adminBearerToken(),
      clusterIp: '10.0.0.1',
      intervalMs: ROUND_MS,
    };
    this.child = spawn(command, [...prefix, process.execPath, podWatcherMain, JSON.stringify(input)], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.child.stdout?.on('data', (chunk: Buffer) => {
      this.output += chunk.toString('utf8');
    });
  }

  rounds(): WatchRound[] {
    return this.output
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as WatchRound);
  }

  async stop(): Promise<WatchRound[]> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
    return this.rounds();
  }
}

/** Every round that read the slices found at least one address listed. */
function assertNeverEmpty(rounds: WatchRound[]): void {
  assert.deepEqual(
    emptyRounds(rounds).map((r) => new Date(r.at).toISOString()),
    [],
    'never an empty set',
  );
}

describe('the kubernetes Service switch, run as docs/kubeadm.md says, and its way back', () => {
  let tb: TestSandbox;
  let kubeconfig = '';

  const listed = async (): Promise<string[]> => {
    const r = await tb.kubectl(kubeconfig, ['-n', 'default', 'get', 'endpointslices', '-l', 'kubernetes.io/service-name=kubernetes', '-o', 'json']);
    if (r.code !== 0) throw new Error(r.stderr);
    const slices = (JSON.parse(r.stdout) as { items: { ports?: { port?: number }[]; endpoints?: { addresses: string[] }[] }[] }).items;
    // Each endpoint once, however many slices list it, as kube-proxy serves them.
    return [...new Set(slices.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses.map((a) => `${a}:${s.ports?.[0]?.port ?? 0}`))))].sort();
  };
  const until = async (want: string[], timeoutMs = 90_000): Promise<void> => {
    await eventually(async () => assert.deepEqual(await listed(), want), timeoutMs, 500);
  };
  /** What a pod saw over `steps` (every round that read the slices): no listed address down longer than upstream allows. */
  const watched = async (steps: () => Promise<void>): Promise<WatchRound[]> => {
    const watcher = new PodWatcher(tb);
    try {
      await steps();
      await new Promise((resolve) => setTimeout(resolve, 3 * ROUND_MS));
    } finally {
      await watcher.stop();
    }
    const rounds = watcher.rounds();
    const outage = longestOutage(rounds);
    const reading = rounds.filter((r) => r.readFrom !== '');
    let shown = '';
    for (const r of reading) {
      const line = `${listedEndpoints(r).join(' ') || '(empty)'} ${r.answers.map((a) => `${a.address}:${a.port}=${a.status || a.error}`).join(' ')}`;
      if (line !== shown) console.log(`# ${new Date(r.at).toISOString()} read from ${r.readFrom}: ${line}`);
      shown = line;
    }
    console.log(
      `# ${rounds.length} rounds (${reading.length} read the slices); longest outage: ${outage ? `${outage.endpoint} ${outage.ms} ms (${outage.error})` : 'none'}`,
    );
    assert.ok(reading.length >= 10, 'the watcher read the slices in at least 10 rounds');
    assert.ok((outage?.ms ?? 0) <= UPSTREAM_LISTED_MS + ROUND_MS, `no listed address down longer than ${UPSTREAM_LISTED_MS} ms`);
    return reading;
  };

  before(async () => {
    tb = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3', endpointReconciler: 'lease' },
        { name: 'kas-b', version: 'v1.37.2', endpointReconciler: 'lease' },
      ],
      { network: 'namespace', mode: 'mvproxy', controlPlaneReplicas: 'per-apiserver', publishKubernetesService: false },
    );
    kubeconfig = tb.state().apiservers.find((a) => a.name === 'kas-b')?.kubeconfig.direct ?? '';
  });
  after(async () => {
    await tb?.sandbox.down();
  });

  it('as kubeadm leaves it, the apiservers list themselves at NODE:6444', async () => {
    await until(APISERVERS);
  });

  it('the switch (every replica publishing, then every apiserver to none) ends on the sidecars, never empty, no address down longer than upstream', async () => {
    const rounds = await watched(async () => {
      for (const name of NAMES) {
        console.log(`# ${new Date().toISOString()} replica ${name} publishing`);
        await tb.sandbox.stopControlPlane(name);
        await tb.sandbox.restartControlPlane(name, { publishKubernetesService: true });
      }
      // As docs/kubeadm.md says: the replicas publish (their content sticks: the lease
      // reconcilers compare addresses, and the sidecars share their node's) before any
      // apiserver switches.
      await until(SIDECARS);
      console.log(`# ${new Date().toISOString()} the replicas publish the sidecars`);
      // kas-a last: every replica of the sandbox reads and writes through kas-b (unlike a
      // kubeadm node's replica, which goes through its own sidecar), so kas-b must be up to
      // write the sidecars back over the last apiserver's erasure.
      for (const name of [...NAMES].reverse()) {
        console.log(`# ${new Date().toISOString()} ${name} to none`);
        await tb.sandbox.stopApiserver(name);
        await tb.sandbox.startApiserver(name, { endpointReconciler: 'none' });
      }
      await until(SIDECARS);
    });
    assertNeverEmpty(rounds);
    assert.deepEqual(listedEndpoints(rounds.at(-1) as WatchRound), SIDECARS);
  });

  it('the way back (every replica stops publishing, then every apiserver to lease) ends on the apiservers, never empty, no address down longer than upstream', async () => {
    const rounds = await watched(async () => {
      for (const name of NAMES) {
        console.log(`# ${new Date().toISOString()} replica ${name} not publishing`);
        await tb.sandbox.stopControlPlane(name);
        await tb.sandbox.restartControlPlane(name, { publishKubernetesService: false });
      }
      for (const name of NAMES) {
        console.log(`# ${new Date().toISOString()} ${name} to lease`);
        await tb.sandbox.stopApiserver(name);
        await tb.sandbox.startApiserver(name, { endpointReconciler: 'lease' });
      }
      // The lease reconciler corrects the port only when it makes the Endpoints anew (its periodic
      // pass compares addresses, and the sidecars share their node's address): deleting them has the
      // apiservers write theirs within 10 s, while the slices keep listing the sidecars meanwhile.
      for (const args of [
        ['delete', 'endpoints', 'kubernetes'],
        ['delete', 'endpointslice', 'kubernetes-mvproxy-sidecars', 'kubernetes-mvproxy-fallback', '--ignore-not-found'],
      ]) {
        const r = await tb.kubectl(kubeconfig, ['-n', 'default', ...args]);
        assert.equal(r.code, 0, r.stderr);
      }
      await until(APISERVERS);
    });
    assertNeverEmpty(rounds);
    assert.deepEqual(listedEndpoints(rounds.at(-1) as WatchRound), APISERVERS);
  });
});
