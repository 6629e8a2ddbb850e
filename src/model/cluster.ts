// The observed state of the control plane, reduced to plain data. Sources
// produce it; the planner reads it. Times are epoch milliseconds from an
// injected clock, so everything downstream is deterministic.
import type { ApiserverDiscovery } from './discovery.js';

/** A resource an apiserver serves; group "" is the core group. */
export interface ServedResource {
  group: string;
  version: string;
  resource: string;
  namespaced: boolean;
  verbs: string[];
  subresources: string[];
}

export interface NetworkAddress {
  host: string;
  port: number;
}

/** `host:port`, an IPv6 host in brackets, as URLs and dial strings want it. */
export function formatHost(address: NetworkAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}

/** What the operator declared about one apiserver (config file, not the REST API). */
export interface ApiserverEndpoint {
  /** Operator's name for it; also the xDS node id of the sidecar in front of it. */
  name: string;
  /** Its identity lease's `kubernetes.io/hostname` label: how leases are matched to it. */
  hostname: string;
  /** Where sidecars (its own and its peers') reach the apiserver itself. */
  address: NetworkAddress;
}

export interface LeaseObservation {
  /** Name of the identity lease (apiserver-<hash>). */
  name: string;
  holderIdentity: string;
  /**
   * When it was last renewed as far as the control plane can tell: the lease's
   * renewTime, but never later than when the control plane saw that renewal
   * (a future renewTime, or none, counts as the moment it was seen).
   */
  renewTime: number;
}

export interface ApiserverObservation {
  endpoint: ApiserverEndpoint;
  /** Present while its identity lease exists. */
  lease?: LeaseObservation;
  /** When the lease disappeared (clean shutdown or expiry), for the grace period. */
  leaseGoneAt?: number;
  /** Last good discovery; kept when a refresh fails, dropped when the lease is long gone. */
  discovery?: ApiserverDiscovery;
  discoveryEtag?: string;
  /** Derived from `discovery`. */
  servedSet: ServedResource[];
  /**
   * Whether it answered at the network level in the latest discovery poll
   * (any HTTP status, any body, usable or not): false only when a discovery
   * request got no answer (a connection, TLS or timeout failure), and before
   * the first poll. What it answered is data (`discovery`, `servedSet`),
   * never a verdict on this.
   */
  reachable: boolean;
  /**
   * When the polls began reading its discovery in full again: the first poll
   * whose `/api` and `/apis` both answered 200 or 304 after one that did not
   * (no answer, or an error status). Absent while they do not. Later than
   * `leaseGoneAt`: it stopped serving after its lease went and serves again,
   * and `discovery` is what it serves now (liveness.ts).
   */
  discoveryCurrentSince?: number;
  /**
   * Its /readyz, read with each discovery poll; absent until read. False while
   * it starts, and during its shutdown delay (--shutdown-delay-duration): it
   * still serves, but is on its way out, so traffic is moved off it as by a drain.
   */
  ready?: boolean;
  /** Its /version gitVersion (e.g. v1.37.2), as last read; kept while it is away. */
  version?: string;
}

/** A group-version that every apiserver serves from shared state (CRD or APIService). */
export interface LocalOnlyGroupVersion {
  group: string;
  version: string;
  source: 'CustomResourceDefinition' | 'APIService';
  /** Set when the object was deleted: stays excluded until this time. */
  excludedUntil?: number;
}

export interface ClusterModel {
  now: number;
  apiservers: ApiserverObservation[];
  localOnly: LocalOnlyGroupVersion[];
}

/** The model of declared apiservers about which nothing has been observed yet: no lease, no discovery, not known to be reachable. */
export function unobservedModel(endpoints: readonly ApiserverEndpoint[], now: number): ClusterModel {
  return {
    now,
    apiservers: endpoints.map((endpoint) => ({ endpoint: { ...endpoint, address: { ...endpoint.address } }, servedSet: [], reachable: false })),
    localOnly: [],
  };
}
