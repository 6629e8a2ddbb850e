// Pure: which addresses the `kubernetes` Service's endpoints list, and the
// objects that say so (issue 21). Inputs are the operator's PublishPlan and
// the liveness the replicas agreed on (publicationLiveness.ts), nothing read
// from an API object: no Kubernetes object can change a published address.
//
// The objects, all in namespace default, identical whichever replica writes them:
// - Endpoints `kubernetes` (labelled skip-mirror, so the EndpointSlice
//   mirroring controller adds no slice of its own): one subset for the live
//   sidecars (their port), one for apiservers listed directly (theirs);
// - EndpointSlice `kubernetes`, the live sidecars: upstream's own slice of
//   that name, taken over, so nothing is left listing apiservers directly;
// - EndpointSlice `kubernetes-mvproxy-fallback`, the apiservers listed at their
//   own address because their sidecar is not live but they are ready (no
//   endpoints when there are none; absent when the config publishes no
//   apiserver address).
import {
  canonicalObject,
  CONTENT_DIGEST_ANNOTATION,
  contentDigest,
  endpointsAddresses,
  type ObservedObject,
  type PublishPlan,
  type ServiceObjectKind,
  type ServiceObjectRef,
} from '../model/publication.js';
import { compareStrings } from '../util/order.js';

export const SERVICE_NAMESPACE = 'default';
export const SERVICE_NAME = 'kubernetes';
export const SIDECAR_SLICE = 'kubernetes';
export const FALLBACK_SLICE = 'kubernetes-mvproxy-fallback';
/** The EndpointSlice controllers leave slices managed by someone else alone (a label value: no "/", as upstream's `endpointslice-controller.k8s.io`). */
export const MANAGED_BY = 'control-plane.mvproxy.dev';
/** The Service's port name: kube-proxy matches endpoints to it by name. */
export const PORT_NAME = 'https';

/** Which apiservers count as live now: through their sidecar, and by themselves. */
export interface Liveness {
  sidecars: ReadonlySet<string>;
  apiservers: ReadonlySet<string>;
}

/** Who is listed, and how. */
export interface Publication {
  /** At their sidecar's address, sorted by name. */
  viaSidecar: string[];
  /** At their own address: the sidecar is not live, the apiserver is ready. Sorted by name. */
  direct: string[];
}

/**
 * Every node whose sidecar is live, at its sidecar; every other node whose
 * apiserver is ready (and has a published address), at the apiserver.
 * Undefined when that lists nobody: the caller keeps what is published
 * (never an empty set).
 */
export function desiredPublication(plan: PublishPlan, live: Liveness): Publication | undefined {
  const viaSidecar: string[] = [];
  const direct: string[] = [];
  for (const t of [...plan.targets].sort((a, b) => compareStrings(a.name, b.name))) {
    if (live.sidecars.has(t.name)) viaSidecar.push(t.name);
    else if (t.apiserverIp !== undefined && plan.apiserverPort !== undefined && live.apiservers.has(t.name)) direct.push(t.name);
  }
  return viaSidecar.length + direct.length === 0 ? undefined : { viaSidecar, direct };
}

/** One object as mvproxy wants it. */
export interface DesiredObject {
  ref: ServiceObjectRef;
  /** What to create, or to replace with (add metadata.resourceVersion). */
  body: Record<string, unknown> & { metadata: Record<string, unknown> };
  /** canonicalObject() of body. */
  canonical: string;
}

function desiredObject(kind: ServiceObjectKind, name: string, labels: Record<string, string>, content: Record<string, unknown>): DesiredObject {
  const metadata: Record<string, unknown> = { name, namespace: SERVICE_NAMESPACE, labels };
  const body = { apiVersion: kind === 'Endpoints' ? 'v1' : 'discovery.k8s.io/v1', kind, metadata, ...content };
  const canonical = canonicalObject(kind, body);
  metadata['annotations'] = { [CONTENT_DIGEST_ANNOTATION]: contentDigest(canonical) };
  return { ref: { kind, name }, body, canonical };
}

function slice(name: string, family: string, ips: string[], port: number): DesiredObject {
  return desiredObject(
    'EndpointSlice',
    name,
    { 'endpointslice.kubernetes.io/managed-by': MANAGED_BY, 'kubernetes.io/service-name': SERVICE_NAME },
    {
      addressType: family,
      endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
      ports: [{ name: PORT_NAME, port, protocol: 'TCP' }],
    },
  );
}

/** The Endpoints, then the sidecar slice, then (when the config publishes apiservers) the fallback slice. */
export function desiredObjects(plan: PublishPlan, publication: Publication): DesiredObject[] {
  const byName = new Map(plan.targets.map((t) => [t.name, t]));
  const ips = (names: string[], pick: (t: PublishPlan['targets'][number]) => string | undefined): string[] =>
    names
      .map((n) => byName.get(n))
      .map((t) => (t ? pick(t) : undefined))
      .filter((ip): ip is string => ip !== undefined)
      .sort(compareStrings);
  const sidecarIps = ips(publication.viaSidecar, (t) => t.sidecarIp);
  const directIps = plan.apiserverPort === undefined ? [] : ips(publication.direct, (t) => t.apiserverIp);
  const subset = (list: string[], port: number) => ({ addresses: list.map((ip) => ({ ip })), ports: [{ name: PORT_NAME, port, protocol: 'TCP' }] });
  const subsets = [];
  if (sidecarIps.length > 0) subsets.push(subset(sidecarIps, plan.sidecarPort));
  if (directIps.length > 0 && plan.apiserverPort !== undefined) subsets.push(subset(directIps, plan.apiserverPort));
  const objects = [
    desiredObject('Endpoints', SERVICE_NAME, { 'endpointslice.kubernetes.io/skip-mirror': 'true' }, { subsets }),
    slice(SIDECAR_SLICE, plan.family, sidecarIps, plan.sidecarPort),
  ];
  if (plan.apiserverPort !== undefined) objects.push(slice(FALLBACK_SLICE, plan.family, directIps, plan.apiserverPort));
  return objects;
}

/**
 * How an object read from the API stands against what mvproxy wants:
 * `foreign` when its content is not what its digest annotation says mvproxy
 * (any replica) wrote, or it has none: someone else wrote it.
 */
export type Verdict = 'absent' | 'as-desired' | 'differs' | 'foreign';

export function judgeObserved(desired: DesiredObject, observed: ObservedObject | undefined): Verdict {
  if (!observed) return 'absent';
  if (observed.digest !== contentDigest(observed.canonical)) return 'foreign';
  return observed.canonical === desired.canonical ? 'as-desired' : 'differs';
}

/** Rounds that found the objects rewritten or deleted by someone else within this window, this many times, stop the writing. */
export const FOREIGN_WRITES_TO_STOP = 3;
export const FOREIGN_WRITE_WINDOW_MS = 120_000;

/**
 * Notices a writer mvproxy must not fight (an apiserver still on
 * `--endpoint-reconciler-type=lease` rewrites the objects every 10 s): the
 * first rewrite found (at takeover, upstream's own content) is corrected; the
 * threshold-th within the window means stop. Times are monotonic.
 */
export class ForeignWriteGuard {
  private readonly seen: number[] = [];

  constructor(
    private readonly threshold = FOREIGN_WRITES_TO_STOP,
    private readonly windowMs = FOREIGN_WRITE_WINDOW_MS,
  ) {}

  /** A round found a foreign write at `at`; true when that makes `threshold` within the window. */
  record(at: number): boolean {
    this.seen.push(at);
    return this.count(at) >= this.threshold;
  }

  count(now: number): number {
    while (this.seen.length > 0 && (this.seen[0] ?? now) <= now - this.windowMs) this.seen.shift();
    return this.seen.length;
  }
}

/** How each apiserver is listed in an Endpoints read from the API, and the addresses listed that no config entry publishes. */
export function publishedNow(plan: PublishPlan, endpointsCanonical: string): { byName: Map<string, 'sidecar' | 'apiserver'>; unknown: string[] } {
  const byName = new Map<string, 'sidecar' | 'apiserver'>();
  const unknown: string[] = [];
  for (const { ip, port, ready } of endpointsAddresses(endpointsCanonical)) {
    const sidecar = plan.targets.find((t) => t.sidecarIp === ip && port === plan.sidecarPort);
    const apiserver = plan.targets.find((t) => t.apiserverIp === ip && port === plan.apiserverPort);
    if (ready && sidecar) byName.set(sidecar.name, 'sidecar');
    else if (ready && apiserver && !byName.has(apiserver.name)) byName.set(apiserver.name, 'apiserver');
    else unknown.push(`${ip.includes(':') ? `[${ip}]` : ip}:${port}${ready ? '' : ' (not ready)'}`);
  }
  return { byName, unknown: unknown.sort(compareStrings) };
}

/** One line: who is listed and how. */
export function describePublication(p: Publication): string {
  const parts: string[] = [];
  if (p.viaSidecar.length > 0) parts.push(`${p.viaSidecar.join(', ')} through ${p.viaSidecar.length === 1 ? 'its sidecar' : 'their sidecars'}`);
  if (p.direct.length > 0) parts.push(`${p.direct.join(', ')} at ${p.direct.length === 1 ? 'its apiserver' : 'their apiservers'} directly`);
  return parts.join('; ');
}
