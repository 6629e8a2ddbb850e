// The version pairs the upgrade test runs. Each names the resource that only
// the newer side serves (the skew every mode is judged on) and how the newer
// apiservers come to serve it.
//
// 1.36 -> 1.37: storagemigration.k8s.io/v1 is new in 1.37 and on by default.
// 1.35 -> 1.36: the upgrade users make without upstream's proxy in beta. Read
// from both releases' own discovery, the two serve the same resources by
// default (1.36's new ones are alpha), so the newer side turns on a beta API
// with the upgrade, as operators do: storagemigration.k8s.io/v1beta1 with its
// feature gate. 1.35 has that beta too, and leaves it off.
import { RESOURCE_SPECS, type ResourceSpecs } from './observations.js';

/** How one side of a pair runs its apiservers. */
export interface PairSide {
  version: string;
  /** --runtime-config ('' for the release's defaults). */
  runtimeConfig: string;
  /** --feature-gates besides mode upstream's own ('' for none). */
  featureGates: string;
}

export interface VersionPair {
  id: string;
  older: PairSide;
  newer: PairSide;
  /** The resources as this pair reaches them (the skew resource's version may differ). */
  specs: ResourceSpecs;
  /** How the skew comes about, for the JSON. */
  skew: string;
}

const defaults = (version: string): PairSide => ({ version, runtimeConfig: '', featureGates: '' });

export const VERSION_PAIRS: Readonly<Record<string, VersionPair>> = {
  '1.36-1.37': {
    id: '1.36-1.37',
    older: defaults('v1.36.3'),
    newer: defaults('v1.37.2'),
    specs: RESOURCE_SPECS,
    skew: 'storagemigration.k8s.io/v1 storageversionmigrations: served by v1.37 by default, not by v1.36',
  },
  '1.35-1.36': {
    id: '1.35-1.36',
    older: defaults('v1.35.4'),
    newer: { version: 'v1.36.3', runtimeConfig: 'storagemigration.k8s.io/v1beta1=true', featureGates: 'StorageVersionMigrator=true' },
    specs: { ...RESOURCE_SPECS, storageversionmigrations: { ...RESOURCE_SPECS.storageversionmigrations, version: 'v1beta1' } },
    skew: 'storagemigration.k8s.io/v1beta1 storageversionmigrations: turned on with the upgrade on v1.36 (--runtime-config and --feature-gates=StorageVersionMigrator=true), left off on v1.35 (both releases serve the same resources by default)',
  },
};

export const DEFAULT_PAIR = '1.36-1.37';

export function versionPair(id: string): VersionPair {
  const pair = VERSION_PAIRS[id];
  if (!pair) throw new Error(`--pair: one of ${Object.keys(VERSION_PAIRS).join(', ')}, got ${id}`);
  return pair;
}
