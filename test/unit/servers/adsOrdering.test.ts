// The order of a change's routes and documents on one ADS stream, and what a
// NACK or a missing answer holds back: nothing is sent out of order, and
// Envoy keeps a previous configuration whose routes and documents agree.
// The client: test/support/fakeEnvoy.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DiscoveryResponse__Output } from '../../../src/generated/envoy/service/discovery/v3/DiscoveryResponse.js';
import type { Cluster } from '../../../src/generated/envoy/config/cluster/v3/Cluster.js';
import type { ClusterLoadAssignment } from '../../../src/generated/envoy/config/endpoint/v3/ClusterLoadAssignment.js';
import type { Listener } from '../../../src/generated/envoy/config/listener/v3/Listener.js';
import { makeSnapshot, type Snapshot } from '../../../src/xds/snapshot.js';
import type { FakeEnvoy } from '../../support/fakeEnvoy.js';
import { CDS, ECDS, EDS, LDS, RDS, config, documentFilterConfig } from '../../support/snapshotFixtures.js';
import { NODE, harness } from '../../support/adsHarness.js';

/** config()'s clusters and listener, with one named route per `routes` entry and the document filter adding `header`. */
function withRoutes(routes: readonly string[], header: string): Snapshot {
  const base = config();
  return makeSnapshot({
    clusters: [...base.types[CDS].resources.values()] as Cluster[],
    endpoints: [...base.types[EDS].resources.values()] as ClusterLoadAssignment[],
    listeners: [...base.types[LDS].resources.values()] as Listener[],
    routes: [
      {
        name: 'ingress',
        virtual_hosts: [
          { name: 'all', domains: ['*'], routes: routes.map((name) => ({ name, match: { prefix: `/${name}` }, route: { cluster: 'backend' } })) },
        ],
      },
    ],
    extensionConfigs: [documentFilterConfig(header)],
  });
}

/** Subscribes to every type and ACKs the first snapshot's responses, in the order they come. */
async function settle(envoy: FakeEnvoy): Promise<void> {
  envoy.subscribe(CDS);
  envoy.subscribe(EDS, ['backend']);
  envoy.subscribe(LDS);
  envoy.subscribe(RDS, ['ingress']);
  envoy.subscribe(ECDS, ['document']);
  for (const names of [[], ['backend'], [], ['ingress'], ['document']]) envoy.ack(await envoy.next(), names);
}

function ackWithNames(envoy: FakeEnvoy, response: DiscoveryResponse__Output): void {
  const names = response.type_url === RDS ? ['ingress'] : response.type_url === ECDS ? ['document'] : [];
  envoy.ack(response, names);
}

describe('the order of routes and documents in a change', () => {
  it('sends the documents first, and the routes after their ACK, when the change only drops routes', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, withRoutes(['jobs', 'pods'], 'x-jobs-and-pods'));
    const envoy = h.envoy();
    await settle(envoy);
    h.ads.setSnapshot(NODE, withRoutes(['pods'], 'x-pods'));
    const ecds = await envoy.next();
    assert.equal(ecds.type_url, ECDS);
    await envoy.nothingFor(200);
    envoy.ack(ecds, ['document']);
    assert.equal((await envoy.next()).type_url, RDS);
  });

  it('sends the routes first, and the documents after their ACK, when the change adds a route', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, withRoutes(['pods'], 'x-pods'));
    const envoy = h.envoy();
    await settle(envoy);
    h.ads.setSnapshot(NODE, withRoutes(['jobs', 'pods'], 'x-jobs-and-pods'));
    const rds = await envoy.next();
    assert.equal(rds.type_url, RDS);
    await envoy.nothingFor(200);
    envoy.ack(rds, ['ingress']);
    assert.equal((await envoy.next()).type_url, ECDS);
  });

  it('sends the routes first when the change adds a route and drops another', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, withRoutes(['jobs'], 'x-jobs'));
    const envoy = h.envoy();
    await settle(envoy);
    h.ads.setSnapshot(NODE, withRoutes(['pods'], 'x-pods'));
    assert.equal((await envoy.next()).type_url, RDS);
    await envoy.nothingFor(200);
  });
});

describe('only an ACK settles a type', () => {
  it('keeps the documents of a change back while its routes are NACKed, and counts the NACK', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, withRoutes(['pods'], 'x-pods'));
    const envoy = h.envoy();
    await settle(envoy);
    h.ads.setSnapshot(NODE, withRoutes(['jobs', 'pods'], 'x-jobs-and-pods'));
    const rds = await envoy.next();
    envoy.nack(rds, 'route rejected', '', ['ingress']);
    await envoy.nothingFor(300);
    assert.equal(h.nacks, 1);
  });

  it('keeps the routes of a documents-first change back while its documents are NACKed', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, withRoutes(['jobs', 'pods'], 'x-jobs-and-pods'));
    const envoy = h.envoy();
    await settle(envoy);
    h.ads.setSnapshot(NODE, withRoutes(['pods'], 'x-pods'));
    const ecds = await envoy.next();
    assert.equal(ecds.type_url, ECDS);
    envoy.nack(ecds, 'filter rejected', '', ['document']);
    await envoy.nothingFor(300);
    assert.equal(h.nacks, 1);
  });

  it('sends a NACKed type again with the next change, even when its own content is the same', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, withRoutes(['pods'], 'x-pods'));
    const envoy = h.envoy();
    await settle(envoy);
    h.ads.setSnapshot(NODE, withRoutes(['jobs', 'pods'], 'x-jobs-and-pods'));
    const rds = await envoy.next();
    envoy.nack(rds, 'route rejected', '', ['ingress']);
    await envoy.nothingFor(200);
    // Only the documents change: the routes go again, then the documents after their ACK.
    h.ads.setSnapshot(NODE, withRoutes(['jobs', 'pods'], 'x-jobs-and-pods-2'));
    const again = await envoy.next();
    assert.deepEqual([again.type_url, again.version_info], [RDS, rds.version_info]);
    ackWithNames(envoy, again);
    const ecds = await envoy.next();
    assert.equal(ecds.type_url, ECDS);
  });

  it('holds the documents back past the ordering timeout while the routes are unanswered, and counts the wait once', async (t) => {
    const h = await harness(t, { orderingTimeoutMs: 200 });
    h.ads.setSnapshot(NODE, withRoutes(['pods'], 'x-pods'));
    const envoy = h.envoy();
    await settle(envoy);
    h.ads.setSnapshot(NODE, withRoutes(['jobs', 'pods'], 'x-jobs-and-pods'));
    assert.equal((await envoy.next()).type_url, RDS);
    await envoy.nothingFor(700);
    assert.deepEqual(h.heldBack, [ECDS]);
  });
});

describe('a replica not yet synced with the cluster (awaitSync)', () => {
  it('gives its snapshot at once to an Envoy that holds nothing', async (t) => {
    const h = await harness(t, { awaitSync: true });
    h.ads.setSnapshot(NODE, config());
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    assert.equal((await envoy.next()).type_url, CDS);
  });

  it('sends nothing to an Envoy that holds a configuration until it is synced, then the current snapshot', async (t) => {
    const h = await harness(t, { awaitSync: true });
    const kept = config();
    h.ads.setSnapshot(NODE, kept);
    const envoy = h.envoy();
    // It runs a configuration from another replica (perhaps newer than this one's kept state).
    envoy.subscribe(CDS, [], 'from-another-replica');
    await envoy.nothingFor(300);
    const fresh = config({ port: 9090 });
    h.ads.setSnapshot(NODE, fresh);
    await envoy.nothingFor(200);
    h.ads.markSynced();
    const cds = await envoy.next();
    assert.equal(cds.version_info, fresh.types[CDS].version);
  });
});
