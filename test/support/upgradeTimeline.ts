// Served sets and a timeline for the upgrade test's unit tests: what a
// 1.36 and a 1.37 apiserver were observed serving, and a small history.
import type { ResourceKey } from '../../src/tools/upgradeTest/observations.js';
import type { ModeObservations } from '../../src/tools/upgradeTest/outcomes.js';
import { Timeline, type ServedSet } from '../../src/tools/upgradeTest/timeline.js';

const served = (resources: ResourceKey[], groups: string[]): ServedSet => ({ resources: new Set(resources), groups: new Set(groups) });
const BASE: ResourceKey[] = ['configmaps', 'deployments', 'jobs', 'widgets'];
const BASE_GROUPS = ['apps', 'batch', 'upgradetest.mvproxy.dev'];

/** What a v1.36.3 apiserver's own discovery lists of the test's resources. */
export const OLD_SERVED = served(BASE, BASE_GROUPS);
/** What a v1.37.2 apiserver's own discovery lists: storagemigration.k8s.io/v1 too. */
export const NEW_SERVED = served([...BASE, 'storageversionmigrations'], [...BASE_GROUPS, 'storagemigration.k8s.io']);

/**
 * kas-a and kas-b in service from 0, read as 1.36 at 0; kas-a out at 100,
 * read serving nothing at 110 (stopped), read as 1.37 at 180, back in
 * service at 200.
 */
export function upgradeTimeline(): Timeline {
  const t = new Timeline();
  t.enter('kas-a', 0);
  t.enter('kas-b', 0);
  t.observe('kas-a', 0, OLD_SERVED);
  t.observe('kas-b', 0, OLD_SERVED);
  t.leave('kas-a', 100);
  t.observe('kas-a', 110, { resources: new Set(), groups: new Set() });
  t.observe('kas-a', 180, NEW_SERVED);
  t.enter('kas-a', 200);
  return t;
}

/** A mode's observations with nothing in them (a one-second run), plus what a test sets. */
export function emptyObservations(extra: Partial<ModeObservations> = {}): ModeObservations {
  return {
    requests: [],
    watchEvents: [],
    watchStart: {},
    brokenWatches: [],
    watchesEndedByServer: 0,
    watchRelists: 0,
    checks: [],
    steps: [],
    durationMs: 1000,
    ...extra,
  };
}
