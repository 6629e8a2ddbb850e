// The sync record (sources/syncRecord.ts) and the reporter that writes this
// replica's entries into it (serve/syncReporter.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { TYPE_URL } from '../../../src/xds/snapshot.js';
import type { SidecarSyncReport } from '../../../src/model/syncReport.js';
import { decodeSyncReport, encodeSyncReport, syncReports } from '../../../src/sources/syncRecord.js';
import { SyncReporter, localAcks } from '../../../src/serve/syncReporter.js';

const silent = pino({ level: 'silent' });
const report: SidecarSyncReport = { replica: 'mvproxy-kas-b', acked: { lds: 'v1', rds: 'v2' }, at: '2026-11-30T22:00:00.000Z' };

describe('sync record entries', () => {
  it('an entry reads back as written', () => {
    assert.deepEqual(decodeSyncReport(encodeSyncReport(report)), report);
  });

  it('an entry that is not JSON, lacks a field or has a non-string version is ignored whole', () => {
    for (const value of ['not json', '{"replica":"r","at":"t"}', '{"replica":"r","at":"t","acked":{"lds":1}}', '["r"]', 'null']) {
      assert.equal(decodeSyncReport(value), undefined, value);
    }
  });

  it('the record gives every readable entry by sidecar and skips the others', () => {
    const reports = syncReports({ 'kas-b': encodeSyncReport(report), 'kas-a': 'garbage' });
    assert.deepEqual([...reports.keys()], ['kas-b']);
  });
});

describe('localAcks', () => {
  const acked = (version: string) => ({ versionAcked: version, subscribed: [] });
  it('gives the ACKed versions of each connected sidecar, not those of other Envoys running its config or of closed streams', () => {
    const acks = localAcks({
      'kas-a': { sidecar: 'kas-a', connected: 1, types: { [TYPE_URL.route]: acked('r1') } },
      'edge-1': { sidecar: 'kas-a', connected: 1, types: { [TYPE_URL.route]: acked('r0') } },
      'kas-b': { sidecar: 'kas-b', connected: 0, types: { [TYPE_URL.route]: acked('r1') } },
    });
    assert.deepEqual([...acks.entries()], [['kas-a', { [TYPE_URL.route]: 'r1' }]]);
  });
});

/** A reporter over a settable view of this replica's sidecars, recording every write. */
function harness(opts: { fail?: number } = {}) {
  let acks = new Map<string, Record<string, string>>();
  const writes: Record<string, SidecarSyncReport>[] = [];
  let failures = opts.fail ?? 0;
  const reporter = new SyncReporter({
    replica: 'mvproxy-kas-a',
    localAcks: () => acks,
    write: async (entries) => {
      if (failures > 0) {
        failures--;
        throw new Error('apiserver unreachable');
      }
      writes.push(entries);
    },
    logger: silent,
    now: () => Date.parse('2026-11-30T22:00:00.000Z'),
    batchMs: 1,
    retryMs: 1,
  });
  return {
    reporter,
    writes,
    setAcks: (next: Record<string, Record<string, string>>) => {
      acks = new Map(Object.entries(next));
    },
  };
}

const settle = () => new Promise((r) => setTimeout(r, 30));

describe('SyncReporter', () => {
  it('writes the ACKed versions of the sidecars streaming here, under this replica name', async () => {
    const h = harness();
    h.setAcks({ 'kas-a': { lds: 'v1' } });
    h.reporter.poke();
    await settle();
    assert.deepEqual(h.writes, [{ 'kas-a': { replica: 'mvproxy-kas-a', acked: { lds: 'v1' }, at: '2026-11-30T22:00:00.000Z' } }]);
  });

  it('gathers a burst of ACKs into one write', async () => {
    const h = harness();
    h.setAcks({ 'kas-a': { lds: 'v1' }, 'kas-b': { lds: 'v1' } });
    h.reporter.poke();
    h.reporter.poke();
    h.reporter.poke();
    await settle();
    assert.equal(h.writes.length, 1);
    assert.deepEqual(Object.keys(h.writes[0] ?? {}), ['kas-a', 'kas-b']);
  });

  it('writes only the entries that changed since its last write', async () => {
    const h = harness();
    h.setAcks({ 'kas-a': { lds: 'v1' }, 'kas-b': { lds: 'v1' } });
    h.reporter.poke();
    await settle();
    h.setAcks({ 'kas-a': { lds: 'v2' }, 'kas-b': { lds: 'v1' } });
    h.reporter.poke();
    await settle();
    assert.deepEqual(Object.keys(h.writes[1] ?? {}), ['kas-a']);
  });

  it('writes an entry again once another replica has written it (the sidecar came back here)', async () => {
    const h = harness();
    h.setAcks({ 'kas-a': { lds: 'v1' } });
    h.reporter.poke();
    await settle();
    h.reporter.observed(new Map([['kas-a', { ...report, replica: 'mvproxy-kas-b' }]]));
    await settle();
    assert.equal(h.writes.length, 2);
    assert.equal(h.writes[1]?.['kas-a']?.replica, 'mvproxy-kas-a');
  });

  it('retries a failed write until it succeeds', async () => {
    const h = harness({ fail: 2 });
    h.setAcks({ 'kas-a': { lds: 'v1' } });
    h.reporter.poke();
    await settle();
    assert.deepEqual(Object.keys(h.writes[0] ?? {}), ['kas-a']);
  });

  it('writes nothing after stop', async () => {
    const h = harness();
    h.setAcks({ 'kas-a': { lds: 'v1' } });
    h.reporter.stop();
    h.reporter.poke();
    await settle();
    assert.deepEqual(h.writes, []);
  });
});
