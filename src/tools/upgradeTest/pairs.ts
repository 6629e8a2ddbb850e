// The version pairs the upgrade test runs, and the resources each exercises.
// Each pair's skew resource is one the newer release serves by default and
// the older does not, as read from both releases' own discovery:
// - 1.36 -> 1.37: storagemigration.k8s.io/v1 storageversionmigrations;
// - 1.35 -> 1.36 (the upgrade users make before upstream's proxy is beta):
//   admissionregistration.k8s.io/v1 mutatingadmissionpolicies (and its
//   bindings), the only difference between the two releases' defaults.
// A pair also names the namespaced resource only its newer side serves, for
// the stories of KEP-4020's victims (stories.ts), when there is one: 1.37
// serves certificates.k8s.io/v1 podcertificaterequests (GA, on by default;
// 1.36 has the API at beta, off by default); 1.35 and 1.36 differ by no
// namespaced resource, so that pair runs no stories.
import type { ResourceKey, StoryResourceKey } from './observations.js';

export interface VersionPair {
  id: string;
  older: string;
  newer: string;
  /** What the load writes and reads, the skew resource among them. */
  resources: readonly ResourceKey[];
  /** The resource only the newer side serves. */
  skew: ResourceKey;
  /** The namespaced resource only the newer side serves, for the stories (stories.ts); absent: the pair runs none. */
  storyResource?: StoryResourceKey;
}

const COMMON: readonly ResourceKey[] = ['configmaps', 'deployments', 'jobs', 'widgets'];

export const VERSION_PAIRS: Readonly<Record<string, VersionPair>> = {
  '1.36-1.37': {
    id: '1.36-1.37',
    older: 'v1.36.3',
    newer: 'v1.37.2',
    resources: [...COMMON, 'storageversionmigrations'],
    skew: 'storageversionmigrations',
    storyResource: 'podcertificaterequests',
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
