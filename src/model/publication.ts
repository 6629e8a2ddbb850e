// The `kubernetes` Service's endpoints as mvproxy publishes them (issue 21):
// what the operator's config says may be published, what one replica tells
// the others it observed (the liveness record's entry), and the canonical
// form of the Endpoints and EndpointSlice objects, read or about to be
// written, so replicas and readers compare content, not bytes.
//
// Every published address comes from the operator's config file
// (serve/configPublish.ts makes the PublishPlan), never from the Kubernetes
// API: anything an ordinary user can write must not be able to send the
// cluster's pods somewhere else.
import { createHash } from 'node:crypto';
import { isRecord } from '../util/json.js';
import { compareStrings } from '../util/order.js';

export type AddressFamily = 'IPv4' | 'IPv6';

/** One apiserver's node as it may be published. */
export interface PublishTarget {
  /** The apiserver's name in the config. */
  name: string;
  /** Where pods reach its sidecar (an IP address, canonical form). */
  sidecarIp: string;
  /** Where pods reach the apiserver itself while its sidecar is not live; absent: never published directly. */
  apiserverIp?: string;
}

/** Everything that may ever be published, from the operator's config only. */
export interface PublishPlan {
  /** Every published address is of this family (the slices' addressType). */
  family: AddressFamily;
  /** Every sidecar's published port (an EndpointSlice has one port for all its endpoints). */
  sidecarPort: number;
  /** Every apiserver's published port; absent when no apiserver has a published address. */
  apiserverPort?: number;
  /** Sorted by name. */
  targets: PublishTarget[];
}

/**
 * One replica's entry in the liveness record: for each apiserver, the round
 * of this replica's last passing probe through its sidecar and of the
 * apiserver itself. A reader counts a renewal when it sees a value change;
 * values are never compared with its own clock.
 */
export interface LivenessReport {
  replica: string;
  /** Random per process: a restarted replica's rounds start again. */
  incarnation: string;
  /** Incremented at every probe round, passing or not. */
  round: number;
  sidecars: Record<string, number>;
  apiservers: Record<string, number>;
  /** planDigest() of the writer's PublishPlan: replicas whose configurations differ notice it. Absent from older replicas' entries. */
  plan?: string;
}

/**
 * A short digest of a PublishPlan (its fields in a fixed order): two replicas
 * with the same digest would write the same objects from the same liveness.
 */
export function planDigest(plan: PublishPlan): string {
  const fixed = {
    family: plan.family,
    sidecarPort: plan.sidecarPort,
    apiserverPort: plan.apiserverPort ?? null,
    targets: [...plan.targets]
      .sort((a, b) => compareStrings(a.name, b.name))
      .map((t) => ({ name: t.name, sidecarIp: t.sidecarIp, apiserverIp: t.apiserverIp ?? null })),
  };
  return createHash('sha256').update(JSON.stringify(fixed)).digest('hex').slice(0, 12);
}

export type ServiceObjectKind = 'Endpoints' | 'EndpointSlice';

export interface ServiceObjectRef {
  kind: ServiceObjectKind;
  /** In namespace default. */
  name: string;
}

/** An object as read from the API, reduced to what mvproxy decides. */
export interface ObservedObject {
  resourceVersion: string;
  /** canonicalObject() of it. */
  canonical: string;
  /** The CONTENT_DIGEST_ANNOTATION's value, when it has one. */
  digest?: string;
}

/** An EndpointSlice of the Service as listed (label kubernetes.io/service-name=kubernetes), whoever wrote it. */
export interface ListedSlice extends ObservedObject {
  name: string;
  /** Its endpointslice.kubernetes.io/managed-by label ('' when none). */
  managedBy: string;
}

/**
 * The digest of the canonical content mvproxy wrote into the object. An
 * apiserver still on the lease reconciler (or anyone else) that rewrites the
 * object keeps or drops annotations, but cannot make this match what it wrote.
 */
export const CONTENT_DIGEST_ANNOTATION = 'mvproxy.dev/published-content';

export function contentDigest(canonical: string): string {
  return createHash('sha256').update(canonical).digest('hex').slice(0, 32);
}

/** One address and port, as read from a canonical Endpoints. */
export interface EndpointsAddress {
  ip: string;
  port: number;
  ready: boolean;
}

interface CanonicalPort {
  name: string;
  port: number;
  protocol: string;
}

function strings(value: unknown, pick: (item: unknown) => unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value
    .map(pick)
    .filter((s): s is string => typeof s === 'string')
    .sort(compareStrings);
}

function ports(value: unknown): CanonicalPort[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter(isRecord)
    .map((p) => ({
      name: typeof p['name'] === 'string' ? p['name'] : '',
      port: typeof p['port'] === 'number' ? p['port'] : 0,
      protocol: typeof p['protocol'] === 'string' ? p['protocol'] : 'TCP',
    }))
    .sort((a, b) => compareStrings(JSON.stringify(a), JSON.stringify(b)));
}

function sortedByJson<T>(items: T[]): T[] {
  return items
    .map((item) => [JSON.stringify(item), item] as const)
    .sort(([a], [b]) => compareStrings(a, b))
    .map(([, item]) => item);
}

function labels(raw: Record<string, unknown>): Record<string, string> {
  const metadata = isRecord(raw['metadata']) ? raw['metadata'] : {};
  const found = isRecord(metadata['labels']) ? metadata['labels'] : {};
  const out: Record<string, string> = {};
  for (const key of Object.keys(found).sort(compareStrings)) {
    const value = found[key];
    if (typeof value === 'string') out[key] = value;
  }
  return out;
}

/**
 * The fields mvproxy decides of an Endpoints or EndpointSlice (labels, and
 * addresses, readiness and ports), sorted, as JSON: the same for the same
 * content however it is ordered or defaulted. Other fields (hostnames, node
 * names, target references) are not mvproxy's and not compared.
 */
export function canonicalObject(kind: ServiceObjectKind, raw: unknown): string {
  const object = isRecord(raw) ? raw : {};
  if (kind === 'Endpoints') {
    const subsets = Array.isArray(object['subsets']) ? object['subsets'].filter(isRecord) : [];
    const ip = (a: unknown): unknown => (isRecord(a) ? a['ip'] : undefined);
    return JSON.stringify({
      labels: labels(object),
      subsets: sortedByJson(
        subsets.map((s) => ({ addresses: strings(s['addresses'], ip), notReadyAddresses: strings(s['notReadyAddresses'], ip), ports: ports(s['ports']) })),
      ),
    });
  }
  const endpoints = Array.isArray(object['endpoints']) ? object['endpoints'].filter(isRecord) : [];
  return JSON.stringify({
    labels: labels(object),
    addressType: typeof object['addressType'] === 'string' ? object['addressType'] : '',
    ports: ports(object['ports']),
    endpoints: sortedByJson(
      endpoints.map((e) => {
        const ready = isRecord(e['conditions']) ? e['conditions']['ready'] : undefined;
        return { addresses: strings(e['addresses'], (a) => a), ready: typeof ready === 'boolean' ? ready : null };
      }),
    ),
  });
}

/** Every address and port of a canonical EndpointSlice (canonicalObject('EndpointSlice', ...)): each endpoint's addresses on each port. */
export function sliceAddresses(canonical: string): EndpointsAddress[] {
  const parsed = JSON.parse(canonical) as { ports?: CanonicalPort[]; endpoints?: Array<{ addresses: string[]; ready: boolean | null }> };
  // An endpoint whose ready condition is unset counts as ready (the EndpointSlice API's rule).
  return (parsed.ports ?? []).flatMap((p) =>
    (parsed.endpoints ?? []).flatMap((e) => e.addresses.map((ip) => ({ ip, port: p.port, ready: e.ready !== false }))),
  );
}

/** Every address and port of a canonical Endpoints (canonicalObject('Endpoints', ...)), in its order. */
export function endpointsAddresses(canonical: string): EndpointsAddress[] {
  const parsed = JSON.parse(canonical) as { subsets?: Array<{ addresses: string[]; notReadyAddresses: string[]; ports: CanonicalPort[] }> };
  return (parsed.subsets ?? []).flatMap((s) =>
    s.ports.flatMap((p) => [
      ...s.addresses.map((ip) => ({ ip, port: p.port, ready: true })),
      ...s.notReadyAddresses.map((ip) => ({ ip, port: p.port, ready: false })),
    ]),
  );
}
