// Events derived from successive models and plans (src/model/events.ts, src/planner/planEvents.ts): what
// `mvproxy admin events` and the status page say changed, and why.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ClusterModel } from '../../../src/model/cluster.js';
import { drainEvents, modelEvents, servedSetChange, type StandingModel } from '../../../src/model/events.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import { planEvents } from '../../../src/planner/planEvents.js';
import { planSidecars } from '../../../src/planner/planner.js';
import { BATCH, CORE, GRACE_MS, NOW, model, plannerOptions, served } from '../../support/clusterModel.js';

const SVM = served('storagemigration.k8s.io', 'v1', 'storageversionmigrations');

/** The model with apiserver `name` changed by `change` (a copy; the original is untouched). */
function withApiserver(m: ClusterModel, name: string, change: (a: ClusterModel['apiservers'][number]) => void): ClusterModel {
  const copy = structuredClone(m);
  const a = copy.apiservers.find((x) => x.endpoint.name === name);
  assert.ok(a);
  change(a);
  return copy;
}

function versioned(m: ClusterModel, versions: Record<string, string>): ClusterModel {
  let out = m;
  for (const [name, version] of Object.entries(versions)) out = withApiserver(out, name, (a) => (a.version = version));
  return out;
}

/** A model with its apiservers' standings under the departed grace, as a reconcile hands them to the journal. */
function standing(m: ClusterModel): StandingModel {
  return { model: m, standings: apiserverStandings(m, GRACE_MS) };
}

function kinds(events: Array<{ kind: string; subject: string }>): string[] {
  return events.map((e) => `${e.kind} ${e.subject}`);
}

describe('modelEvents', () => {
  test('the first model announces every available apiserver with its version and what it serves', () => {
    const m = versioned(model({ a: { serves: CORE }, b: { serves: [...CORE, SVM] } }), { a: 'v1.36.3', b: 'v1.37.2' });
    const events = modelEvents(undefined, standing(m));
    assert.deepEqual(kinds(events), ['apiserver-arrived a', 'apiserver-arrived b']);
    assert.equal(events[1]?.message, 'available at v1.37.2, serving 3 resources');
    assert.equal(events[1]?.at, NOW);
  });

  test('nothing changed gives no events', () => {
    const m = model({ a: { serves: CORE }, b: { serves: BATCH } });
    assert.deepEqual(modelEvents(standing(m), standing(structuredClone(m))), []);
  });

  test('an apiserver whose lease is gone has left, and its resources answer 503 meanwhile', () => {
    const before = model({ a: { serves: CORE }, b: { serves: BATCH } });
    const after = model({ a: { serves: CORE }, b: { serves: BATCH, leaseGoneForMs: 1000 } });
    const events = modelEvents(standing(before), standing(after));
    assert.deepEqual(kinds(events), ['apiserver-left b']);
    assert.match(events[0]?.message ?? '', /lease gone.*503/);
  });

  test('an unreachable apiserver has left', () => {
    const before = model({ a: { serves: CORE } });
    const after = model({ a: { serves: CORE, reachable: false } });
    assert.match(modelEvents(standing(before), standing(after))[0]?.message ?? '', /^unreachable/);
  });

  test('an apiserver that comes back at another version says which it was', () => {
    const before = versioned(model({ a: { serves: CORE, reachable: false } }), { a: 'v1.36.3' });
    const after = versioned(model({ a: { serves: CORE } }), { a: 'v1.37.2' });
    assert.deepEqual(modelEvents(standing(before), standing(after)), [
      { at: NOW, kind: 'apiserver-arrived', subject: 'a', message: 'available at v1.37.2 (was v1.36.3), serving 2 resources' },
    ]);
  });

  test('a new lease holder at another version is a restart at that version', () => {
    const before = versioned(model({ a: { serves: CORE } }), { a: 'v1.36.3' });
    const after = withApiserver(versioned(before, { a: 'v1.37.2' }), 'a', (x) => {
      if (x.lease) x.lease.holderIdentity = 'a-2';
    });
    const events = modelEvents(standing(before), standing(after));
    assert.deepEqual(kinds(events), ['apiserver-restarted a']);
    assert.equal(events[0]?.message, 'restarted at v1.37.2 (was v1.36.3)');
  });

  test('a change of readiness is an event', () => {
    const before = withApiserver(model({ a: { serves: CORE } }), 'a', (x) => (x.ready = true));
    const after = withApiserver(before, 'a', (x) => (x.ready = false));
    assert.deepEqual(kinds(modelEvents(standing(before), standing(after))), ['apiserver-readiness a']);
  });

  test('a served-set change says what was added and removed, by group-version', () => {
    const before = model({ a: { serves: [...CORE, ...BATCH] } });
    const after = model({ a: { serves: [...CORE, SVM] } });
    const events = modelEvents(standing(before), standing(after));
    assert.deepEqual(kinds(events), ['served-set-changed a']);
    assert.equal(events[0]?.message, 'added storagemigration.k8s.io/v1 (storageversionmigrations); removed batch/v1 (cronjobs, jobs)');
  });

  test('a long served-set change is cut after three names, saying how many more', () => {
    const crds = Array.from({ length: 5 }, (_, i) => served(`g${i}.example.com`, 'v1', 'widgets'));
    assert.equal(
      servedSetChange(CORE, [...CORE, ...crds]),
      'added g0.example.com/v1 (widgets), g1.example.com/v1 (widgets), g2.example.com/v1 (widgets) and 2 more group-versions',
    );
  });
});

describe('planEvents', () => {
  test('each sidecar whose routes change gets one event with the new counts and routes', () => {
    const before = model({ a: { serves: CORE }, b: { serves: [...CORE, SVM] } });
    const after = model({ a: { serves: CORE }, b: { serves: [...CORE, SVM], reachable: false } });
    const plan = (m: ClusterModel) => planSidecars(m, plannerOptions(m));
    const events = planEvents(plan(before), plan(after), NOW);
    // b's own sidecar sends what b served to peers or 503 while b is down: its plan changes too.
    assert.deepEqual(kinds(events), ['plan-changed a', 'plan-changed b']);
    assert.equal(events[0]?.message, 'now 0 rerouted (-1), 1 unavailable (+1): storagemigration.k8s.io/v1 storageversionmigrations → 503');
  });

  test('unchanged plans give no events', () => {
    const m = model({ a: { serves: CORE }, b: { serves: [...CORE, SVM] } });
    const plans = planSidecars(m, plannerOptions(m));
    assert.deepEqual(planEvents(plans, structuredClone(plans), NOW), []);
  });
});

describe('drainEvents', () => {
  test('a drain and an undrain name the apiserver and who asked', () => {
    assert.deepEqual(
      drainEvents(new Set(['b']), new Set(['a']), NOW, () => 'asked through mvproxy admin on cp-1'),
      [
        { at: NOW, kind: 'drain', subject: 'a', message: 'drained: traffic moves off it (asked through mvproxy admin on cp-1)' },
        { at: NOW, kind: 'undrain', subject: 'b', message: 'drain ended (asked through mvproxy admin on cp-1)' },
      ],
    );
  });
});
