// ADS server against a real grpc-js client over a Unix socket: the protocol
// rules (ACK, NACK, stale nonce, ordering, names) without an Envoy.
// The client: test/support/fakeEnvoy.ts; the snapshot: test/support/snapshotFixtures.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { sendGarbage } from '../../support/garbage.js';
import { NackError, hasAcked, waitForAck, waitForNack } from '../../support/adsWait.js';
import { BUDGET_HOLD_MS } from '../../../src/servers/adsStream.js';
import { FakeEnvoy } from '../../support/fakeEnvoy.js';
import { CDS, ECDS, EDS, LDS, RDS, config } from '../../support/snapshotFixtures.js';
import { NODE, harness, names } from '../../support/adsHarness.js';
import { snapshotVersions } from '../../../src/xds/snapshot.js';

describe('ADS server', () => {
  it('answers the first CDS request with the full cluster set at the snapshot version', async (t) => {
    const h = await harness(t);
    const snapshot = config({ extraCluster: true });
    h.ads.setSnapshot(NODE, snapshot);
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    const response = await envoy.next();
    assert.equal(response.type_url, CDS);
    assert.equal(response.version_info, snapshot.types[CDS].version);
    assert.deepEqual(names(response), ['backend', 'other']);
    assert.equal((response.resources?.[0] as unknown as { '@type': string } | undefined)?.['@type'], CDS);
  });

  it('records an ACK as the acked version', async (t) => {
    const h = await harness(t);
    const snapshot = config();
    h.ads.setSnapshot(NODE, snapshot);
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    const response = await envoy.next();
    envoy.ack(response);
    await waitForAck(h.ads, NODE, CDS, snapshot.types[CDS].version, 3000);
    const status = h.ads.status()[NODE]?.types[CDS];
    assert.equal(status?.versionAcked, snapshot.types[CDS].version);
    assert.equal(status?.versionSent, snapshot.types[CDS].version);
    assert.equal(status?.nonce, response.nonce);
  });

  it('records a NACK with its message and does not resend the rejected version', async (t) => {
    const h = await harness(t);
    const snapshot = config();
    h.ads.setSnapshot(NODE, snapshot);
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    const response = await envoy.next();
    envoy.nack(response, 'Proto constraint validation failed: bad cluster');
    const nack = await waitForNack(h.ads, NODE, CDS, snapshot.types[CDS].version, 3000);
    assert.match(nack.message, /bad cluster/);
    const status = h.ads.status()[NODE]?.types[CDS];
    assert.equal(status?.lastNack?.version, snapshot.types[CDS].version);
    assert.match(status?.lastNack?.message ?? '', /bad cluster/);
    assert.equal(status?.versionAcked, '');
    // Re-setting the same content (a re-plan of the same state) must not cause a NACK loop.
    h.ads.setSnapshot(NODE, config());
    await envoy.nothingFor(300);
    assert.equal(h.sent.filter((s) => s.typeUrl === CDS).length, 1);
    assert.equal(h.nacks, 1);
  });

  it('sends a changed snapshot after a NACK', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, config());
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    envoy.nack(await envoy.next(), 'rejected');
    const fixed = config({ extraCluster: true });
    h.ads.setSnapshot(NODE, fixed);
    const response = await envoy.next();
    assert.equal(response.version_info, fixed.types[CDS].version);
    assert.deepEqual(names(response), ['backend', 'other']);
  });

  it('pushes a snapshot change to a connected stream', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, config({ port: 1 }));
    const envoy = h.envoy();
    envoy.subscribe(EDS, ['backend']);
    envoy.ack(await envoy.next(), ['backend']);
    const changed = config({ port: 2 });
    h.ads.setSnapshot(NODE, changed);
    const response = await envoy.next();
    assert.equal(response.type_url, EDS);
    assert.equal(response.version_info, changed.types[EDS].version);
  });

  it("lists a sidecar with its snapshot's versions before any Envoy of it connects", async (t) => {
    const h = await harness(t);
    const snapshot = config({ port: 1 });
    h.ads.setSnapshot(NODE, snapshot);
    assert.deepEqual(h.ads.status()[NODE], { sidecar: NODE, connected: 0, snapshot: snapshotVersions(snapshot), types: {} });
  });

  it('holds a response back while the budget of bytes in flight is spent, and sends it once the other is answered', async (t) => {
    const h = await harness(t, { maxBytesInFlight: 1 });
    h.ads.setSnapshot(NODE, config({ port: 1 }));
    const first = h.envoy();
    first.subscribe(CDS);
    const response = await first.next();
    const second = h.envoy();
    second.subscribe(CDS);
    await assert.rejects(second.next(300), /no DiscoveryResponse/);
    first.ack(response);
    assert.equal((await second.next()).type_url, CDS);
  });

  it('lets an Envoy that never answers hold the budget for a while only', async (t) => {
    const h = await harness(t, { maxBytesInFlight: 1 });
    h.ads.setSnapshot(NODE, config({ port: 1 }));
    const stuck = h.envoy();
    stuck.subscribe(CDS);
    await stuck.next();
    const other = h.envoy();
    other.subscribe(CDS);
    // A bound on a hang, not a figure: the hold is BUDGET_HOLD_MS.
    assert.equal((await other.next(BUDGET_HOLD_MS + 3000)).type_url, CDS);
  });

  it('ignores a request whose nonce is not the latest sent for its type', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, config({ extraCluster: false }));
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    const first = await envoy.next();
    envoy.ack(first);
    const changed = config({ extraCluster: true });
    h.ads.setSnapshot(NODE, changed);
    const second = await envoy.next();
    // A late NACK of the superseded response: must change nothing.
    envoy.nack(first, 'late complaint about an old response');
    await envoy.nothingFor(300);
    assert.equal(h.ads.status()[NODE]?.types[CDS]?.lastNack, undefined);
    assert.equal(h.nacks, 0);
    envoy.ack(second);
    await waitForAck(h.ads, NODE, CDS, changed.types[CDS].version, 3000);
  });

  it('sends CDS and EDS first and LDS and RDS only after they are ACKed', async (t) => {
    const h = await harness(t);
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    envoy.subscribe(EDS, ['backend']);
    envoy.subscribe(LDS);
    envoy.subscribe(RDS, ['ingress']);
    await envoy.nothingFor(100);
    h.ads.setSnapshot(NODE, config());
    const cds = await envoy.next();
    const eds = await envoy.next();
    assert.deepEqual([cds.type_url, eds.type_url], [CDS, EDS]);
    await envoy.nothingFor(300);
    envoy.ack(cds);
    await envoy.nothingFor(100);
    envoy.ack(eds, ['backend']);
    const lds = await envoy.next();
    const rds = await envoy.next();
    assert.deepEqual([lds.type_url, rds.type_url], [LDS, RDS]);
  });

  it('sends filter configurations (ECDS) only after the listener and routes of the same change are ACKed', async (t) => {
    const h = await harness(t);
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    envoy.subscribe(EDS, ['backend']);
    envoy.subscribe(LDS);
    envoy.subscribe(RDS, ['ingress']);
    envoy.subscribe(ECDS, ['document']);
    h.ads.setSnapshot(NODE, config());
    envoy.ack(await envoy.next());
    envoy.ack(await envoy.next(), ['backend']);
    const lds = await envoy.next();
    const rds = await envoy.next();
    assert.deepEqual([lds.type_url, rds.type_url], [LDS, RDS]);
    await envoy.nothingFor(200);
    envoy.ack(lds);
    envoy.ack(rds, ['ingress']);
    const ecds = await envoy.next();
    assert.equal(ecds.type_url, ECDS);
    assert.deepEqual(names(ecds), ['document']);
    envoy.ack(ecds, ['document']);
    // A new document with new routes: the routes first, again.
    h.ads.setSnapshot(NODE, config({ routeCluster: 'other', extraCluster: true, filterHeader: 'x-other' }));
    const cds = await envoy.next();
    assert.equal(cds.type_url, CDS);
    envoy.ack(cds);
    const eds = await envoy.next();
    envoy.ack(eds, ['backend', 'other']);
    const moreEds = await envoy.next();
    envoy.ack(moreEds, ['backend', 'other']);
    const newRds = await envoy.next();
    assert.equal(newRds.type_url, RDS);
    await envoy.nothingFor(200);
    envoy.ack(newRds, ['ingress']);
    assert.equal((await envoy.next()).type_url, ECDS);
  });

  it('holds RDS until Envoy has asked for and ACKed the endpoints of a cluster it just accepted', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, config());
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    envoy.subscribe(EDS, ['backend']);
    envoy.subscribe(RDS, ['ingress']);
    envoy.ack(await envoy.next());
    envoy.ack(await envoy.next(), ['backend']);
    envoy.ack(await envoy.next(), ['ingress']);
    // New cluster "other" and a route to it.
    const next = config({ extraCluster: true, routeCluster: 'other' });
    h.ads.setSnapshot(NODE, next);
    const cds = await envoy.next();
    const eds = await envoy.next();
    assert.deepEqual([cds.type_url, eds.type_url], [CDS, EDS]);
    envoy.ack(cds);
    envoy.ack(eds, ['backend']);
    await envoy.nothingFor(300);
    // Envoy now asks for the new cluster's endpoints (same nonce: a subscription change).
    envoy.ack(eds, ['backend', 'other']);
    const moreEds = await envoy.next();
    assert.equal(moreEds.type_url, EDS);
    assert.deepEqual(names(moreEds), ['backend', 'other']);
    await envoy.nothingFor(200);
    envoy.ack(moreEds, ['backend', 'other']);
    const rds = await envoy.next();
    assert.equal(rds.type_url, RDS);
    assert.equal(rds.version_info, next.types[RDS].version);
  });

  it('removes a cluster only after the routes that stopped using it were ACKed (no "cluster not found" in between)', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, config({ extraCluster: true, routeCluster: 'other' }));
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    envoy.subscribe(EDS, ['backend', 'other']);
    envoy.subscribe(RDS, ['ingress']);
    envoy.ack(await envoy.next());
    envoy.ack(await envoy.next(), ['backend', 'other']);
    envoy.ack(await envoy.next(), ['ingress']);
    // The route moves back to "backend" and "other" leaves the snapshot.
    const next = config({ routeCluster: 'backend' });
    h.ads.setSnapshot(NODE, next);
    const keeping = await envoy.next();
    assert.equal(keeping.type_url, CDS);
    assert.deepEqual(names(keeping).sort(), ['backend', 'other'], 'the routes Envoy runs still name "other"');
    assert.notEqual(keeping.version_info, next.types[CDS].version);
    envoy.ack(keeping);
    const eds = await envoy.next();
    assert.equal(eds.type_url, EDS);
    envoy.ack(eds, ['backend', 'other']);
    const rds = await envoy.next();
    assert.equal(rds.type_url, RDS);
    assert.equal(rds.version_info, next.types[RDS].version);
    await envoy.nothingFor(200);
    envoy.ack(rds, ['ingress']);
    const cds = await envoy.next();
    assert.equal(cds.type_url, CDS);
    assert.deepEqual(names(cds), ['backend']);
    assert.equal(cds.version_info, next.types[CDS].version);
    envoy.ack(cds);
    await waitForAck(h.ads, NODE, CDS, next.types[CDS].version, 3000);
  });

  it('holds LDS and RDS back when CDS is not answered within the ordering timeout, and counts the wait once', async (t) => {
    const h = await harness(t, { orderingTimeoutMs: 300 });
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    envoy.subscribe(LDS);
    h.ads.setSnapshot(NODE, config());
    assert.equal((await envoy.next()).type_url, CDS);
    await envoy.nothingFor(900);
    assert.deepEqual(h.heldBack, [LDS]);
  });

  it('answers EDS and RDS with the requested names only, or all when none are named', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, config({ extraCluster: true }));
    const envoy = h.envoy();
    envoy.subscribe(RDS, ['ingress']);
    const named = await envoy.next();
    assert.deepEqual(names(named), ['ingress']);
    envoy.subscribe(EDS);
    const all = await envoy.next();
    assert.deepEqual(names(all), ['backend', 'other']);
  });

  it('sends again at the same version when Envoy subscribes to more names', async (t) => {
    const h = await harness(t);
    const snapshot = config({ extraCluster: true });
    h.ads.setSnapshot(NODE, snapshot);
    const envoy = h.envoy();
    envoy.subscribe(EDS, ['backend']);
    const first = await envoy.next();
    assert.deepEqual(names(first), ['backend']);
    envoy.ack(first, ['backend', 'other']);
    const second = await envoy.next();
    assert.equal(second.version_info, snapshot.types[EDS].version);
    assert.deepEqual(names(second), ['backend', 'other']);
  });

  it('keeps a node that connected before its snapshot waiting, then answers it', async (t) => {
    const h = await harness(t);
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    await envoy.nothingFor(300);
    const snapshot = config();
    h.ads.setSnapshot(NODE, snapshot);
    assert.equal((await envoy.next()).version_info, snapshot.types[CDS].version);
  });

  it('gives a reconnecting Envoy the current snapshot even if it reports that version', async (t) => {
    const h = await harness(t);
    const snapshot = config();
    h.ads.setSnapshot(NODE, snapshot);
    const first = h.envoy();
    first.subscribe(CDS);
    first.ack(await first.next());
    first.close();
    const again = h.envoy();
    again.subscribe(CDS, [], snapshot.types[CDS].version);
    const response = await again.next();
    assert.equal(response.version_info, snapshot.types[CDS].version);
    assert.deepEqual(names(response), ['backend']);
  });

  it('gives the startup snapshot to an Envoy that runs nothing yet, while the node has no snapshot', async (t) => {
    const h = await harness(t);
    const startup = config({ extraCluster: true });
    h.ads.setStartupSnapshot(NODE, startup);
    const fresh = h.envoy();
    fresh.subscribe(CDS);
    assert.equal((await fresh.next()).version_info, startup.types[CDS].version);
  });

  it('keeps an Envoy that already runs a config waiting instead of sending it the startup snapshot', async (t) => {
    const h = await harness(t);
    h.ads.setStartupSnapshot(NODE, config({ extraCluster: true }));
    const running = h.envoy();
    running.subscribe(CDS, [], 'a-version-from-before');
    await running.nothingFor(300);
    const synced = config();
    h.ads.setSnapshot(NODE, synced);
    assert.equal((await running.next()).version_info, synced.types[CDS].version);
  });

  it('replaces the startup snapshot with the node snapshot once there is one', async (t) => {
    const h = await harness(t);
    const startup = config({ extraCluster: true });
    h.ads.setStartupSnapshot(NODE, startup);
    const fresh = h.envoy();
    fresh.subscribe(CDS);
    fresh.ack(await fresh.next());
    const synced = config();
    h.ads.setSnapshot(NODE, synced);
    const pushed = await fresh.next();
    assert.equal(pushed.version_info, synced.types[CDS].version);
    assert.deepEqual(names(pushed), ['backend']);
  });

  it('refuses a stream whose first request has no node id', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, config());
    const anonymous = new FakeEnvoy(h.address, null);
    t.after(() => anonymous.close());
    anonymous.subscribe(CDS);
    const err = await anonymous.failure();
    assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
    assert.match(err.details, /node\.id/);
  });

  it('survives garbage bytes on its socket and keeps serving', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, config());
    await sendGarbage(h.path);
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    assert.equal((await envoy.next()).type_url, CDS);
  });

  it('waitForAck rejects when Envoy NACKs the awaited version', async (t) => {
    const h = await harness(t);
    const snapshot = config();
    h.ads.setSnapshot(NODE, snapshot);
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    const waiting = waitForAck(h.ads, NODE, CDS, snapshot.types[CDS].version, 3000);
    envoy.nack(await envoy.next(), 'no');
    await assert.rejects(waiting, (err: unknown) => err instanceof NackError && err.nack.message === 'no');
  });

  it('keeps the last status of a node after its stream closes', async (t) => {
    const h = await harness(t);
    const snapshot = config();
    h.ads.setSnapshot(NODE, snapshot);
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    envoy.ack(await envoy.next());
    await waitForAck(h.ads, NODE, CDS, snapshot.types[CDS].version, 3000);
    const gone = new Promise((resolve) => h.ads.once('disconnect', resolve));
    envoy.close();
    await gone;
    const status = h.ads.status()[NODE];
    assert.equal(status?.connected, 0);
    assert.equal(status?.types[CDS]?.versionAcked, snapshot.types[CDS].version);
    assert.equal(hasAcked(h.ads, NODE, CDS, snapshot.types[CDS].version), false);
  });

  it('closeStreams ends open streams with UNAVAILABLE', async (t) => {
    const h = await harness(t);
    h.ads.setSnapshot(NODE, config());
    const envoy = h.envoy();
    envoy.subscribe(CDS);
    await envoy.next();
    h.ads.closeStreams();
    const err = await envoy.failure();
    assert.equal(err.code, grpc.status.UNAVAILABLE);
    assert.equal(h.ads.status()[NODE]?.connected, 0);
  });
});
