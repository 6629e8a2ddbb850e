// Legacy (unaggregated) discovery as plain data: the documents every client
// built before aggregated discovery reads (`/api` APIVersions, `/apis`
// APIGroupList, `/apis/{g}` APIGroup, `/api/v1` and `/apis/{g}/{v}`
// APIResourceList), meta/v1 in the apiserver's JSON wire form. mvproxy merges
// them by the same rule as aggregated discovery (docs/never-worse.md,
// "Merged documents"), from the same peer part.

export interface GroupVersionForDiscovery {
  groupVersion: string;
  version: string;
}

export interface ServerAddressByClientCIDR {
  clientCIDR: string;
  serverAddress: string;
}

/** `/api`: the core group's versions. */
export interface APIVersions {
  kind?: 'APIVersions';
  versions: string[];
  serverAddressByClientCIDRs?: ServerAddressByClientCIDR[] | null;
}

/** `/apis/{g}`, and each item of `/apis`. */
export interface APIGroup {
  kind?: 'APIGroup';
  apiVersion?: 'v1';
  name: string;
  versions: GroupVersionForDiscovery[];
  preferredVersion?: GroupVersionForDiscovery;
  serverAddressByClientCIDRs?: ServerAddressByClientCIDR[] | null;
}

/** `/apis`. */
export interface APIGroupList {
  kind?: 'APIGroupList';
  apiVersion?: 'v1';
  groups: APIGroup[];
}

/** One entry of an APIResourceList: a resource, or a subresource named `resource/subresource`. */
export interface APIResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  group?: string;
  version?: string;
  kind: string;
  verbs: string[] | null;
  shortNames?: string[];
  categories?: string[];
  storageVersionHash?: string;
}

/** `/api/v1`, `/apis/{g}/{v}`. */
export interface APIResourceList {
  kind?: 'APIResourceList';
  apiVersion?: 'v1';
  groupVersion: string;
  resources: APIResource[];
}

/** Which legacy document a path names (undefined: none). */
export type LegacyDocument =
  | { kind: 'versions' } // /api
  | { kind: 'group-list' } // /apis
  | { kind: 'group'; group: string } // /apis/{g}
  | { kind: 'resource-list'; group: string; version: string }; // /api/{v} (group ''), /apis/{g}/{v}
