// Which sidecars and apiservers count as live for the `kubernetes` Service,
// as replicas agree on it without a leader (src/planner/publicationLiveness.ts),
// and the liveness record's entries (src/sources/livenessRecord.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LivenessLedger, LIVENESS_EXPIRY_MS, PROBE_INTERVAL_MS } from '../../../src/planner/publicationLiveness.js';
import { desiredPublication } from '../../../src/planner/publishedEndpoints.js';
import type { LivenessReport, PublishPlan } from '../../../src/model/publication.js';
import { decodeLivenessReport, encodeLivenessReport, livenessReports } from '../../../src/sources/livenessRecord.js';

const names = ['kas-a', 'kas-b'];
const entry = (replica: string, round: number, sidecars: Record<string, number>, incarnation = `${replica}-1`): LivenessReport => ({
  replica,
  incarnation,
  round,
  sidecars,
  apiservers: {},
});
const record = (...reports: LivenessReport[]) => new Map(reports.map((r) => [r.replica, r]));
const liveSidecars = (ledger: LivenessLedger, now: number) => [...ledger.live(names, now).sidecars].sort();

describe('liveness: one replica', () => {
  it("a sidecar is live until 15 s after this replica's own probe of it passed", () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.ownSuccess('sidecar', 'kas-a', 1000);
    assert.deepEqual(liveSidecars(ledger, 1000 + LIVENESS_EXPIRY_MS - 1), ['kas-a']);
    assert.deepEqual(liveSidecars(ledger, 1000 + LIVENESS_EXPIRY_MS), []);
  });

  it('an apiserver is ready on the same terms, separately from its sidecar', () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.ownSuccess('apiserver', 'kas-a', 0);
    assert.deepEqual(ledger.live(names, 1), { sidecars: new Set(), apiservers: new Set(['kas-a']) });
  });
});

describe('liveness: what other replicas observed', () => {
  it("another replica's entry changing a sidecar's value renews it, from when this replica saw the change", () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.observeRecord(record(entry('r2', 1, { 'kas-a': 1 })), 0);
    ledger.observeRecord(record(entry('r2', 2, { 'kas-a': 2 })), 40_000);
    assert.deepEqual(liveSidecars(ledger, 40_000 + LIVENESS_EXPIRY_MS - 1), ['kas-a']);
    assert.deepEqual(liveSidecars(ledger, 40_000 + LIVENESS_EXPIRY_MS), []);
  });

  it('a value seen for the first time is no renewal: nobody knows when it was written (a dead replica leaves its entry behind)', () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.observeRecord(record(entry('r2', 99, { 'kas-a': 99 })), 0);
    assert.deepEqual(liveSidecars(ledger, 1), []);
  });

  it("an entry whose round moves on without the sidecar's value changing renews nothing (that replica's probe failed)", () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.observeRecord(record(entry('r2', 1, { 'kas-a': 1 })), 0);
    ledger.observeRecord(record(entry('r2', 2, { 'kas-a': 1 })), 10_000);
    assert.deepEqual(liveSidecars(ledger, 10_001), []);
  });

  it('a restarted replica (a new incarnation) renews what it saw pass, even at the same round numbers', () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.observeRecord(record(entry('r2', 1, { 'kas-a': 1 }, 'old')), 0);
    ledger.observeRecord(record(entry('r2', 1, { 'kas-a': 1 }, 'new')), 5000);
    assert.deepEqual(liveSidecars(ledger, 5001), ['kas-a']);
  });

  it('a replica whose entry is removed from the record stops counting at once', () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.observeRecord(record(entry('r2', 1, { 'kas-a': 1 })), 0);
    ledger.observeRecord(record(entry('r2', 2, { 'kas-a': 2 })), 10_000);
    ledger.observeRecord(record(), 11_000);
    assert.deepEqual(liveSidecars(ledger, 11_001), []);
  });

  it('names the replicas whose passing probe it observed within the expiry, this one included', () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.ownSuccess('sidecar', 'kas-a', 9000);
    ledger.observeRecord(record(entry('r3', 1, { 'kas-a': 1 }), entry('r2', 1, { 'kas-a': 1 })), 0);
    ledger.observeRecord(record(entry('r3', 2, { 'kas-a': 2 }), entry('r2', 1, { 'kas-a': 1 })), 10_000);
    assert.deepEqual(ledger.witnesses('sidecar', 'kas-a', 10_000), ['r1', 'r3']);
  });
});

describe('liveness: when a replica may write', () => {
  it('not before the record was read, nor before it was watched for one whole expiry period', () => {
    const ledger = new LivenessLedger('r1', 'i1');
    assert.equal(ledger.viewReadiness(0).ready, false);
    ledger.observeRecord(record(entry('r1', 1, {}, 'i1')), 0);
    assert.equal(ledger.viewReadiness(LIVENESS_EXPIRY_MS - 1).ready, false);
    assert.equal(ledger.viewReadiness(LIVENESS_EXPIRY_MS).ready, false, 'its own entry came back too long ago');
    ledger.observeRecord(record(entry('r1', 2, {}, 'i1')), 10_000);
    assert.equal(ledger.viewReadiness(LIVENESS_EXPIRY_MS).ready, true);
  });

  it("not while its own entry has not come back through the record's watch within one expiry (a stalled watch hides renewals)", () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.observeRecord(record(entry('r1', 1, {}, 'i1')), 0);
    ledger.observeRecord(record(entry('r1', 2, {}, 'i1')), 10_000);
    assert.equal(ledger.viewReadiness(24_999).ready, true);
    assert.deepEqual(ledger.viewReadiness(25_000), {
      ready: false,
      why: "this replica's own liveness entry has not come back through the record's watch lately",
    });
  });

  it("an entry of this replica's previous process is not its own coming back", () => {
    const ledger = new LivenessLedger('r1', 'i2');
    ledger.observeRecord(record(entry('r1', 7, {}, 'i1')), 0);
    assert.equal(ledger.viewReadiness(LIVENESS_EXPIRY_MS).ready, false);
  });
});

describe('liveness: two replicas that disagree', () => {
  it('a sidecar only one replica can reach stays live at both, and the publication never flaps', () => {
    // r1 cannot reach kas-b's sidecar, r2 can; both reach kas-a's. Rounds every
    // 10 s, r2's a few seconds out of phase with jitter, the record's watch 300 ms late.
    const plan: PublishPlan = {
      family: 'IPv4',
      sidecarPort: 6443,
      targets: names.map((name, i) => ({ name, sidecarIp: `192.0.2.${i + 1}` })),
    };
    const replicas = [
      { name: 'r1', reach: ['kas-a'], phase: 0, round: 0, ledger: new LivenessLedger('r1', 'r1'), last: {} as Record<string, number> },
      { name: 'r2', reach: ['kas-a', 'kas-b'], phase: 3700, round: 0, ledger: new LivenessLedger('r2', 'r2'), last: {} as Record<string, number> },
    ];
    const entries = new Map<string, LivenessReport>();
    const deliveries: Array<{ at: number; snapshot: Map<string, LivenessReport> }> = [];
    const seen = new Set<string>();
    for (let now = 0; now <= 600_000; now += 100) {
      for (const d of deliveries.filter((x) => x.at === now)) for (const r of replicas) r.ledger.observeRecord(d.snapshot, now);
      for (const r of replicas) {
        const jitter = (r.round * 7919) % 1900;
        if (now !== r.phase + r.round * PROBE_INTERVAL_MS + jitter - (jitter % 100)) continue;
        r.round++;
        for (const s of r.reach) {
          r.ledger.ownSuccess('sidecar', s, now);
          r.last[s] = r.round;
        }
        entries.set(r.name, { replica: r.name, incarnation: r.name, round: r.round, sidecars: { ...r.last }, apiservers: {} });
        deliveries.push({ at: now + 300, snapshot: new Map(entries) });
      }
      if (now < 30_000) continue;
      for (const r of replicas) {
        assert.deepEqual(r.ledger.viewReadiness(now), { ready: true }, `${r.name} at ${now}`);
        seen.add(JSON.stringify(desiredPublication(plan, r.ledger.live(names, now))));
      }
    }
    assert.deepEqual([...seen], [JSON.stringify({ viaSidecar: ['kas-a', 'kas-b'], direct: [] })]);
  });
});

describe('liveness record entries', () => {
  const report: LivenessReport = { replica: 'mvproxy-cp-1', incarnation: 'abc', round: 7, sidecars: { 'cp-1': 7 }, apiservers: { 'cp-1': 6 } };

  it('an entry reads back as written', () => {
    assert.deepEqual(decodeLivenessReport(encodeLivenessReport(report)), report);
  });

  it('an entry that is not JSON, lacks a field or has a value that is not a whole number is ignored whole', () => {
    for (const value of ['nope', '{}', JSON.stringify({ ...report, round: '7' }), JSON.stringify({ ...report, sidecars: { 'cp-1': 1.5 } }), 'null']) {
      assert.equal(decodeLivenessReport(value), undefined, value);
    }
  });

  it('an entry is read only under the key of the replica it names (a replica writes only its own key)', () => {
    const reports = livenessReports({ 'mvproxy-cp-1': encodeLivenessReport(report), 'mvproxy-cp-2': encodeLivenessReport(report) });
    assert.deepEqual([...reports.keys()], ['mvproxy-cp-1']);
  });
});

describe('liveness: replicas whose configurations differ', () => {
  const withPlan = (replica: string, round: number, plan?: string): LivenessReport => ({ ...entry(replica, round, {}), ...(plan ? { plan } : {}) });

  it('a live replica naming another plan disagrees, once its entry is seen renewed', () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.observeRecord(record(withPlan('r2', 1, 'other')), 0);
    assert.deepEqual(ledger.planDisagreements('mine', 0), [], 'a first sighting: nobody knows when it was written');
    ledger.observeRecord(record(withPlan('r2', 2, 'other')), 10_000);
    assert.deepEqual(ledger.planDisagreements('mine', 10_000), [{ replica: 'r2', plan: 'other' }]);
  });

  it('a replica gone (its entry not renewed for 15 s) disagrees with nobody', () => {
    const ledger = new LivenessLedger('r1', 'i1');
    ledger.observeRecord(record(withPlan('r2', 1, 'other')), 0);
    ledger.observeRecord(record(withPlan('r2', 2, 'other')), 10_000);
    assert.deepEqual(ledger.planDisagreements('mine', 10_000 + LIVENESS_EXPIRY_MS), []);
  });

  it('the same plan, or an entry naming none (an older replica), is no disagreement', () => {
    const ledger = new LivenessLedger('r1', 'i1');
    for (const [round, at] of [
      [1, 0],
      [2, 10_000],
    ] as const)
      ledger.observeRecord(record(withPlan('r2', round, 'mine'), withPlan('r3', round)), at);
    assert.deepEqual(ledger.planDisagreements('mine', 10_000), []);
  });

  it("an entry's plan digest is read back from the record", () => {
    assert.equal(decodeLivenessReport(encodeLivenessReport(withPlan('r2', 1, 'abc')))?.plan, 'abc');
    assert.equal(decodeLivenessReport(encodeLivenessReport(withPlan('r2', 1)))?.plan, undefined);
  });
});
