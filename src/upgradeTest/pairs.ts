// The version pairs the upgrade test runs, and the resources each exercises.
// Each pair's skew resource is one the newer release serves by default and
// the older does not, as read from both releases' own discovery:
// - 1.36 -> 1.37: storagemigration.k8s.io/v1 storageversionmigrations;
// - 1.35 -> 1.36 (the upgrade users make before upstream's proxy is beta):
//   admissionregistration.k8s.io/v1 mutatingadmissionpolicies (and its
//   bindings), the only difference between the two releases' defaults.
import type { ResourceKey } from './observations.js';

export interface VersionPair {
  id: string;
  older: string;
  newer: string;
  /** What the load writes and reads, the skew resource among them. */
  resources: readonly ResourceKey[];
  /** The resource only the newer side serves. */
  skew: ResourceKey;
}

const COMMON: readonly ResourceKey[] = ['configmaps', 'deployments', 'jobs', 'widgets'];

export const VERSION_PAIRS: Readonly<Record<string, VersionPair>> = {
  '1.36-1.37': {
    id: '1.36-1.37',
    older: 'v1.36.3',
    newer: 'v1.37.2',
    resources: [...COMMON, 'storageversionmigrations'],
    skew: 'storageversionmigrations',
  },
  '1.35-1.36': {
    id: '1.35-1.36',
    older: 'v1.35.4',
    newer: 'v1.36.3',
    resources: [...COMMON, 'mutatingadmissionpolicies'],
    skew: 'mutatingadmissionpolicies',
  },
};

export const DEFAULT_PAIR = '1.36-1.37';

export function versionPair(id: string): VersionPair {
  const pair = VERSION_PAIRS[id];
  if (!pair) throw new Error(`--pair: one of ${Object.keys(VERSION_PAIRS).join(', ')}, got ${id}`);
  return pair;
}
