// The `kubernetes` Service's endpoints, published for real (issue 21, docs/operating.md,
// "The kubernetes Service"): a sandbox in network mode `namespace` (each node
// at its own address, the sidecar on 6443, the apiserver on 6444), two
// control-plane replicas publishing, and a client standing in for a pod
// inside the namespace (test/support/podClient.ts) dialling what is listed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import type { PodClientReport } from '../support/podClient.js';

const execFileAsync = promisify(execFile);
const podClientMain = fileURLToPath(new URL('../support/podClient.js', import.meta.url));

/** A resource only v1.37 serves: answered through kas-a (v1.36.3) only by a sidecar rerouting it. */
const MIGRATIONS = '/apis/storagemigration.k8s.io/v1/storageversionmigrations';
const [NODE_A, NODE_B] = ['192.0.2.11', '192.0.2.12'];
/** Upstream's expiry (15 s) plus one probe period (10 s): how long a dead sidecar may stay listed. */
const LEAVE_WITHIN_MS = 25_000;

interface Slice {
  metadata: { name: string; resourceVersion: string };
  ports?: { name?: string; port?: number; protocol?: string }[];
  endpoints?: { addresses: string[] }[];
}
interface Endpoints {
  metadata: { resourceVersion: string };
  subsets?: { addresses?: { ip: string }[]; ports?: { name?: string; port?: number }[] }[];
}
interface Published {
  slice: Slice;
  /** mvproxy's own slice of the sidecars, which no apiserver writes. */
  own?: Slice;
  fallback?: Slice;
  endpoints: Endpoints;
}

const addressesOf = (slice: Slice | undefined): string[] => (slice?.endpoints ?? []).flatMap((e) => e.addresses).sort();

describe('the kubernetes Service, published by the replicas in a sandbox network namespace', () => {
  let t: TestSandbox;
  let kubeconfig = '';

  const kubectl = async (args: string[]): Promise<string> => {
    const r = await t.kubectl(kubeconfig, args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const published = async (): Promise<Published> => {
    const slices = JSON.parse(await kubectl(['-n', 'default', 'get', 'endpointslices', '-l', 'kubernetes.io/service-name=kubernetes', '-o', 'json'])) as {
      items: Slice[];
    };
    const slice = slices.items.find((s) => s.metadata.name === 'kubernetes');
    if (!slice) throw new Error('no EndpointSlice kubernetes');
    const own = slices.items.find((s) => s.metadata.name === 'kubernetes-mvproxy-sidecars');
    const fallback = slices.items.find((s) => s.metadata.name === 'kubernetes-mvproxy-fallback');
    const endpoints = JSON.parse(await kubectl(['-n', 'default', 'get', 'endpoints', 'kubernetes', '-o', 'json'])) as Endpoints;
    return { slice, ...(own ? { own } : {}), ...(fallback ? { fallback } : {}), endpoints };
  };
  /** The resourceVersions: the three slices, then the Endpoints. */
  const versions = (p: Published): string[] => [p.slice, p.own, p.fallback, p.endpoints].map((o) => o?.metadata.resourceVersion ?? '-');
  /** Runs the pod stand-in inside the namespace; it reads the slices at `bootstrap`. */
  const podClient = async (bootstrap: string): Promise<PodClientReport> => {
    const enter = t.sandbox.namespaceEnter;
    if (!enter) throw new Error('the sandbox has no network namespace');
    const [command, ...prefix] = enter;
    if (!command) throw new Error('no enter command');
    const input = { bootstrap, ca: t.state().ca, token: t.sandbox.adminBearerToken(), clusterIp: '10.0.0.1', path: MIGRATIONS };
    const { stdout } = await execFileAsync(command, [...prefix, process.execPath, podClientMain, JSON.stringify(input)], { timeout: 30_000 });
    return JSON.parse(stdout) as PodClientReport;
  };
  const sidecarsListed = async (): Promise<Published> => {
    const p = await published();
    assert.deepEqual(addressesOf(p.slice), [NODE_A, NODE_B]);
    return p;
  };

  before(async () => {
    t = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3' },
        { name: 'kas-b', version: 'v1.37.2' },
      ],
      { network: 'namespace', mode: 'mvproxy', controlPlaneReplicas: 'per-apiserver' },
    );
    // Reads go to kas-b directly (through its host relay): what is checked is what is stored.
    kubeconfig = t.state().apiservers.find((a) => a.name === 'kas-b')?.kubeconfig.direct ?? '';
  });
  after(async () => {
    await t?.sandbox.down();
  });

  it('the state file gives each node its address and how to enter the namespace, and keeps the host URLs', () => {
    const s = t.state();
    assert.equal(s.network?.mode, 'namespace');
    assert.match(s.network?.enter ?? '', /^nsenter .*--net=\/proc\/\d+\/ns\/net$/);
    assert.deepEqual(
      s.apiservers.map((a) => [a.nodeAddress, a.inNamespace?.sidecar, a.inNamespace?.direct]),
      [
        [NODE_A, `https://${NODE_A}:6443`, `https://${NODE_A}:6444`],
        [NODE_B, `https://${NODE_B}:6443`, `https://${NODE_B}:6444`],
      ],
    );
    for (const a of s.apiservers) assert.match(a.sidecar ?? '', /^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('the EndpointSlices kubernetes and kubernetes-mvproxy-sidecars list every sidecar at its node address on 6443 (port https), and the Endpoints match', async () => {
    const p = await eventually(sidecarsListed, 60_000, 1000);
    assert.deepEqual(p.slice.ports, [{ name: 'https', port: 6443, protocol: 'TCP' }]);
    assert.deepEqual([addressesOf(p.own), p.own?.ports], [addressesOf(p.slice), p.slice.ports]);
    assert.deepEqual(addressesOf(p.fallback), []);
    const [subset, ...others] = p.endpoints.subsets ?? [];
    assert.deepEqual(others, []);
    assert.deepEqual((subset?.addresses ?? []).map((a) => a.ip).sort(), [NODE_A, NODE_B]);
    assert.deepEqual(
      subset?.ports?.map((x) => [x.name, x.port]),
      [['https', 6443]],
    );
  });

  it('a client in the namespace reads the slices, verifies each listed address as the ClusterIP 10.0.0.1 and reaches a sidecar there', async () => {
    const report = await podClient(`${NODE_A}:6443`);
    assert.deepEqual(
      report.answers.map((a) => [a.address, a.port, a.versionStatus, a.error]),
      [
        [NODE_A, 6443, 200, undefined],
        [NODE_B, 6443, 200, undefined],
      ],
    );
    // Only a sidecar answers storageversionmigrations through the v1.36.3 node (its apiserver alone: 404).
    const atA = report.answers.find((a) => a.address === NODE_A);
    assert.equal(atA?.gitVersion, 'v1.36.3');
    assert.equal(atA?.pathStatus, 200);
  });

  it('no API object moves a published address: Node addresses, leases, liveness-record entries, labels and annotations naming another address change nothing', async () => {
    const before = await eventually(sidecarsListed, 60_000, 1000);
    const elsewhere = '192.0.2.99';
    const objects = {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: {
            name: 'kas-a',
            labels: { 'kubernetes.io/hostname': elsewhere },
            annotations: { 'node.alpha.kubernetes.io/ttl': '0', address: elsewhere },
          },
        },
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: {
            name: 'apiserver-impostor',
            namespace: 'kube-system',
            labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': elsewhere },
          },
          spec: { holderIdentity: `impostor_${elsewhere}`, leaseDurationSeconds: 3600 },
        },
      ],
    };
    const file = writeTemp(JSON.stringify(objects));
    await kubectl(['apply', '-f', file]);
    // The Node's own addresses (what a kubelet reports), where a regression reading Nodes would look.
    const nodeStatus = {
      status: {
        addresses: [
          { type: 'InternalIP', address: elsewhere },
          { type: 'Hostname', address: 'kas-a' },
        ],
      },
    };
    await kubectl(['patch', 'node', 'kas-a', '--subresource=status', '--type=merge', '-p', JSON.stringify(nodeStatus)]);
    await kubectl(['-n', 'default', 'annotate', 'service', 'kubernetes', `mvproxy-test/address=${elsewhere}`, '--overwrite']);
    await kubectl(['-n', 'default', 'label', 'service', 'kubernetes', `mvproxy-test-hostname=${elsewhere}`, '--overwrite']);
    // An annotation on the published Endpoints (not content mvproxy decides: no rewrite).
    await kubectl(['-n', 'default', 'annotate', 'endpoints', 'kubernetes', `mvproxy-test/address=${elsewhere}`, '--overwrite']);
    const annotated = await published();
    // A liveness-record entry renewed (round 1, then 2: a live replica to every reader) naming an apiserver the config lacks and an address.
    for (const round of [1, 2]) {
      const entry = { replica: 'impostor', incarnation: 'x', round, sidecars: { 'kas-c': round, [elsewhere]: round }, apiservers: { [elsewhere]: round } };
      await kubectl([
        '-n',
        'kube-system',
        'patch',
        'configmap',
        'mvproxy-liveness',
        '--type=merge',
        '-p',
        JSON.stringify({ data: { impostor: JSON.stringify(entry) } }),
      ]);
      await sleep(5000);
    }
    // Two probe periods and an expiry: every replica has written (or not) by then.
    await sleep(22_000);
    const now = await published();
    assert.deepEqual(versions(now), versions(annotated));
    assert.deepEqual(versions(annotated).slice(0, 3), versions(before).slice(0, 3), 'the slices untouched');
    assert.deepEqual(addressesOf(now.slice), [NODE_A, NODE_B]);
    assert.deepEqual(addressesOf(now.own), [NODE_A, NODE_B]);
    assert.deepEqual(addressesOf(now.fallback), []);
    // The impostor identity lease would otherwise stay in the control plane's view for the tests after this one.
    await kubectl(['delete', '-f', file, '--wait=false']);
    await kubectl(['-n', 'default', 'annotate', 'service', 'kubernetes', 'mvproxy-test/address-']);
    await kubectl(['-n', 'default', 'label', 'service', 'kubernetes', 'mvproxy-test-hostname-']);
    await kubectl(['-n', 'kube-system', 'patch', 'configmap', 'mvproxy-liveness', '--type=json', '-p', '[{"op":"remove","path":"/data/impostor"}]']);
  });

  it('a steady state changes nothing for a minute (six probe periods, four expiries)', async () => {
    const first = await eventually(sidecarsListed, 60_000, 1000);
    await sleep(60_000);
    assert.deepEqual(versions(await published()), versions(first));
  });

  it('a SIGKILLed sidecar leaves the slice within 25 s, its apiserver on 6444 takes its place, and it comes back after a restart', async (ctx) => {
    await eventually(sidecarsListed, 60_000, 1000);
    const killedAt = Date.now();
    await t.sandbox.killSidecar('kas-a');
    const gone = await eventually(
      async () => {
        const p = await published();
        assert.deepEqual(addressesOf(p.slice), [NODE_B]);
        assert.deepEqual(addressesOf(p.fallback), [NODE_A]);
        return p;
      },
      40_000,
      500,
    );
    const took = Date.now() - killedAt;
    ctx.diagnostic(`the killed sidecar left the slice after ${took} ms`);
    assert.ok(took <= LEAVE_WITHIN_MS, `left after ${took} ms`);
    assert.deepEqual(
      gone.fallback?.ports?.map((x) => [x.name, x.port]),
      [['https', 6444]],
    );
    assert.deepEqual((gone.endpoints.subsets ?? []).map((s) => [(s.addresses ?? []).map((a) => a.ip), (s.ports ?? []).map((x) => x.port)]).sort(), [
      [[NODE_A], [6444]],
      [[NODE_B], [6443]],
    ]);
    const restartedAt = Date.now();
    await t.sandbox.startSidecar('kas-a');
    const back = await eventually(sidecarsListed, 40_000, 500);
    ctx.diagnostic(`the restarted sidecar was listed again after ${Date.now() - restartedAt} ms`);
    assert.deepEqual(addressesOf(back.fallback), []);
  });

  it('with every replica SIGKILLed the objects stay as they are and a client through the published addresses keeps working; a foreign write meanwhile is replaced once they restart', async () => {
    const before = await eventually(sidecarsListed, 60_000, 1000);
    const replicas = (t.state().controlPlanes ?? []).map((r) => r.name);
    for (const replica of replicas) await t.sandbox.killControlPlane(replica);
    // Longer than an expiry and a probe period: a live replica would have acted by now.
    await sleep(20_000);
    assert.deepEqual(versions(await published()), versions(before));
    const report = await podClient(`${NODE_B}:6443`);
    assert.deepEqual(
      report.answers.map((a) => [a.address, a.versionStatus, a.pathStatus]),
      [
        [NODE_A, 200, 200],
        [NODE_B, 200, 200],
      ],
    );
    // A foreign writer while nobody publishes: its content stays (nobody is there to replace it)...
    const foreign = { ...before.slice, endpoints: [{ addresses: ['192.0.2.99'], conditions: { ready: true } }] };
    await kubectl(['replace', '-f', writeTemp(JSON.stringify({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', addressType: 'IPv4', ...foreign }))]);
    await sleep(12_000);
    assert.deepEqual(addressesOf((await published()).slice), ['192.0.2.99']);
    // ...until the replicas are back: one expiry of watching, then one round.
    for (const replica of replicas) await t.sandbox.restartControlPlane(replica);
    await eventually(sidecarsListed, 45_000, 1000);
  });
});

function writeTemp(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'mvproxy-objects-')), 'objects.json');
  writeFileSync(file, text);
  return file;
}
