// What each apiserver serves, as lookup keys: how the decider asks
// "does it serve this (sub)resource" of the local apiserver and every peer.
import type { ServedResource } from '../model/cluster.js';
import type { RequestInfo } from '../model/requestInfo.js';

/** What one apiserver serves, as lookup keys. */
export class ServedIndex {
  readonly keys = new Set<string>();

  constructor(servedSet: readonly ServedResource[]) {
    for (const served of servedSet) {
      this.keys.add(resourceKey(served.group, served.version, served.resource));
      for (const subresource of served.subresources) {
        this.keys.add(resourceKey(served.group, served.version, served.resource, subresource));
      }
    }
  }

  serves(key: string): boolean {
    return this.keys.has(key);
  }

  /** Whether the resource a request names (and its subresource, if any) is served. */
  servesRequest(request: Pick<RequestInfo, 'group' | 'version' | 'resource' | 'subresource'>): boolean {
    return request.resource !== undefined && this.serves(resourceKey(request.group, request.version, request.resource, request.subresource));
  }
}

/**
 * The index of a served set, made once per set however many sidecars' deciders
 * ask (every sidecar rates every peer). Weak: gone with the model.
 */
const servedIndexes = new WeakMap<readonly ServedResource[], ServedIndex>();

export function servedIndexOf(servedSet: readonly ServedResource[]): ServedIndex {
  let index = servedIndexes.get(servedSet);
  if (!index) {
    index = new ServedIndex(servedSet);
    servedIndexes.set(servedSet, index);
  }
  return index;
}

/** The lookup key of a resource, or of one of its subresources. */
export function resourceKey(group: string, version: string, resource: string, subresource?: string | undefined): string {
  return JSON.stringify(subresource === undefined ? [group, version, resource] : [group, version, resource, subresource]);
}
