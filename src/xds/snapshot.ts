// What one Envoy (one xDS node) should have: its resources, by type URL, each
// type with a version derived from its content. Pure data and pure functions:
// the same resources always give the same versions, so re-planning the same
// state (or restarting mvproxy) never looks like a change to Envoy.
import { createHash } from 'node:crypto';
import type { Cluster } from '../generated/envoy/config/cluster/v3/Cluster.js';
import type { ClusterLoadAssignment } from '../generated/envoy/config/endpoint/v3/ClusterLoadAssignment.js';
import type { Listener } from '../generated/envoy/config/listener/v3/Listener.js';
import type { RouteConfiguration } from '../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { Secret } from '../generated/envoy/extensions/transport_sockets/tls/v3/Secret.js';
import type { TypedExtensionConfig } from '../generated/envoy/config/core/v3/TypedExtensionConfig.js';
import { compareStrings } from '../util/order.js';

/** v3 type URLs of the resources mvproxy serves over ADS. */
export const TYPE_URL = {
  cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  endpoint: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  route: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  secret: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
  extensionConfig: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig',
} as const;

export type ResourceTypeUrl = (typeof TYPE_URL)[keyof typeof TYPE_URL];

/**
 * Order of a push: clusters and their endpoints before the listeners and
 * routes that use them (Envoy's xDS "eventual consistency" rules). Secrets
 * (SDS: certificate files named on the sidecar's host) are asked for by name
 * once Envoy meets a cluster or listener that names them; each waits (warms)
 * until its secrets arrive. The filters' configurations (ECDS: the filter
 * module with the identity filter's configuration, the documents) go after
 * the routes of a change that adds routes, and before them when it only drops
 * routes (xds/changeOrder.ts, servers/adsStream.ts).
 */
export const PUSH_ORDER: readonly ResourceTypeUrl[] = [
  TYPE_URL.cluster,
  TYPE_URL.endpoint,
  TYPE_URL.secret,
  TYPE_URL.listener,
  TYPE_URL.route,
  TYPE_URL.extensionConfig,
];

/** Types whose SotW reply is always the full set, whatever names Envoy asks for. */
export const WILDCARD_TYPES: ReadonlySet<ResourceTypeUrl> = new Set([TYPE_URL.cluster, TYPE_URL.listener]);

export type ClusterResource = Cluster & { '@type': typeof TYPE_URL.cluster };
export type EndpointResource = ClusterLoadAssignment & { '@type': typeof TYPE_URL.endpoint };
export type ListenerResource = Listener & { '@type': typeof TYPE_URL.listener };
export type RouteResource = RouteConfiguration & { '@type': typeof TYPE_URL.route };
export type SecretResource = Secret & { '@type': typeof TYPE_URL.secret };
export type ExtensionConfigResource = TypedExtensionConfig & { '@type': typeof TYPE_URL.extensionConfig };
/** A resource as a plain object carrying its '@type', ready to be sent as an Any. */
export type Resource = ClusterResource | EndpointResource | ListenerResource | RouteResource | SecretResource | ExtensionConfigResource;

export interface TypeSnapshot {
  /** Content hash of the resources of this type. */
  readonly version: string;
  /** By resource name, in name order. */
  readonly resources: ReadonlyMap<string, Resource>;
}

export interface Snapshot {
  readonly types: Readonly<Record<ResourceTypeUrl, TypeSnapshot>>;
}

export interface SnapshotInput {
  clusters?: readonly Cluster[];
  endpoints?: readonly ClusterLoadAssignment[];
  listeners?: readonly Listener[];
  routes?: readonly RouteConfiguration[];
  secrets?: readonly Secret[];
  extensionConfigs?: readonly TypedExtensionConfig[];
}

export function isResourceTypeUrl(value: string): value is ResourceTypeUrl {
  return (PUSH_ORDER as readonly string[]).includes(value);
}

/** Fully qualified proto message name of a type URL. */
export function messageName(url: ResourceTypeUrl): string {
  return url.slice(url.lastIndexOf('/') + 1);
}

/** The name Envoy knows a resource by (ClusterLoadAssignment uses cluster_name). */
export function resourceName(resource: Resource): string {
  const name = resource['@type'] === TYPE_URL.endpoint ? resource.cluster_name : resource.name;
  return name ?? '';
}

/**
 * JSON with object keys sorted and undefined members dropped, so equal content
 * always serializes to the same string. Bytes become base64, bigints and
 * non-finite numbers strings.
 */
function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalize(value));
}

/** Base64 of byte fields, by buffer: every sidecar gets the same filter module. Weak: gone with the buffers. */
const base64s = new WeakMap<Uint8Array, string>();

function base64Of(bytes: Uint8Array): string {
  let text = base64s.get(bytes);
  if (text === undefined) {
    text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
    base64s.set(bytes, text);
  }
  return text;
}

type Canonical = null | boolean | number | string | Canonical[] | { [key: string]: Canonical };

function canonicalize(value: unknown): Canonical {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'boolean':
    case 'string':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'bigint':
      return value.toString();
    case 'object':
      break;
    default:
      return null; // functions, symbols: not content
  }
  if (value instanceof Uint8Array) return { $bytes: base64Of(value) };
  if (Array.isArray(value)) return value.map((item: unknown) => canonicalize(item));
  const out: { [key: string]: Canonical } = {};
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record).sort()) {
    const member = record[key];
    if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
    out[key] = canonicalize(member);
  }
  return out;
}

/**
 * Each resource's hash, and its '@type'-tagged copy, by the object it was
 * made from: sidecars share many resources (the translator hands the same
 * cluster objects to every sidecar of a reconcile), so each is copied and
 * hashed once however many snapshots hold it. Weak: gone with the objects.
 */
const digests = new WeakMap<Resource, string>();
const taggedCopies = new WeakMap<object, Resource>();

/** SHA-256 (hex) of a resource's canonical JSON; a type's version is 64 bits of SHA-256 over its resources' digests in name order. */
function resourceDigest(resource: Resource): string {
  let digest = digests.get(resource);
  if (digest === undefined) {
    digest = createHash('sha256').update(canonicalJson(resource)).digest('hex');
    digests.set(resource, digest);
  }
  return digest;
}

function tagged<R extends Resource>(input: object, make: () => R): R {
  const known = taggedCopies.get(input);
  if (known) return known as R;
  const copy = make();
  taggedCopies.set(input, copy);
  return copy;
}

function typeSnapshot<T extends Resource>(url: ResourceTypeUrl, items: readonly T[]): TypeSnapshot {
  const byName = new Map<string, T>();
  for (const item of items) {
    const name = resourceName(item);
    // A nameless or duplicated resource is a translator bug; Envoy would reject it anyway.
    if (name === '') throw new Error(`snapshot: a ${messageName(url)} has no name`);
    if (byName.has(name)) throw new Error(`snapshot: duplicate ${messageName(url)} "${name}"`);
    byName.set(name, item);
  }
  // The translator hands most types over sorted already: check before sorting (hundreds of clusters per node).
  const names = [...byName.keys()];
  const inOrder = names.every((name, i) => i === 0 || compareStrings(names[i - 1] ?? '', name) < 0);
  const sorted: ReadonlyMap<string, Resource> = inOrder ? byName : new Map<string, Resource>([...byName.entries()].sort(([a], [b]) => compareStrings(a, b)));
  // Resources are a set for Envoy: hash them in name order, not input order.
  const hash = createHash('sha256');
  for (const resource of sorted.values()) hash.update(resourceDigest(resource));
  return { version: hash.digest('hex').slice(0, 16), resources: sorted };
}

/**
 * Builds a snapshot. Inputs are copied shallowly and tagged with '@type'
 * (once per input object, whatever the number of snapshots it goes into);
 * callers must not mutate them afterwards (the versions would go stale).
 */
export function makeSnapshot(input: SnapshotInput): Snapshot {
  return {
    types: {
      [TYPE_URL.cluster]: typeSnapshot(
        TYPE_URL.cluster,
        (input.clusters ?? []).map((r) => tagged(r, (): ClusterResource => ({ ...r, '@type': TYPE_URL.cluster }))),
      ),
      [TYPE_URL.endpoint]: typeSnapshot(
        TYPE_URL.endpoint,
        (input.endpoints ?? []).map((r) => tagged(r, (): EndpointResource => ({ ...r, '@type': TYPE_URL.endpoint }))),
      ),
      [TYPE_URL.listener]: typeSnapshot(
        TYPE_URL.listener,
        (input.listeners ?? []).map((r) => tagged(r, (): ListenerResource => ({ ...r, '@type': TYPE_URL.listener }))),
      ),
      [TYPE_URL.route]: typeSnapshot(
        TYPE_URL.route,
        (input.routes ?? []).map((r) => tagged(r, (): RouteResource => ({ ...r, '@type': TYPE_URL.route }))),
      ),
      [TYPE_URL.secret]: typeSnapshot(
        TYPE_URL.secret,
        (input.secrets ?? []).map((r): SecretResource => ({ ...r, '@type': TYPE_URL.secret })),
      ),
      [TYPE_URL.extensionConfig]: typeSnapshot(
        TYPE_URL.extensionConfig,
        (input.extensionConfigs ?? []).map((r) => tagged(r, (): ExtensionConfigResource => ({ ...r, '@type': TYPE_URL.extensionConfig }))),
      ),
    },
  };
}

/** Version of each type, e.g. for status pages and for waiting on ACKs. */
export function snapshotVersions(snapshot: Snapshot): Record<ResourceTypeUrl, string> {
  return {
    [TYPE_URL.cluster]: snapshot.types[TYPE_URL.cluster].version,
    [TYPE_URL.endpoint]: snapshot.types[TYPE_URL.endpoint].version,
    [TYPE_URL.listener]: snapshot.types[TYPE_URL.listener].version,
    [TYPE_URL.route]: snapshot.types[TYPE_URL.route].version,
    [TYPE_URL.secret]: snapshot.types[TYPE_URL.secret].version,
    [TYPE_URL.extensionConfig]: snapshot.types[TYPE_URL.extensionConfig].version,
  };
}

/**
 * The resources of a type a SotW reply carries: the full set for CDS and LDS
 * and for a request that names nothing (or '*'), else the named ones that exist.
 */
export function selectResources(snapshot: Snapshot, url: ResourceTypeUrl, names: readonly string[]): Resource[] {
  const { resources } = snapshot.types[url];
  if (WILDCARD_TYPES.has(url) || names.length === 0 || names.includes('*')) return [...resources.values()];
  const picked: Resource[] = [];
  for (const name of [...new Set(names)].sort()) {
    const resource = resources.get(name);
    if (resource) picked.push(resource);
  }
  return picked;
}

/**
 * EDS names Envoy will ask for once it has this snapshot's clusters (an EDS
 * cluster's service_name, else its name), limited to those the snapshot has.
 */
export function expectedEdsNames(snapshot: Snapshot): string[] {
  const names = new Set<string>();
  for (const resource of snapshot.types[TYPE_URL.cluster].resources.values()) {
    if (resource['@type'] !== TYPE_URL.cluster) continue;
    if (resource.type !== 'EDS' && resource.type !== 3) continue;
    const name = resource.eds_cluster_config?.service_name || resource.name || '';
    if (snapshot.types[TYPE_URL.endpoint].resources.has(name)) names.add(name);
  }
  return [...names].sort();
}
