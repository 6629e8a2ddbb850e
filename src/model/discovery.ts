// Aggregated discovery (apidiscovery.k8s.io/v2) as plain data: the subset of
// the document mvproxy reads, merges and serves. Field names follow the JSON
// wire form so a parsed document is usable as is.
import type { OpenApiV3Index } from './openapi.js';

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

/** One apiserver's own discovery: `/api` (core group, name "") and `/apis`, and its OpenAPI v3 index once read. */
export interface ApiserverDiscovery {
  core: APIGroupDiscoveryList;
  groups: APIGroupDiscoveryList;
  openapi?: OpenApiV3Index;
}
