// Aggregated discovery documents in the shapes kube-apiserver writes (the
// core entry has no name, Go writes nil slices as null): parsed ones (CORE,
// GROUPS, DISCOVERY) for the served-set and parsing tests, and raw ones
// (rawCore, rawGroups) into which inject() puts a malformed entry.
import type { ApiserverDiscovery } from '../../src/model/discovery.js';
import { list } from './discoveryFixtures.js';

// Shapes as kube-apiserver writes them: the core entry has no name, Go writes nil slices as null.
export const CORE = list([
  {
    metadata: { creationTimestamp: null },
    versions: [
      {
        version: 'v1',
        resources: [
          {
            resource: 'pods',
            responseKind: { group: '', version: 'v1', kind: 'Pod' },
            scope: 'Namespaced',
            singularResource: 'pod',
            verbs: ['list', 'get', 'create', 'delete'],
            subresources: [
              { subresource: 'status', verbs: ['get', 'patch', 'update'] },
              { subresource: 'exec', verbs: ['create', 'get'] },
              { subresource: 'binding', verbs: ['create'] },
            ],
          },
          { resource: 'namespaces', scope: 'Cluster', singularResource: 'namespace', verbs: ['get', 'list'], responseKind: null },
        ],
      },
    ],
  },
]);

export const GROUPS = list([
  {
    metadata: { name: 'batch', creationTimestamp: null },
    versions: [
      { version: 'v1', resources: [{ resource: 'jobs', scope: 'Namespaced', verbs: ['get'], subresources: [{ subresource: 'status', verbs: null }] }] },
    ],
  },
  {
    metadata: { name: 'apps' },
    versions: [
      { version: 'v1', resources: [{ resource: 'deployments', scope: 'Namespaced', verbs: ['get'] }] },
      { version: 'v1beta1', freshness: 'Stale' },
    ],
  },
  {
    metadata: { name: 'rbac.authorization.k8s.io' },
    versions: [{ version: 'v1', resources: [{ resource: 'clusterroles', scope: 'Cluster', verbs: ['get'] }] }],
  },
]);

export const DISCOVERY: ApiserverDiscovery = { core: CORE, groups: GROUPS };

export type Raw = Record<string, unknown>;
export const raw = (items: unknown[]): Raw => ({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items });

export function rawCore(): Raw {
  return raw([
    {
      metadata: { creationTimestamp: null },
      versions: [
        {
          version: 'v1',
          resources: [
            { resource: 'configmaps', scope: 'Namespaced', verbs: ['get', 'list'] },
            { resource: 'pods', scope: 'Namespaced', verbs: ['get'], subresources: [{ subresource: 'status', verbs: ['get'] }] },
          ],
        },
      ],
    },
  ]);
}

export function rawGroups(): Raw {
  return raw([
    {
      metadata: { name: 'apps' },
      versions: [
        {
          version: 'v1',
          resources: [{ resource: 'deployments', scope: 'Namespaced', verbs: ['get'], subresources: [{ subresource: 'scale', verbs: ['get'] }] }],
        },
      ],
    },
    {
      metadata: { name: 'widgets.example.com' },
      versions: [
        {
          version: 'v1',
          resources: [{ resource: 'widgets', scope: 'Namespaced', verbs: ['get', 'list'], subresources: [{ subresource: 'status', verbs: ['get'] }] }],
        },
      ],
    },
    {
      metadata: { name: 'storagemigration.k8s.io' },
      versions: [{ version: 'v1', resources: [{ resource: 'storageversionmigrations', scope: 'Cluster', verbs: ['list'] }] }],
    },
  ]);
}

// Where a malformed entry goes: the items of /api or /apis, the versions of
// widgets.example.com, its v1 resources, or the subresources of widgets.
export type Place = 'core group' | 'core resource' | 'group' | 'version' | 'resource' | 'subresource';

export function inject(place: Place, entry: unknown): { core: Raw; groups: Raw } {
  return injectAll([[place, entry]]);
}

export function injectAll(entries: Array<[Place, unknown]>): { core: Raw; groups: Raw } {
  const core = rawCore();
  const groups = rawGroups();
  const widgets = (groups['items'] as Raw[])[1] as Raw;
  const v1 = (widgets['versions'] as Raw[])[0] as Raw;
  const coreV1 = (((core['items'] as Raw[])[0] as Raw)['versions'] as Raw[])[0] as Raw;
  const target: Record<Place, unknown> = {
    'core group': core['items'],
    'core resource': coreV1['resources'],
    group: groups['items'],
    version: widgets['versions'],
    resource: v1['resources'],
    subresource: ((v1['resources'] as Raw[])[0] as Raw)['subresources'],
  };
  // In the middle: entries after it must survive too.
  for (const [place, entry] of entries) (target[place] as unknown[]).splice(1, 0, entry);
  return { core, groups };
}

/** A resource entry: namespaced, verbs [get]. */
export const R = (resource: unknown, extra: Raw = {}): Raw => ({ resource, scope: 'Namespaced', verbs: ['get'], ...extra });
