// Cluster models with real aggregated discovery documents, and the serve
// configuration that declares their apiservers: the inputs of the reconcile step.
import type { ApiserverObservation, ClusterModel } from '../../src/model/cluster.js';
import type { ApiserverDiscovery } from '../../src/model/discovery.js';
import { parseAggregatedDiscovery } from '../../src/model/discoveryDocument.js';
import { servedSetFromDiscovery } from '../../src/model/servedSet.js';
import type { ServedApiserver } from '../../src/serve/config.js';
import type { ReconcileConfig } from '../../src/serve/reconcile.js';
import { DEFAULT_SIDECAR_LIMITS } from '../../src/translator/settings.js';
import { GRACE_MS } from './clusterModel.js';

export const NOW = 1_700_000_000_000;

/** group/version/resource; group "" is the core group. */
export type Gvr = readonly [group: string, version: string, resource: string];

export const CORE: Gvr[] = [
  ['', 'v1', 'namespaces'],
  ['', 'v1', 'pods'],
];
export const BATCH: Gvr[] = [
  ['batch', 'v1', 'cronjobs'],
  ['batch', 'v1', 'jobs'],
];
export const MIGRATION: Gvr[] = [['storagemigration.k8s.io', 'v1', 'storageversionmigrations']];

/** An apiserver's own aggregated discovery listing exactly these resources. */
export function discoveryOf(gvrs: readonly Gvr[]): ApiserverDiscovery {
  const groups = new Map<string, Map<string, string[]>>();
  for (const [group, version, resource] of gvrs) {
    const versions = groups.get(group) ?? new Map<string, string[]>();
    versions.set(version, [...(versions.get(version) ?? []), resource]);
    groups.set(group, versions);
  }
  const items = (core: boolean): unknown[] =>
    [...groups]
      .filter(([group]) => (group === '') === core)
      .map(([name, versions]) => ({
        metadata: { name },
        versions: [...versions].map(([version, resources]) => ({
          version,
          resources: resources.map((resource) => ({ resource, scope: 'Namespaced', verbs: ['get', 'list', 'watch'] })),
        })),
      }));
  const list = (core: boolean): unknown => ({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: items(core) });
  return { core: parseAggregatedDiscovery(list(true), [], '/api'), groups: parseAggregatedDiscovery(list(false), [], '/apis') };
}

/** Apiservers in order, each live, reachable and ready, addressed 10.0.0.1, 10.0.0.2, ... */
export function model(apiservers: Record<string, readonly Gvr[]>): ClusterModel {
  return {
    now: NOW,
    localOnly: [],
    apiservers: Object.entries(apiservers).map(([name, serves], i): ApiserverObservation => {
      const discovery = discoveryOf(serves);
      return {
        endpoint: { name, hostname: `host-${name}`, address: { host: `10.0.0.${i + 1}`, port: 6444 } },
        lease: { name: `apiserver-${name}`, holderIdentity: `${name}-1`, renewTime: NOW - 1000 },
        discovery,
        servedSet: servedSetFromDiscovery(discovery),
        reachable: true,
        ready: true,
      };
    }),
  };
}

function declared(name: string, i: number): ServedApiserver {
  return {
    name,
    hostname: `host-${name}`,
    address: { host: `10.0.0.${i + 1}`, port: 6444 },
    sidecar: { host: `10.0.0.${i + 1}`, port: 6443, servingCert: `/pki/${name}.crt`, servingKey: `/pki/${name}.key` },
  };
}

/** What the serve config says, for these declared apiservers (no file is read). */
export function config(names: readonly string[]): ReconcileConfig {
  return {
    apiservers: names.map(declared),
    tls: {
      clientCa: '/pki/ca.crt',
      frontProxyClientCert: '/pki/fp.crt',
      frontProxyClientKey: '/pki/fp.key',
      peerCa: '/pki/ca.crt',
      peerServerName: 'kubernetes.default.svc',
    },
    departedGraceMs: GRACE_MS,
    requestTimeoutSeconds: DEFAULT_SIDECAR_LIMITS.requestTimeoutSeconds,
  };
}
