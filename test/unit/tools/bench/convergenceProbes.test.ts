import assert from 'node:assert/strict';
import { test } from 'node:test';
import { statusShows } from '../../../../src/tools/bench/convergenceBench.js';
import {
  type ConvergenceSample,
  convergedAt,
  convergenceFigures,
  convergenceSummary,
  distribution,
  planChange,
  settledAt,
  type Probe,
  probeGapP50Ms,
  probeIdsInAuditLines,
} from '../../../../src/tools/bench/convergenceProbes.js';
import { fanoutFigures, fanoutSummary, type FanoutFigures, type FanoutSample } from '../../../../src/tools/bench/fanout.js';

/** Probes every 5 ms from `from`, each answered 2 ms later; `reached(t)` says whether the changed apiserver had it. */
function probes(from: number, to: number, reached: (t: number) => boolean, status = (_t: number) => 200): Probe[] {
  const out: Probe[] = [];
  for (let t = from; t <= to; t += 5) out.push({ sentAt: t, receivedAt: t + 2, status: status(t), reached: reached(t) });
  return out;
}

test('added: done at the answer to the first probe the changed apiserver served with 200', () => {
  const p = probes(
    0,
    400,
    (t) => t >= 120,
    (t) => (t >= 120 ? 200 : 503),
  );
  assert.equal(convergedAt('added', p, 100, 1000), 122);
  // Reached but not served (a 503 while it starts): not yet.
  assert.equal(
    convergedAt(
      'added',
      probes(
        0,
        400,
        () => true,
        () => 503,
      ),
      100,
      1000,
    ),
    undefined,
  );
  // Served before the clock started: no time at all.
  assert.equal(convergedAt('added', p, 300, 1000), 300);
  // Probes still in flight do not count.
  assert.equal(convergedAt('added', [{ sentAt: 150, status: 0, reached: true }], 100, 1000), undefined);
});

test('removed and drained: done at the first answered probe after the last one that reached it, once stable', () => {
  const p = probes(0, 1500, (t) => t <= 200);
  assert.equal(convergedAt('removed', p, 100, 1000), 205);
  assert.equal(convergedAt('drained', p, 100, 1000), 205);
  // Probes from 0 to `to`; the clock at 100, stable after 1000 ms.
  const removedAt = (to: number, reached: (t: number) => boolean, status?: (t: number) => number) =>
    convergedAt('removed', probes(0, to, reached, status), 100, 1000);
  // Not stable long enough yet.
  assert.equal(
    removedAt(1000, (t) => t <= 200),
    undefined,
  );
  // One probe reaching it later moves the point on.
  assert.equal(
    removedAt(2500, (t) => t <= 200 || t === 600),
    605,
  );
  // Unanswered probes (status 0) are not the point of convergence.
  assert.equal(
    removedAt(
      1500,
      (t) => t <= 200,
      (t) => (t === 205 ? 0 : 404),
    ),
    210,
  );
  // None reached it after the clock: done at the clock, but only once stable from the clock on.
  assert.equal(
    removedAt(1050, () => false),
    undefined,
  );
  assert.equal(
    removedAt(1100, () => false),
    100,
  );
});

test('settled: the answers through the proxy path alike from then on, stable', () => {
  // 503 until 600, then 404 (none reaching the changed apiserver meanwhile).
  const p = probes(
    0,
    1700,
    () => false,
    (t) => (t < 600 ? 503 : 404),
  );
  assert.deepEqual(settledAt(p, 100, 1000), { at: 600, status: 404 });
  assert.equal(
    settledAt(
      probes(
        0,
        1500,
        () => false,
        (t) => (t < 600 ? 503 : 404),
      ),
      100,
      1000,
    ),
    undefined,
  );
  // Alike from before the clock: settled at the clock.
  assert.deepEqual(
    settledAt(
      probes(
        0,
        1200,
        () => false,
        () => 200,
      ),
      100,
      1000,
    ),
    { at: 100, status: 200 },
  );
  assert.equal(settledAt([], 100, 1000), undefined);
});

test('audit lines: probe ids from the requestURI; a line cut short is skipped', () => {
  const line = (uri: string) => JSON.stringify({ kind: 'Event', requestURI: uri, userAgent: 'x' });
  const text = [
    line('/apis/storagemigration.k8s.io/v1/storageversionmigrations?mvproxy-probe=12-1-7'),
    line('/api/v1/namespaces/default/configmaps/bench?limit=5&mvproxy-probe=12-1-8'),
    line('/apis/coordination.k8s.io/v1/leases'),
    '{"kind":"Event","requestURI":"/apis?mvproxy-probe=12-1-9',
  ].join('\n');
  assert.deepEqual(probeIdsInAuditLines(text, 'mvproxy-probe'), ['12-1-7', '12-1-8']);
});

test('figures: p50, p90 and max by nearest rank; never a p99 of a few samples', () => {
  const d = distribution(Array.from({ length: 30 }, (_, i) => 30 - i));
  assert.deepEqual(d, { samples: 30, p50Ms: 15, p90Ms: 27, maxMs: 30 });
  assert.equal(
    Object.keys(d).some((k) => k.includes('99')),
    false,
  );
  assert.equal(distribution([]).samples, 0);
});

test('convergence figures per side and kind, with the control plane beside mvproxy, and the flat summary', () => {
  const s = (side: string, kind: ConvergenceSample['kind'], ms: number, extra: Partial<ConvergenceSample> = {}): ConvergenceSample => ({
    side,
    kind,
    ms,
    capped: false,
    probes: 100,
    unanswered: 0,
    probeGapMs: 3.2,
    ...extra,
  });
  const samples = [
    s('mvproxy', 'added', 10, { controlPlaneMs: 100 }),
    s('mvproxy', 'added', 20, { controlPlaneMs: 120 }),
    s('mvproxy', 'drained', 40, { controlPlaneMs: 30 }),
    s('upstream', 'added', 200),
    s('upstream', 'added', 60000, { capped: true }),
    s('upstream', 'removed', 300, { probeGapMs: 4 }),
  ];
  const f = convergenceFigures(samples);
  assert.deepEqual(f['mvproxy']?.added, {
    samples: 2,
    p50Ms: 10,
    p90Ms: 20,
    maxMs: 20,
    capped: 0,
    controlPlane: { samples: 2, p50Ms: 100, p90Ms: 120, maxMs: 120 },
  });
  assert.equal(f['mvproxy']?.removed, undefined);
  assert.equal(f['upstream']?.added?.capped, 1);
  assert.equal(f['upstream']?.added?.controlPlane, undefined);
  const summary = convergenceSummary(f);
  assert.equal(summary['convergence_added_max_ms'], 20);
  assert.equal(summary['convergence_added_control_plane_p50_ms'], 100);
  assert.equal(summary['convergence_drained_p90_ms'], 40);
  assert.equal(summary['convergence_added_max_ms_upstream'], 60000);
  assert.equal(summary['convergence_added_capped_samples_upstream'], 1);
  assert.equal(summary['convergence_removed_samples_upstream'], 1);
  assert.equal(summary['convergence_drained_p50_ms_upstream'], undefined);
  assert.equal(
    Object.keys(summary).some((k) => k.includes('p99')),
    false,
  );
  assert.equal(probeGapP50Ms(samples), 3.2);
});

test('control plane status: the change planned on the right sidecar and ACKed everywhere', () => {
  const status = (routes: Array<{ group: string; resource: string; action: { kind: string; peers?: string[] } }>, acked = true) => ({
    plans: [{ node: 'kas-a', entries: routes.map((r) => ({ match: { kind: 'resource', group: r.group, resource: r.resource }, destination: r.action })) }],
    xds: { 'kas-a': { connected: 1, types: { rds: { versionSent: '2', versionAcked: acked ? '2' : '1' } } } },
  });
  const svm = { group: 'storagemigration.k8s.io', resource: 'storageversionmigrations' };
  assert.equal(statusShows(status([{ ...svm, action: { kind: 'peers', peers: ['kas-b'] } }]), 'added', 'kas-a', 'kas-b', svm.group), true);
  assert.equal(statusShows(status([{ ...svm, action: { kind: 'peers', peers: ['kas-b'] } }], false), 'added', 'kas-a', 'kas-b', svm.group), false);
  assert.equal(statusShows(status([{ ...svm, action: { kind: 'unavailable' } }]), 'added', 'kas-a', 'kas-b', svm.group), false);
  assert.equal(statusShows(status([{ ...svm, action: { kind: 'unavailable' } }]), 'removed', 'kas-a', 'kas-b', svm.group), false);
  assert.equal(statusShows(status([]), 'removed', 'kas-a', 'kas-b', svm.group), true);
  const cm = { group: '', resource: 'configmaps' };
  assert.equal(statusShows(status([{ ...cm, action: { kind: 'peers', peers: ['kas-b'] } }]), 'drained', 'kas-a', 'kas-a', svm.group), true);
  assert.equal(statusShows(status([]), 'drained', 'kas-a', 'kas-a', svm.group), false);
});

test('fan-out: p50, p90 and max over the changes, named so in the summary', () => {
  const sample = (ms: number, spreadMs: number): FanoutSample => ({
    resourceOff: false,
    withCrds: false,
    ms,
    spreadMs,
    nodesChanged: 2,
    early: 0,
    reconnects: 0,
    controlPlaneCpuMs: 0,
    loadAverage: [],
  });
  const figures = fanoutFigures(Array.from({ length: 30 }, (_, i) => sample(i + 1, 1)));
  assert.deepEqual(figures.ms, { samples: 30, p50Ms: 15, p90Ms: 27, maxMs: 30 });
  const summary = fanoutSummary({
    ...figures,
    nodes: 200,
    realSidecars: [],
    crds: 0,
    crdGroups: 1,
    largestResponseBytes: {},
    sidecarMemory: {},
    memoryByPhase: {},
    samples: [],
    peakRssMb: 1,
    rssMb: 1,
    floorRssMb: 1,
    method: '',
  } satisfies FanoutFigures);
  assert.equal(summary['fanout_200_nodes_samples'], 30);
  assert.equal(summary['fanout_200_nodes_max_ms'], 30);
  assert.equal(summary['fanout_200_nodes_p90_ms'], 27);
  assert.equal(
    Object.keys(summary).some((k) => k.includes('p99')),
    false,
  );
});

test("the journal's plan change: the first of the probed sidecar from the given moment on", () => {
  const events = [
    { at: 1000, kind: 'plan-changed', subject: 'kas-a' },
    { at: 2000, kind: 'apiserver-arrived', subject: 'kas-b' },
    { at: 2100, kind: 'plan-changed', subject: 'kas-b' },
    { at: 2300, kind: 'plan-changed', subject: 'kas-a' },
    { at: 2200, kind: 'plan-changed', subject: 'kas-a' },
  ];
  assert.equal(planChange(events, 'kas-a', 1500), 2200);
  assert.equal(planChange(events, 'kas-b', 1500), 2100);
  assert.equal(planChange(events, 'kas-a', 2400), undefined);
  // The last before the status confirmed the change: the plan change it confirmed.
  assert.equal(planChange(events, 'kas-a', 1500, 2350), 2300);
  assert.equal(planChange(events, 'kas-a', 1500, 2250), 2200);
  assert.equal(planChange(events, 'kas-a', 1500, 2100), 2200);
  const summary = convergenceSummary(
    convergenceFigures([{ side: 'mvproxy', kind: 'removed', ms: 5, capped: false, probes: 1, unanswered: 0, controlPlanePlannedMs: 90 }]),
  );
  assert.equal(summary['convergence_removed_control_plane_planned_max_ms'], 90);
  assert.equal(summary['convergence_removed_control_plane_p50_ms'], undefined);
});
