// Aggregated discovery as the merge reads it: parsed documents (core v1,
// apps, batch, a CRD group), apiserver observations and cluster models built
// from them, the Accept headers clients send, and lookups into a merged
// document.
import assert from 'node:assert/strict';

import type { ApiserverObservation, ClusterModel, LocalOnlyGroupVersion } from '../../src/model/cluster.js';
import type { APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery, ApiserverDiscovery } from '../../src/model/discovery.js';
import { parseAggregatedDiscovery } from '../../src/model/discoveryDocument.js';
import { servedSetFromDiscovery } from '../../src/model/servedSet.js';
import type { DiscoveryReply, discoveryResponse } from '../../src/discovery/index.js';
import {
  AGGREGATED_DISCOVERY_AS,
  AGGREGATED_DISCOVERY_JSON,
  AGGREGATED_DISCOVERY_NOPEER_JSON,
  AGGREGATED_DISCOVERY_PROTOBUF,
} from '../../src/model/discovery.js';

export const NOW = 1_700_000_000_000;

export function list(items: unknown[]): APIGroupDiscoveryList {
  return parseAggregatedDiscovery({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items });
}

export function resource(name: string, kind: string, verbs: string[], extra: Partial<APIResourceDiscovery> = {}): Record<string, unknown> {
  return {
    resource: name,
    responseKind: { group: '', version: '', kind },
    scope: 'Namespaced',
    singularResource: name.replace(/s$/, ''),
    verbs,
    ...extra,
  };
}

export function group(name: string, versions: { version: string; resources: unknown[] }[]): Record<string, unknown> {
  return { metadata: { name }, versions };
}

const CORE_V1 = [
  group('', [
    {
      version: 'v1',
      resources: [
        resource('pods', 'Pod', ['create', 'delete', 'get', 'list'], {
          shortNames: ['po'],
          categories: ['all'],
          subresources: [{ subresource: 'status', responseKind: { group: '', version: 'v1', kind: 'Pod' }, verbs: ['get', 'patch', 'update'] }],
        }),
        resource('namespaces', 'Namespace', ['get', 'list'], { scope: 'Cluster' }),
      ],
    },
  ]),
];

export const APPS = group('apps', [
  {
    version: 'v1',
    resources: [
      resource('deployments', 'Deployment', ['get', 'list'], {
        responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' },
        shortNames: ['deploy'],
        subresources: [{ subresource: 'status', responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' }, verbs: ['get'] }],
      }),
    ],
  },
]);

export const BATCH = group('batch', [
  {
    version: 'v1',
    resources: [
      resource('jobs', 'Job', ['create', 'get', 'list'], {
        responseKind: { group: 'batch', version: 'v1', kind: 'Job' },
        categories: ['all'],
        subresources: [{ subresource: 'status', responseKind: { group: 'batch', version: 'v1', kind: 'Job' }, verbs: ['get', 'patch', 'update'] }],
      }),
      resource('cronjobs', 'CronJob', ['get', 'list'], { responseKind: { group: 'batch', version: 'v1', kind: 'CronJob' }, shortNames: ['cj'] }),
    ],
  },
]);

export const CRD_GROUP = group('stable.example.com', [
  {
    version: 'v1',
    resources: [resource('crontabs', 'CronTab', ['get', 'list'], { responseKind: { group: 'stable.example.com', version: 'v1', kind: 'CronTab' } })],
  },
]);

export function discovery(groups: unknown[], core: unknown[] = CORE_V1): ApiserverDiscovery {
  return { core: list(core), groups: list(groups) };
}

export function apiserver(name: string, d: ApiserverDiscovery | undefined, extra: Partial<ApiserverObservation> = {}): ApiserverObservation {
  const observation: ApiserverObservation = {
    endpoint: { name, hostname: name, address: { host: `${name}.test`, port: 6443 } },
    lease: { name: `apiserver-${name}`, holderIdentity: `${name}-1`, renewTime: NOW },
    servedSet: d ? servedSetFromDiscovery(d) : [],
    reachable: true,
    ...extra,
  };
  if (d) observation.discovery = d;
  return observation;
}

export function model(apiservers: ApiserverObservation[], localOnly: LocalOnlyGroupVersion[] = []): ClusterModel {
  return { now: NOW, apiservers, localOnly };
}

export function groupNames(l: APIGroupDiscoveryList): string[] {
  return l.items.map((g) => g.metadata.name);
}

export function findGroup(l: APIGroupDiscoveryList, name: string): APIGroupDiscovery {
  const found = l.items.find((g) => g.metadata.name === name);
  assert.ok(found, `group ${name} in merged document`);
  return found;
}

export function findResource(l: APIGroupDiscoveryList, groupName: string, version: string, name: string): APIResourceDiscovery {
  const found = findGroup(l, groupName)
    .versions.find((v) => v.version === version)
    ?.resources.find((r) => r.resource === name);
  assert.ok(found, `${groupName}/${version}/${name} in merged document`);
  return found;
}

export function isReply(answer: ReturnType<typeof discoveryResponse>): answer is DiscoveryReply {
  return !('passThrough' in answer);
}

export const AGG_JSON = AGGREGATED_DISCOVERY_JSON;
export const AGG_JSON_V2BETA1 = `application/json;g=apidiscovery.k8s.io;v=v2beta1;${AGGREGATED_DISCOVERY_AS}`;
export const AGG_NOPEER = AGGREGATED_DISCOVERY_NOPEER_JSON;
export const AGG_PROTOBUF = AGGREGATED_DISCOVERY_PROTOBUF;

// TestPeerAggregatedDiscovery's skew: A has apps/v1 off, B has batch/v1 off.
export function skewedPair(): ClusterModel {
  return model([apiserver('a', discovery([BATCH])), apiserver('b', discovery([APPS]))]);
}
