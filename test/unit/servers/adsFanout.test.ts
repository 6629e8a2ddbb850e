// ADS fan-out: 200 simulated Envoys (src/tools/bench/adsClients.ts, the bench's
// own clients) running the configs of three sidecars (node.metadata
// `apiserver`) on one in-process ADS server over a Unix socket. It fails only
// when a change set for every sidecar does not reach, and get ACKed by, every
// node. Times are printed as diagnostics, never asserted (the benchmark,
// `mvproxy bench --only fanout`, holds the targets).
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { AdsServer, type AdsServerOptions } from '../../../src/servers/ads.js';
import { SnapshotStore } from '../../../src/servers/snapshotStore.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../../../src/servers/grpcListen.js';
import { connectSimulatedEnvoys, waitForEvery, type SimulatedEnvoy } from '../../../src/tools/bench/adsClients.js';
import { PUSH_ORDER, snapshotVersions, type Snapshot } from '../../../src/xds/snapshot.js';
import { config } from '../../support/snapshotFixtures.js';

const NODES = Array.from({ length: 200 }, (_, i) => `sim-${String(i + 1).padStart(3, '0')}`);
const SIDECARS = ['kas-a', 'kas-b', 'kas-c'];
/** Bounds a hung run; not a figure. */
const WAIT_MS = 60_000;

async function fleet(t: TestContext, options: Partial<AdsServerOptions> = {}): Promise<{ ads: AdsServer; clients: SimulatedEnvoy[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-fanout-'));
  const ads = new AdsServer({ current: new SnapshotStore(), startup: new SnapshotStore() }, { logger: pino({ level: 'silent' }), ...options });
  const server = createGrpcServer();
  ads.addToServer(server);
  const address = await listenUnix(server, join(dir, 'xds.sock'));
  const clients = connectSimulatedEnvoys(address, NODES, { sidecars: SIDECARS });
  t.after(async () => {
    for (const c of clients) c.close();
    await shutdownGrpcServer(server, 100);
    rmSync(dir, { recursive: true, force: true });
  });
  return { ads, clients };
}

/** True when the client ACKed every type at the snapshot's versions. */
function ackedAll(client: SimulatedEnvoy, snapshot: Snapshot): boolean {
  const want = snapshotVersions(snapshot);
  return PUSH_ORDER.every((url) => client.acked.get(url)?.version === want[url]);
}

function setEverywhere(ads: AdsServer, snapshot: Snapshot): void {
  for (const sidecar of SIDECARS) ads.setSnapshot(sidecar, snapshot);
}

describe('ADS fan-out to 200 simulated nodes', () => {
  it('every node ACKs a change set for all of them, and the server records each ACK', async (t) => {
    const { ads, clients } = await fleet(t);
    const before = config({ port: 8080 });
    setEverywhere(ads, before);
    await waitForEvery(clients, (c) => ackedAll(c, before), WAIT_MS);

    // New endpoints, a new cluster, and routes moved to it: CDS, EDS and RDS all change.
    const after = config({ port: 8081, extraCluster: true, routeCluster: 'other' });
    const started = performance.now();
    setEverywhere(ads, after);
    const set = performance.now();
    await waitForEvery(clients, (c) => ackedAll(c, after), WAIT_MS);
    const done = performance.now();

    // The server reads the last ACKs a moment after the clients wrote them.
    const want = snapshotVersions(after);
    const serverAckedAll = (): boolean => NODES.every((node) => PUSH_ORDER.every((url) => ads.status()[node]?.types[url]?.versionAcked === want[url]));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the server did not record every ACK')), WAIT_MS);
      const check = (): void => {
        if (!serverAckedAll()) return;
        clearTimeout(timer);
        ads.off('ack', check);
        resolve();
      };
      ads.on('ack', check);
      check();
    });
    const status = ads.status();
    NODES.forEach((node, i) => {
      const types = status[node]?.types;
      assert.equal(status[node]?.connected, 1, `${node} has one open stream`);
      assert.equal(status[node]?.sidecar, SIDECARS[i % SIDECARS.length], `${node} runs the sidecar its metadata names`);
      for (const url of PUSH_ORDER) assert.equal(types?.[url]?.versionAcked, want[url], `${node} ACKed ${url}`);
    });
    t.diagnostic(
      `200 nodes: snapshots set in ${Math.round(set - started)} ms, every node ACKed after ${Math.round(done - started)} ms ` +
        `(load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')})`,
    );
  });

  it('every node that connected before it had a snapshot gets its first one and ACKs it', async (t) => {
    const { ads, clients } = await fleet(t);
    const current = config({ port: 9090 });
    setEverywhere(ads, current);
    await waitForEvery(clients, (c) => ackedAll(c, current), WAIT_MS);
    assert.ok(clients.every((c) => c.error === undefined));
    assert.equal(Object.values(ads.status()).filter((s) => s.connected === 1).length, NODES.length);
  });
});

describe("Envoys that run one sidecar's config", () => {
  it("a node whose metadata names an apiserver gets that sidecar's snapshot and its changes, and another sidecar's change leaves it alone", async (t) => {
    const { ads, clients } = await fleet(t);
    const a = config({ port: 7001 });
    const others = config({ port: 7002 });
    ads.setSnapshot('kas-a', a);
    ads.setSnapshot('kas-b', others);
    ads.setSnapshot('kas-c', others);
    const ofA = clients.filter((_, i) => SIDECARS[i % SIDECARS.length] === 'kas-a');
    const rest = clients.filter((c) => !ofA.includes(c));
    await waitForEvery(ofA, (c) => ackedAll(c, a), WAIT_MS);
    await waitForEvery(rest, (c) => ackedAll(c, others), WAIT_MS);
    const responsesBefore = rest.map((c) => c.responses);

    const changed = config({ port: 7003, extraCluster: true, routeCluster: 'other' });
    ads.setSnapshot('kas-a', changed);
    await waitForEvery(ofA, (c) => ackedAll(c, changed), WAIT_MS);
    assert.deepEqual(
      rest.map((c) => c.responses),
      responsesBefore,
      'no response went to the nodes of kas-b and kas-c',
    );
  });

  it('with room for one response in flight, every node still gets and ACKs every response, one at a time', async (t) => {
    let inFlight = 0;
    let most = 0;
    const { ads, clients } = await fleet(t, {
      maxBytesInFlight: 1,
      metrics: {
        responseSent: () => {
          inFlight++;
          most = Math.max(most, inFlight);
        },
        ack: () => inFlight--,
        nack: () => inFlight--,
      },
    });
    const current = config({ port: 7100 });
    setEverywhere(ads, current);
    await waitForEvery(clients, (c) => ackedAll(c, current), WAIT_MS);
    assert.equal(most, 1);
  });
});
