// The unaggregated per-group documents, beyond upstream (kubernetes issue
// 96486): `/apis/{group}` (APIGroup), `/apis/{group}/{version}` and `/api/v1`
// (APIResourceList) for what the local apiserver does not serve, or serves
// only part of, while a peer does. Derived from the merged aggregated
// document, shaped as an apiserver serving it would answer. When the local
// apiserver serves everything the merged document lists there, it answers
// itself (undefined here).
import type { APIGroupDiscovery, APIResourceDiscovery, APIVersionDiscovery, ApiserverDiscovery } from '../model/discovery.js';
import type { MergedDiscovery } from './merge.js';
import { etagOf, goJson, type RenderedDocument } from './render.js';

export const LEGACY_DISCOVERY_CONTENT_TYPE = 'application/json';

/** A per-group discovery path: `/apis/{g}`, `/apis/{g}/{v}`, or `/api/{v}` (group ""). */
export type GroupPath = { kind: 'group'; group: string } | { kind: 'group-version'; group: string; version: string };

export function parseGroupPath(path: string): GroupPath | undefined {
  const bare = path.split('?', 1)[0] as string;
  const parts = bare.replace(/\/+$/, '').split('/');
  if (parts[0] !== '' || parts.some((p, i) => i > 0 && p === '')) return undefined;
  if (parts[1] === 'apis' && parts.length === 3) return { kind: 'group', group: parts[2] as string };
  if (parts[1] === 'apis' && parts.length === 4) return { kind: 'group-version', group: parts[2] as string, version: parts[3] as string };
  if (parts[1] === 'api' && parts.length === 3) return { kind: 'group-version', group: '', version: parts[2] as string };
  return undefined;
}

const documentCache = new WeakMap<MergedDiscovery, Map<string, RenderedDocument | null>>();

/**
 * The document for `path` when the local apiserver lacks part of what the
 * merged discovery lists there; undefined when the local apiserver serves it
 * all (or nobody serves it: the local apiserver gives the honest 404).
 */
export function peerGroupDocument(
  merged: MergedDiscovery,
  localDiscovery: ApiserverDiscovery | undefined,
  path: string,
): RenderedDocument | undefined {
  let perPath = documentCache.get(merged);
  if (!perPath) {
    perPath = new Map();
    documentCache.set(merged, perPath);
  }
  // Memoized only for the merged document's own local discovery, the usual caller.
  const cacheable = localDiscovery === merged.local;
  const cached = cacheable ? perPath.get(path) : undefined;
  if (cached !== undefined) return cached ?? undefined;
  const document = buildPeerGroupDocument(merged, localDiscovery, path);
  // Bounded: paths come from clients.
  if (cacheable && perPath.size < 1024) perPath.set(path, document ?? null);
  return document;
}

function buildPeerGroupDocument(merged: MergedDiscovery, localDiscovery: ApiserverDiscovery | undefined, path: string): RenderedDocument | undefined {
  const parsed = parseGroupPath(path);
  if (!parsed) return undefined;
  const mergedGroup = findGroup(merged, parsed.group);
  if (!mergedGroup) return undefined;
  const localGroup = localDiscovery ? findGroupIn(parsed.group === '' ? localDiscovery.core.items : localDiscovery.groups.items, parsed.group) : undefined;

  if (parsed.kind === 'group') {
    if (parsed.group === '') return undefined; // `/api` is the APIVersions document, not a group
    const localVersions = new Set((localGroup?.versions ?? []).map((v) => v.version));
    if (mergedGroup.versions.every((v) => localVersions.has(v.version))) return undefined;
    return jsonDocument(apiGroup(mergedGroup));
  }

  const mergedVersion = mergedGroup.versions.find((v) => v.version === parsed.version);
  if (!mergedVersion) return undefined;
  const localVersion = localGroup?.versions.find((v) => v.version === parsed.version);
  if (localVersion && coversAll(localVersion, mergedVersion)) return undefined;
  return jsonDocument(apiResourceList(parsed.group, mergedVersion));
}

function findGroup(merged: MergedDiscovery, group: string): APIGroupDiscovery | undefined {
  return findGroupIn(group === '' ? merged.core.items : merged.groups.items, group);
}

function findGroupIn(groups: readonly APIGroupDiscovery[], group: string): APIGroupDiscovery | undefined {
  return groups.find((g) => g.metadata.name === group);
}

/** Whether the local version lists every resource and subresource the merged one does. */
function coversAll(local: APIVersionDiscovery, merged: APIVersionDiscovery): boolean {
  const localKeys = new Set(local.resources.flatMap(resourceKeys));
  return merged.resources.flatMap(resourceKeys).every((key) => localKeys.has(key));
}

function resourceKeys(resource: APIResourceDiscovery): string[] {
  return [resource.resource, ...(resource.subresources ?? []).map((s) => `${resource.resource}/${s.subresource}`)];
}

function groupVersionString(group: string, version: string): string {
  return group === '' ? version : `${group}/${version}`;
}

/** metav1.APIGroup in Go field order; versions in preference order, the first preferred. */
function apiGroup(group: APIGroupDiscovery): Record<string, unknown> {
  const name = group.metadata.name;
  const versions = group.versions.map((v) => ({ groupVersion: groupVersionString(name, v.version), version: v.version }));
  const out: Record<string, unknown> = { kind: 'APIGroup', apiVersion: 'v1', name, versions };
  if (versions[0]) out['preferredVersion'] = versions[0];
  return out;
}

/**
 * metav1.APIResourceList in Go field order. Each resource is followed by its
 * subresources as "resource/subresource" entries; group and version are
 * written only where the kind's group-version differs from the list's (as
 * for `deployments/scale`, an autoscaling/v1 Scale).
 */
function apiResourceList(group: string, version: APIVersionDiscovery): Record<string, unknown> {
  const resources: Record<string, unknown>[] = [];
  for (const r of version.resources) {
    const namespaced = r.scope === 'Namespaced';
    resources.push(
      apiResource({
        name: r.resource,
        singularName: r.singularResource ?? '',
        namespaced,
        kindOf: r.responseKind,
        verbs: r.verbs,
        shortNames: r.shortNames,
        categories: r.categories,
        group,
        version: version.version,
      }),
    );
    for (const sub of r.subresources ?? []) {
      resources.push(
        apiResource({
          name: `${r.resource}/${sub.subresource}`,
          singularName: '',
          namespaced,
          kindOf: sub.responseKind,
          verbs: sub.verbs,
          group,
          version: version.version,
        }),
      );
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: groupVersionString(group, version.version), resources };
}

function apiResource(r: {
  name: string;
  singularName: string;
  namespaced: boolean;
  kindOf: { group: string; version: string; kind: string } | undefined;
  verbs: string[];
  shortNames?: string[] | undefined;
  categories?: string[] | undefined;
  group: string;
  version: string;
}): Record<string, unknown> {
  const out: Record<string, unknown> = { name: r.name, singularName: r.singularName, namespaced: r.namespaced };
  if (r.kindOf && (r.kindOf.group !== r.group || r.kindOf.version !== r.version)) {
    if (r.kindOf.group !== '') out['group'] = r.kindOf.group;
    if (r.kindOf.version !== '') out['version'] = r.kindOf.version;
  }
  out['kind'] = r.kindOf?.kind ?? '';
  out['verbs'] = r.verbs;
  if (r.shortNames && r.shortNames.length > 0) out['shortNames'] = r.shortNames;
  if (r.categories && r.categories.length > 0) out['categories'] = r.categories;
  return out;
}

function jsonDocument(value: unknown): RenderedDocument {
  const body = Buffer.from(goJson(value), 'utf8');
  return { body, contentType: LEGACY_DISCOVERY_CONTENT_TYPE, etag: etagOf(body) };
}
