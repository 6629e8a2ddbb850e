// The legacy documents over ext_proc (response.ts answers the aggregated
// ones): the local apiserver's legacy answer to this very request, merged
// with the peer part by the legacy merge rule (legacy.ts), in the format the
// apiserver wrote; undefined (the local answer goes through) for anything
// not as expected. The local document is re-encoded only when it encodes
// back to exactly the bytes the apiserver sent, so nothing it listed can be
// lost or changed. Pure.
import type { APIGroup, APIGroupList, APIResourceList, APIVersions, LegacyDocument } from '../model/legacyDiscovery.js';
import { legacyDocumentOfPath, mergeGroup, mergeGroupList, mergeResourceList, mergeVersions } from './legacy.js';
import { decodeLegacyProtobuf, encodeLegacyProtobuf, goOrderedLegacy, type LegacyBody } from './legacyWire.js';
import type { AggregatedPeerPart } from './peerPart.js';
import { goJson } from './render.js';

/** The legacy document kind each legacy path names. */
const KIND_OF: Record<LegacyDocument['kind'], LegacyBody['kind']> = {
  versions: 'APIVersions',
  'group-list': 'APIGroupList',
  group: 'APIGroup',
  'resource-list': 'APIResourceList',
};

/**
 * The merged legacy body for `path` (without its query), or undefined when
 * the local body is not the legacy document the path names, in JSON or
 * protobuf, written as kube-apiserver writes it.
 */
export function mergedLegacyBody(
  path: string,
  contentType: string,
  body: Buffer,
  part: Pick<AggregatedPeerPart, 'groups' | 'localBuiltIn'>,
): Buffer | undefined {
  const which = legacyDocumentOfPath(path);
  if (which === undefined) return undefined;
  const protobuf = /^application\/vnd\.kubernetes\.protobuf\s*(;|$)/i.test(contentType);
  if (!protobuf && !/^application\/json\s*(;|$)/i.test(contentType)) return undefined;
  const local = protobuf ? decodeLegacyProtobuf(body) : legacyJsonBody(KIND_OF[which.kind], JSON.parse(body.toString('utf8')));
  if (local === undefined || local.kind !== KIND_OF[which.kind] || !encode(local, protobuf).equals(body)) return undefined;
  const merged = mergeLegacy(local, part);
  return merged === local ? body : encode(merged, protobuf);
}

function encode(body: LegacyBody, protobuf: boolean): Buffer {
  return protobuf ? encodeLegacyProtobuf(body) : Buffer.from(goJson(goOrderedLegacy(body)), 'utf8');
}

function mergeLegacy(local: LegacyBody, part: Pick<AggregatedPeerPart, 'groups' | 'localBuiltIn'>): LegacyBody {
  const merged = ((): LegacyBody => {
    switch (local.kind) {
      case 'APIVersions':
        return { kind: local.kind, document: mergeVersions(local.document, part) };
      case 'APIGroupList':
        return { kind: local.kind, document: mergeGroupList(local.document, part) };
      case 'APIGroup':
        return { kind: local.kind, document: mergeGroup(local.document, part) };
      case 'APIResourceList':
        return { kind: local.kind, document: mergeResourceList(local.document, part) };
    }
  })();
  return merged.document === local.document ? local : merged;
}

/** A parsed JSON body as the legacy document `kind`, when it has that document's shape. */
function legacyJsonBody(kind: LegacyBody['kind'], value: unknown): LegacyBody | undefined {
  if (!isObject(value) || (value['kind'] !== undefined && value['kind'] !== kind)) return undefined;
  switch (kind) {
    case 'APIVersions':
      return isStrings(value['versions']) ? { kind, document: value as unknown as APIVersions } : undefined;
    case 'APIGroupList':
      return Array.isArray(value['groups']) && value['groups'].every(isGroup) ? { kind, document: value as unknown as APIGroupList } : undefined;
    case 'APIGroup':
      return isGroup(value) ? { kind, document: value as unknown as APIGroup } : undefined;
    case 'APIResourceList':
      return typeof value['groupVersion'] === 'string' &&
        Array.isArray(value['resources']) &&
        value['resources'].every((r) => isObject(r) && typeof r['name'] === 'string')
        ? { kind, document: value as unknown as APIResourceList }
        : undefined;
  }
}

function isGroup(value: unknown): boolean {
  return (
    isObject(value) &&
    typeof value['name'] === 'string' &&
    Array.isArray(value['versions']) &&
    value['versions'].every((v) => isObject(v) && typeof v['version'] === 'string' && typeof v['groupVersion'] === 'string')
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStrings(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}
