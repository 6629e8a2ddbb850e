// The `kubernetes` Service's publisher beside REAL other writers (issue 29;
// docs/operating.md, "The kubernetes Service"): a sandbox in network mode
// `namespace` whose replicas publish, with (1) an apiserver still on
// `--endpoint-reconciler-type=lease`: its content is held and reported, not
// fought; (2) a client writing an address outside the configuration: replaced
// within one probe period, without end, and publishing goes on by itself once
// the writes stop; (3) the status shows every EndpointSlice of the Service.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, startTestSandbox, type TestSandbox } from '../support/sandbox.js';

const [NODE_A, NODE_B] = ['192.0.2.11', '192.0.2.12'];
const OUTSIDE = '192.0.2.99';
/** One probe period (PROBE_INTERVAL_MS) and the round's own reads: how long foreign content may stay. */
const REPLACED_WITHIN_MS = 10_500;

interface Slice {
  metadata: { name: string; resourceVersion: string };
  endpoints?: { addresses: string[] }[];
  ports?: { port?: number }[];
}
interface PublisherStatus {
  state: string;
  message: string;
  lease_apiservers: string[];
  foreign_writes: number;
  slices: Array<{ name: string; written_by_mvproxy: boolean; addresses: string[] }>;
  endpoints_mismatch: string;
}

/**
 * What kas-a's lease reconciler leaves: its own address alone, at its own port
 * or at the one it found there (its periodic pass corrects addresses, not ports,
 * and kas-a's sidecar shares the node's address): the port is not asserted.
 */
const LEASE_CONTENT = new RegExp(`^${NODE_A.replaceAll('.', '\\.')}:644[34]$`);

/** `ip:port` of every endpoint of a slice, sorted. */
const listed = (s: Slice | undefined): string[] =>
  (s?.endpoints ?? []).flatMap((e) => e.addresses.flatMap((ip) => (s?.ports ?? []).map((p) => `${ip}:${p.port}`))).sort();

function harness(getT: () => TestSandbox, getKubeconfig: () => string) {
  const kubectl = async (args: string[]): Promise<string> => {
    const r = await getT().kubectl(getKubeconfig(), args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const slice = async (): Promise<Slice> => JSON.parse(await kubectl(['-n', 'default', 'get', 'endpointslice', 'kubernetes', '-o', 'json'])) as Slice;
  const replicas = () => getT().state().controlPlanes ?? [];
  const status = async (replica = 0): Promise<PublisherStatus> => {
    const cp = replicas()[replica];
    if (!cp) throw new Error(`no replica ${replica}`);
    const dump = (await (await fetch(`${cp.admin}/status`)).json()) as { kubernetesService: PublisherStatus };
    return dump.kubernetesService;
  };
  /** Replaces the slice `kubernetes` whole, as any client with the right could (the admin here). */
  const writeForeign = async (): Promise<void> => {
    const current = await slice();
    const body = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'kubernetes',
        namespace: 'default',
        resourceVersion: current.metadata.resourceVersion,
        labels: { 'kubernetes.io/service-name': 'kubernetes' },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [OUTSIDE], conditions: { ready: true } }],
      ports: [{ name: 'https', port: 6443, protocol: 'TCP' }],
    };
    const file = join(mkdtempSync(join(tmpdir(), 'mvproxy-foreign-')), 'slice.json');
    writeFileSync(file, JSON.stringify(body));
    await kubectl(['replace', '-f', file]);
  };
  return { kubectl, slice, status, writeForeign, replicas };
}

describe('the kubernetes Service beside an apiserver still on the lease reconciler', () => {
  let t: TestSandbox;
  let kubeconfig = '';
  const h = harness(
    () => t,
    () => kubeconfig,
  );

  before(async () => {
    t = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3', endpointReconciler: 'lease' },
        { name: 'kas-b', version: 'v1.37.2' },
      ],
      { network: 'namespace', mode: 'mvproxy', controlPlaneReplicas: 'per-apiserver' },
    );
    kubeconfig = t.state().apiservers.find((a) => a.name === 'kas-b')?.kubeconfig.direct ?? '';
  });
  after(async () => {
    await t?.sandbox.down();
  });

  it('every replica holds, naming the apiserver on the lease reconciler, and its content (the no-proxy state) stays', async () => {
    for (const i of [0, 1])
      await eventually(
        async () => {
          const s = await h.status(i);
          assert.equal(s.state, 'holding', s.message);
          assert.deepEqual(s.lease_apiservers, ['kas-a']);
          assert.match(s.message, /^apiserver kas-a still on the lease reconciler/);
        },
        90_000,
        1000,
      );
    const content = listed(await h.slice());
    assert.equal(content.length, 1, content.join());
    assert.match(content[0] ?? '', LEASE_CONTENT);
  });

  it('is not fought: over 60 s the slice is mostly the reconciler’s, rewritten far less often than a fight would (3 writers every 10 s)', async (ctx) => {
    const versions = new Set<string>();
    let leaseSamples = 0;
    let samples = 0;
    const until = Date.now() + 60_000;
    while (Date.now() < until) {
      const s = await h.slice();
      versions.add(s.metadata.resourceVersion);
      samples++;
      if (LEASE_CONTENT.test(listed(s).join())) leaseSamples++;
      await sleep(1000);
    }
    ctx.diagnostic(`${versions.size} versions of the slice in 60 s; ${leaseSamples}/${samples} samples listed the reconciler's content`);
    assert.ok(versions.size <= 9, `${versions.size} versions`);
    assert.ok(leaseSamples >= samples * 0.5, `${leaseSamples}/${samples}`);
  });

  it('the status shows the slices as kube-proxy reads them, the reconciler’s as foreign', async () => {
    const s = await eventually(
      async () => {
        const found = await h.status(1);
        assert.equal(found.state, 'holding');
        const own = found.slices.find((x) => x.name === 'kubernetes');
        assert.equal(own?.written_by_mvproxy, false);
        assert.match(own?.addresses.join() ?? '', LEASE_CONTENT);
        return found;
      },
      30_000,
      1000,
    );
    assert.deepEqual(
      s.slices.map((x) => x.name),
      ['kubernetes', 'kubernetes-mvproxy-fallback', 'kubernetes-mvproxy-sidecars'],
    );
  });

  it('the replica’s readiness follows: /readyz fails once it has held for a minute, /healthz does not', async () => {
    const cp = h.replicas()[0];
    assert.ok(cp);
    await eventually(
      async () => {
        assert.equal((await fetch(`${cp.admin}/readyz`)).status, 503);
      },
      90_000,
      2000,
    );
    assert.equal((await fetch(`${cp.admin}/healthz`)).status, 200);
    const metrics = await (await fetch(`${cp.admin}/metrics`)).text();
    assert.match(metrics, /^mvproxy_kubernetes_service_state\{state="holding"\} 1$/m);
    // Both sidecars (mvproxy's own slice follows liveness during a hold), and kas-a's one address at the port
    // its reconciler left (LEASE_CONTENT): its apiserver's (one more) or its sidecar's (the same address again).
    assert.match(metrics, /^mvproxy_kubernetes_service_listed_addresses\{kind="sidecar"\} 2$/m);
    assert.match(metrics, /^mvproxy_kubernetes_service_listed_addresses\{kind="apiserver"\} [01]$/m);
  });

  it('Events about Service default/kubernetes say it holds', async (ctx) => {
    const events = JSON.parse(await h.kubectl(['-n', 'default', 'get', 'events.events.k8s.io', '-o', 'json'])) as {
      items: Array<{ reason: string; note?: string; reportingController: string; regarding: { kind: string; name: string } }>;
    };
    // What the replicas made of the reconciler's content (a ForeignWrite names the addresses it judged outside the config).
    for (const e of events.items) ctx.diagnostic(`${e.reason}: ${e.note ?? ''}`);
    assert.ok(
      events.items.some(
        (e) =>
          e.reason === 'PublisherHolding' &&
          e.reportingController === 'mvproxy.dev/control-plane' &&
          e.regarding.kind === 'Service' &&
          e.regarding.name === 'kubernetes',
      ),
      JSON.stringify(events.items.map((e) => e.reason)),
    );
  });
});

describe('the kubernetes Service beside a foreign writer', () => {
  let t: TestSandbox;
  let kubeconfig = '';
  const h = harness(
    () => t,
    () => kubeconfig,
  );
  const sidecars = async (): Promise<void> => assert.deepEqual(listed(await h.slice()), [`${NODE_A}:6443`, `${NODE_B}:6443`]);

  before(async () => {
    t = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3' },
        { name: 'kas-b', version: 'v1.37.2' },
      ],
      { network: 'namespace', mode: 'mvproxy', controlPlaneReplicas: 'per-apiserver' },
    );
    kubeconfig = t.state().apiservers.find((a) => a.name === 'kas-b')?.kubeconfig.direct ?? '';
    await eventually(sidecars, 90_000, 1000);
  });
  after(async () => {
    await t?.sandbox.down();
  });

  it(`content naming ${OUTSIDE} (outside the configuration) is replaced within one probe period`, async (ctx) => {
    const took: number[] = [];
    for (let i = 0; i < 3; i++) {
      await h.writeForeign();
      const wroteAt = Date.now();
      await eventually(sidecars, 20_000, 100);
      took.push(Date.now() - wroteAt);
      await sleep(3000);
    }
    ctx.diagnostic(`replaced after ${took.join(', ')} ms`);
    for (const ms of took) assert.ok(ms <= REPLACED_WITHIN_MS, `replaced after ${ms} ms`);
  });

  it('a writer that keeps at it (every second for 40 s) is replaced every time, and the replicas keep publishing by themselves after it stops', async () => {
    const until = Date.now() + 40_000;
    while (Date.now() < until) {
      await h.writeForeign().catch(() => {}); // a conflict with a replica's write: the next second tries again
      await sleep(1000);
    }
    const stoppedAt = Date.now();
    await eventually(sidecars, REPLACED_WITHIN_MS, 200);
    assert.ok(Date.now() - stoppedAt <= REPLACED_WITHIN_MS);
    // Whichever replica's round comes first replaces it: the count is the replicas' together.
    let counted = 0;
    for (const i of [0, 1]) {
      const s = await h.status(i);
      assert.equal(s.state, 'publishing', s.message);
      counted += s.foreign_writes;
    }
    assert.ok(counted >= 2, `foreign writes counted: ${counted}`);
    // The counter totals what the status counts over its window, replica by replica (one may have replaced none).
    let metered = 0;
    for (const cp of h.replicas()) {
      const metrics = await (await fetch(`${cp.admin}/metrics`)).text();
      metered += Number(/^mvproxy_kubernetes_service_foreign_writes_total (\d+)$/m.exec(metrics)?.[1] ?? Number.NaN);
      assert.equal((await fetch(`${cp.admin}/readyz`)).status, 200);
    }
    assert.ok(metered >= counted, `metered ${metered}, counted ${counted}`);
  });

  it('the status shows every slice of the Service, a foreign one of another name as such, and the Endpoints differing from them', async () => {
    const extra = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'kubernetes-extra', namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [OUTSIDE], conditions: { ready: true } }],
      ports: [{ name: 'https', port: 443, protocol: 'TCP' }],
    };
    const file = join(mkdtempSync(join(tmpdir(), 'mvproxy-extra-')), 'slice.json');
    writeFileSync(file, JSON.stringify(extra));
    await h.kubectl(['create', '-f', file]);
    try {
      const s = await eventually(
        async () => {
          const found = await h.status(0);
          assert.ok(found.slices.some((x) => x.name === 'kubernetes-extra'));
          return found;
        },
        20_000,
        1000,
      );
      assert.deepEqual(
        s.slices.map((x) => [x.name, x.written_by_mvproxy, x.addresses]),
        [
          ['kubernetes', true, [`${NODE_A}:6443`, `${NODE_B}:6443`]],
          ['kubernetes-extra', false, [`${OUTSIDE}:443`]],
          ['kubernetes-mvproxy-fallback', true, []],
          ['kubernetes-mvproxy-sidecars', true, [`${NODE_A}:6443`, `${NODE_B}:6443`]],
        ],
      );
      assert.equal(s.endpoints_mismatch, `the EndpointSlices list ${OUTSIDE}:443 that the Endpoints do not`);
    } finally {
      await h.kubectl(['-n', 'default', 'delete', 'endpointslice', 'kubernetes-extra']);
    }
  });
});
