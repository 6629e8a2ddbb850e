// The shape a kept model must have before a replica serves from it. The file
// is the replica's own, but a disk fills, a write is cut short, an operator
// edits it or an older build left it: whatever is there, the replica must
// start (never worse than no proxy), so every field is checked against the
// model's types and anything else makes the whole file unusable. Each schema
// is declared against its model type, so the two cannot drift apart.
import { z } from 'zod';
import type { ApiserverObservation, ClusterModel, LocalOnlyGroupVersion, ServedResource } from '../model/cluster.js';
import {
  isEtagValue,
  type APIGroupDiscoveryList,
  type APIResourceDiscovery,
  type APISubresourceDiscovery,
  type ApiserverDiscovery,
  type DroppedDiscoveryEntry,
  type GroupVersionKind,
} from '../model/discovery.js';

const time = z.number().finite();
const strings = z.array(z.string());

const groupVersionKind: z.ZodType<GroupVersionKind> = z.object({ group: z.string(), version: z.string(), kind: z.string() });

const subresource: z.ZodType<APISubresourceDiscovery> = z.object({
  subresource: z.string(),
  responseKind: groupVersionKind.optional(),
  acceptedTypes: z.array(groupVersionKind).optional(),
  verbs: strings,
});

const resource: z.ZodType<APIResourceDiscovery> = z.object({
  resource: z.string(),
  responseKind: groupVersionKind.optional(),
  scope: z.enum(['Cluster', 'Namespaced']),
  singularResource: z.string().optional(),
  verbs: strings,
  shortNames: strings.optional(),
  categories: strings.optional(),
  subresources: z.array(subresource).optional(),
});

const groupDiscoveryList: z.ZodType<APIGroupDiscoveryList> = z.object({
  kind: z.literal('APIGroupDiscoveryList'),
  apiVersion: z.literal('apidiscovery.k8s.io/v2'),
  metadata: z.record(z.string(), z.unknown()),
  items: z.array(
    z.object({
      metadata: z.looseObject({ name: z.string() }),
      versions: z.array(
        z.object({
          version: z.string(),
          resources: z.array(resource),
          freshness: z.enum(['Current', 'Stale']).optional(),
        }),
      ),
    }),
  ),
});

const droppedEntry: z.ZodType<DroppedDiscoveryEntry> = z.object({
  document: z.enum(['/api', '/apis']),
  group: z.string().optional(),
  version: z.string().optional(),
  resource: z.string().optional(),
  subresource: z.string().optional(),
  path: z.string(),
  reason: z.string(),
  kind: z.enum(['malformed', 'unroutable']),
});

const etagValue = z.string().refine(isEtagValue, 'not an ETag value');

const discovery: z.ZodType<ApiserverDiscovery> = z.object({
  core: groupDiscoveryList,
  groups: groupDiscoveryList,
  openapi: z.object({ paths: z.record(z.string(), z.object({ serverRelativeURL: z.string() })) }).optional(),
  dropped: z.array(droppedEntry).optional(),
  etags: z.object({ core: etagValue.optional(), groups: etagValue.optional() }).optional(),
});

const servedResource: z.ZodType<ServedResource> = z.object({
  group: z.string(),
  version: z.string(),
  resource: z.string(),
  namespaced: z.boolean(),
  verbs: strings,
  subresources: strings,
});

const apiserver: z.ZodType<ApiserverObservation> = z.object({
  endpoint: z.object({
    name: z.string(),
    hostname: z.string(),
    address: z.object({ host: z.string(), port: z.number().int().min(1).max(65535) }),
  }),
  lease: z.object({ name: z.string(), holderIdentity: z.string(), renewTime: time }).optional(),
  leaseGoneAt: time.optional(),
  discovery: discovery.optional(),
  discoveryEtag: z.string().optional(),
  servedSet: z.array(servedResource),
  reachable: z.boolean(),
  discoveryCurrentSince: time.optional(),
  ready: z.boolean().optional(),
  version: z.string().optional(),
});

const localOnly: z.ZodType<LocalOnlyGroupVersion> = z.object({
  group: z.string(),
  version: z.string(),
  source: z.enum(['CustomResourceDefinition', 'APIService']),
  excludedUntil: time.optional(),
});

export const clusterModelSchema: z.ZodType<ClusterModel> = z.object({
  now: time,
  apiservers: z.array(apiserver),
  localOnly: z.array(localOnly),
});

/** `value` as a ClusterModel (fields the model does not have left out), or what keeps it from being one, in one line. */
export function parseClusterModel(value: unknown): { model: ClusterModel } | { problem: string } {
  const result = clusterModelSchema.safeParse(value);
  if (result.success) return { model: result.data };
  const issue = result.error.issues[0];
  return { problem: issue ? `model.${issue.path.join('.')}: ${issue.message}` : 'the model in it is malformed' };
}
