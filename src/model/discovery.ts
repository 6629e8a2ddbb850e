// Aggregated discovery (apidiscovery.k8s.io/v2) as plain data: the subset of
// the document mvproxy reads, merges and serves. Field names follow the JSON
// wire form so a parsed document is usable as is.
import type { OpenApiV3Index } from './openapi.js';

// The media types of aggregated discovery, as kube-apiserver names them in
// Accept and Content-Type: the parameters that name the document, on JSON or
// protobuf, with `profile=nopeer` for an apiserver's own (unmerged) document.

/** The media-type parameter that asks for aggregated discovery (which version: AGGREGATED_DISCOVERY_PARAMS). */
export const AGGREGATED_DISCOVERY_AS = 'as=APIGroupDiscoveryList';
/** The media-type parameters that name aggregated discovery v2. */
export const AGGREGATED_DISCOVERY_PARAMS = `g=apidiscovery.k8s.io;v=v2;${AGGREGATED_DISCOVERY_AS}`;
/** Aggregated discovery as JSON: the document's Content-Type, and an Accept for it alone. */
export const AGGREGATED_DISCOVERY_JSON = `application/json;${AGGREGATED_DISCOVERY_PARAMS}`;
/** Aggregated discovery as protobuf. */
export const AGGREGATED_DISCOVERY_PROTOBUF = `application/vnd.kubernetes.protobuf;${AGGREGATED_DISCOVERY_PARAMS}`;
/** The profile that asks a 1.36+ apiserver (upstream MVP on) for its local document. */
export const NOPEER_PROFILE = 'profile=nopeer';
/** The local (unmerged) aggregated document as JSON. */
export const AGGREGATED_DISCOVERY_NOPEER_JSON = `${AGGREGATED_DISCOVERY_JSON};${NOPEER_PROFILE}`;
/** The client-go Accept for aggregated discovery as JSON, falling back to the legacy documents. */
export const AGGREGATED_DISCOVERY_JSON_ACCEPT = `${AGGREGATED_DISCOVERY_JSON},application/json`;
/** An apiserver's own discovery: aggregated v2 with profile=nopeer first, so a 1.36+ apiserver with upstream MVP on answers with its local document. */
export const AGGREGATED_DISCOVERY_ACCEPT = `${AGGREGATED_DISCOVERY_NOPEER_JSON},${AGGREGATED_DISCOVERY_JSON_ACCEPT}`;

export interface APISubresourceDiscovery {
  subresource: string;
  responseKind?: GroupVersionKind;
  acceptedTypes?: GroupVersionKind[];
  verbs: string[];
}

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface APIResourceDiscovery {
  resource: string;
  responseKind?: GroupVersionKind;
  scope: 'Cluster' | 'Namespaced';
  singularResource?: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: APISubresourceDiscovery[];
}

export interface APIVersionDiscovery {
  version: string;
  resources: APIResourceDiscovery[];
  freshness?: 'Current' | 'Stale';
}

export interface APIGroupDiscovery {
  metadata: { name: string; [key: string]: unknown };
  versions: APIVersionDiscovery[];
}

export interface APIGroupDiscoveryList {
  kind: 'APIGroupDiscoveryList';
  apiVersion: 'apidiscovery.k8s.io/v2';
  metadata: Record<string, unknown>;
  items: APIGroupDiscovery[];
}

/**
 * An entry of an apiserver's discovery that mvproxy does not route on: one
 * group, version, resource or subresource (the smallest unit that is wrong),
 * named as far as its names could be read (a group only, a group-version, a
 * resource, or a subresource of it).
 */
export interface DroppedDiscoveryEntry {
  /** Which document: `/api` or `/apis`. */
  document: '/api' | '/apis';
  group?: string;
  version?: string;
  resource?: string;
  subresource?: string;
  /** JSON path of the entry (or of its offending field) in its document. */
  path: string;
  reason: string;
  /**
   * malformed: not valid Kubernetes discovery (wrong type, a name Kubernetes
   * would not accept, a duplicate); unroutable: valid, but its names are too
   * long for the route matchers Envoy accepts.
   */
  kind: 'malformed' | 'unroutable';
}

/** One apiserver's own discovery: `/api` (core group, name "") and `/apis`, and its OpenAPI v3 index once read. */
export interface ApiserverDiscovery {
  /**
   * The documents as the apiserver wrote them, minus entries that do not even
   * have the document's types (a non-string name, an unknown scope...). Entries
   * with names mvproxy does not route on are still here (the local apiserver's
   * own entries stay in the merged document as it listed them); routableDiscovery()
   * leaves them out.
   */
  core: APIGroupDiscoveryList;
  groups: APIGroupDiscoveryList;
  openapi?: OpenApiV3Index;
  /**
   * Every entry of `core` and `groups` (or of the bodies they were read from)
   * that mvproxy does not route on. The planner keeps requests for them on
   * the local apiserver: what mvproxy doubts, it leaves as it would be
   * without it. Absent when there is none.
   */
  dropped?: DroppedDiscoveryEntry[];
  /**
   * The ETags the apiserver sent with `core` and `groups`, as sent, where it
   * sent a usable one (isEtagValue). Its sidecar revalidates with it: the
   * apiserver's 304 authorizes a request without encoding the document the
   * sidecar replaces (docs/never-worse.md, "Merged documents").
   */
  etags?: { core?: string; groups?: string };
}

/** An ETag value fit to send back in If-None-Match: visible ASCII only (kube-apiserver's is a quoted SHA-512 in hex), at most 256 bytes. */
export function isEtagValue(value: string): boolean {
  return /^[\x21-\x7e]{1,256}$/.test(value);
}
