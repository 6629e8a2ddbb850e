// The per-node snapshot store: what each xDS node (sidecar) should have now,
// with every resource encoded to protobuf once when the snapshot is set, not
// once per stream or per response. The ADS streams read from it.
import { envoyRoot } from '../xds/protos.js';
import type { DiscoveryResponse } from '../generated/envoy/service/discovery/v3/DiscoveryResponse.js';
import {
  PUSH_ORDER,
  expectedEdsNames,
  messageName,
  resourceName,
  selectResources,
  snapshotVersions,
  type Resource,
  type ResourceTypeUrl,
  type Snapshot,
} from '../xds/snapshot.js';

/** A resource as a google.protobuf.Any, already encoded. */
export interface AnyBytes {
  type_url: string;
  value: Buffer;
}

/** A whole DiscoveryResponse, encoded once for every stream it goes to. */
export interface SharedResponse {
  readonly nonce: string;
  readonly bytes: Buffer;
  readonly resources: number;
  /** The streams it went to: a stream never gets one nonce twice. */
  readonly recipients: WeakSet<object>;
}

/** A snapshot with every resource already encoded. */
export interface EncodedSnapshot {
  readonly snapshot: Snapshot;
  readonly versions: Readonly<Record<ResourceTypeUrl, string>>;
  /** EDS names Envoy will ask for once it has accepted this snapshot's clusters. */
  readonly edsNames: readonly string[];
  readonly anys: ReadonlyMap<ResourceTypeUrl, ReadonlyMap<string, AnyBytes>>;
  /**
   * The responses sent from it, by type URL and subscribed names: the many
   * Envoys of one sidecar get the same bytes (and nonce), encoded once, not
   * once per stream.
   */
  readonly responses: Map<string, SharedResponse>;
}

/**
 * Each resource's encoding, by resource object: snapshots share resources
 * (xds/snapshot.ts), so each is encoded once however many nodes have it.
 * Weak: gone with the objects.
 */
const encodings = new WeakMap<Resource, AnyBytes>();

/**
 * Encodes every resource of a snapshot. Throws if one cannot be encoded (a
 * translator bug).
 */
export function encodeSnapshot(snapshot: Snapshot): EncodedSnapshot {
  const root = envoyRoot();
  const anys = new Map<ResourceTypeUrl, Map<string, AnyBytes>>();
  for (const url of PUSH_ORDER) {
    const type = root.lookupType(messageName(url));
    const byName = new Map<string, AnyBytes>();
    for (const resource of snapshot.types[url].resources.values()) {
      let any = encodings.get(resource);
      if (!any) {
        // fromObject resolves nested '@type' Anys (typed_config) through the same root.
        any = { type_url: url, value: Buffer.from(type.encode(type.fromObject(resource)).finish()) };
        encodings.set(resource, any);
      }
      byName.set(resourceName(resource), any);
    }
    anys.set(url, byName);
  }
  return { snapshot, versions: snapshotVersions(snapshot), anys, edsNames: expectedEdsNames(snapshot), responses: new Map() };
}

/** A DiscoveryResponse as bytes. */
export function encodeDiscoveryResponse(response: DiscoveryResponse): Buffer {
  const type = envoyRoot().lookupType('envoy.service.discovery.v3.DiscoveryResponse');
  return Buffer.from(type.encode(type.fromObject(response)).finish());
}

/** The encoded resources of one type that a SotW reply for these subscribed names carries. */
export function encodedResources(encoded: EncodedSnapshot, url: ResourceTypeUrl, names: readonly string[]): AnyBytes[] {
  const anys = encoded.anys.get(url);
  const resources: AnyBytes[] = [];
  for (const resource of selectResources(encoded.snapshot, url, names)) {
    const any = anys?.get(resourceName(resource));
    if (any) resources.push(any);
  }
  return resources;
}

/** Each node's current snapshot, encoded. */
export class SnapshotStore {
  private readonly byNode = new Map<string, EncodedSnapshot>();

  /**
   * Sets what a node should have. Throws if a resource cannot be encoded,
   * leaving the previous snapshot in place.
   */
  set(node: string, snapshot: Snapshot): EncodedSnapshot {
    const encoded = encodeSnapshot(snapshot);
    this.byNode.set(node, encoded);
    return encoded;
  }

  /** The node's snapshot; undefined until one was set. */
  get(node: string): EncodedSnapshot | undefined {
    return this.byNode.get(node);
  }
}
