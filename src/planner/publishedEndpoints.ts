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
// - EndpointSlice `kubernetes-mvproxy-sidecars`, the same sidecars in a slice
//   no apiserver writes: the last apiserver leaving the lease reconciler
//   empties the two objects above as it stops (kubernetes
//   pkg/controlplane/reconcilers/lease.go), and kube-proxy, which serves the
//   union of a Service's slices, still finds the sidecars here until a
//   replica's next round writes them back;
// - EndpointSlice `kubernetes-mvproxy-fallback`, the apiservers listed at their
//   own address because their sidecar is not live but they are ready (no
//   endpoints when there are none; absent when the config publishes no
//   apiserver address).
import {
  canonicalObject,
  CONTENT_DIGEST_ANNOTATION,
  contentDigest,
  type PublishPlan,
  type ServiceObjectKind,
  type ServiceObjectRef,
} from '../model/publication.js';
import { compareStrings } from '../util/order.js';

export const SERVICE_NAMESPACE = 'default';
export const SERVICE_NAME = 'kubernetes';
export const SIDECAR_SLICE = 'kubernetes';
export const OWN_SIDECAR_SLICE = 'kubernetes-mvproxy-sidecars';
export const FALLBACK_SLICE = 'kubernetes-mvproxy-fallback';

/** Upstream's objects, which an apiserver on the lease reconciler writes too; the others are mvproxy's alone. */
export function sharedWithApiservers(ref: ServiceObjectRef): boolean {
  return ref.name === SERVICE_NAME;
}
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

/** The Endpoints, then the sidecar slices, then (when the config publishes apiservers) the fallback slice. */
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
    slice(OWN_SIDECAR_SLICE, plan.family, sidecarIps, plan.sidecarPort),
  ];
  if (plan.apiserverPort !== undefined) objects.push(slice(FALLBACK_SLICE, plan.family, directIps, plan.apiserverPort));
  return objects;
}

/**
 * The objects as the operator creates them before any replica publishes
 * (mvproxy never creates one: least privilege, docs/operating.md): listing
 * nothing, with mvproxy's digest, so the first replica's write is no foreign
 * write. The kubeadm switch creates mvproxy's own slices (the others exist
 * from the apiservers' lease reconciler).
 */
export function operatorObjects(plan: PublishPlan): DesiredObject[] {
  return desiredObjects(plan, { viaSidecar: [], direct: [] });
}

/** One line: who is listed and how. */
export function describePublication(p: Publication): string {
  const parts: string[] = [];
  if (p.viaSidecar.length > 0) parts.push(`${p.viaSidecar.join(', ')} through ${p.viaSidecar.length === 1 ? 'its sidecar' : 'their sidecars'}`);
  if (p.direct.length > 0) parts.push(`${p.direct.join(', ')} at ${p.direct.length === 1 ? 'its apiserver' : 'their apiservers'} directly`);
  return parts.join('; ');
}
