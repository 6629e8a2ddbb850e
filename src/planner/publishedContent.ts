// Pure: what the `kubernetes` Service's objects hold, as read from the API,
// against the operator's PublishPlan (issue 29): who wrote an object's content
// (this replica's wish, another replica's, an apiserver still on the lease
// reconciler, or someone else), and what kube-proxy is given (every
// EndpointSlice labelled kubernetes.io/service-name=kubernetes, the Endpoints
// compared with them). Only reads: no content read here ever becomes a
// published address (publishedEndpoints.ts makes those from the plan alone).
import {
  contentDigest,
  endpointsAddresses,
  sliceAddresses,
  type EndpointsAddress,
  type ListedSlice,
  type ObservedObject,
  type PublishPlan,
  type ServiceObjectKind,
} from '../model/publication.js';
import { compareStrings } from '../util/order.js';
import { type DesiredObject, sharedWithApiservers } from './publishedEndpoints.js';

/**
 * How one object read from the API stands:
 * - `as-desired`: what this replica would write;
 * - `absent`: it does not exist (mvproxy never creates it: the operator does);
 * - `mvproxy`: content a replica wrote (its digest annotation matches), other
 *   than this replica's wish (another liveness view);
 * - `lease`: someone else's content listing only configured apiservers'
 *   addresses, at their port or the sidecars' (leaseAddressOf): what an
 *   apiserver on `--endpoint-reconciler-type=lease` writes, the no-proxy
 *   state (only in upstream's objects, the ones such an apiserver writes);
 * - `foreign`: anything else someone else wrote (`outside`: the addresses
 *   the configuration does not name).
 */
export type ContentVerdict =
  | { kind: 'as-desired' }
  | { kind: 'absent' }
  | { kind: 'mvproxy' }
  | { kind: 'lease'; apiservers: string[] }
  | { kind: 'foreign'; outside: string[] };

/** `ip:port`, IPv6 in brackets. */
export function formatAddress(ip: string, port: number): string {
  return `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
}

export function addressesOf(kind: ServiceObjectKind, canonical: string): EndpointsAddress[] {
  return kind === 'Endpoints' ? endpointsAddresses(canonical) : sliceAddresses(canonical);
}

export type AddressKind = 'sidecar' | 'apiserver' | 'other';

/** Which configured address `ip:port` is, and of which apiserver. */
export function classifyAddress(plan: PublishPlan, ip: string, port: number): { kind: AddressKind; name?: string } {
  const sidecar = plan.targets.find((t) => t.sidecarIp === ip && port === plan.sidecarPort);
  if (sidecar) return { kind: 'sidecar', name: sidecar.name };
  const apiserver = plan.targets.find((t) => t.apiserverIp === ip && port === plan.apiserverPort);
  if (apiserver) return { kind: 'apiserver', name: apiserver.name };
  return { kind: 'other' };
}

export function judgeContent(plan: PublishPlan, desired: DesiredObject, observed: ObservedObject | undefined): ContentVerdict {
  if (!observed) return { kind: 'absent' };
  if (observed.canonical === desired.canonical) return { kind: 'as-desired' };
  if (observed.digest === contentDigest(observed.canonical)) return { kind: 'mvproxy' };
  const listed = addressesOf(desired.ref.kind, observed.canonical).map((a) => ({
    apiserver: leaseAddressOf(plan, a.ip, a.port),
    at: formatAddress(a.ip, a.port),
  }));
  const outside = [...new Set(listed.filter((a) => a.apiserver === undefined).map((a) => a.at))].sort(compareStrings);
  // Only upstream's objects get a lease reconciler's content; in mvproxy's own slices any other writer is foreign.
  if (listed.length > 0 && outside.length === 0 && sharedWithApiservers(desired.ref))
    return { kind: 'lease', apiservers: [...new Set(listed.map((a) => a.apiserver ?? ''))].sort(compareStrings) };
  return { kind: 'foreign', outside };
}

/**
 * The apiserver whose lease reconciler may have written `ip:port`: a
 * configured apiserver's address at its own port, or at the sidecars' port,
 * which its periodic pass keeps (it corrects addresses, and the port only when
 * it makes the object anew or removes itself: kubernetes
 * pkg/controlplane/reconcilers/lease.go), so on a node whose sidecar shares
 * the apiserver's address it leaves the sidecar's port in place.
 */
function leaseAddressOf(plan: PublishPlan, ip: string, port: number): string | undefined {
  if (port !== plan.apiserverPort && port !== plan.sidecarPort) return undefined;
  return plan.targets.find((t) => t.apiserverIp === ip)?.name;
}

/** One EndpointSlice of the Service as kube-proxy reads it. */
export interface SliceView {
  name: string;
  addressType: string;
  /** `ip:port`, `(not ready)` appended to endpoints kube-proxy skips. */
  addresses: string[];
  /** Its content carries a matching mvproxy digest: a replica wrote it. */
  writtenByMvproxy: boolean;
  managedBy: string;
}

export interface ServiceView {
  /** How each apiserver is listed by the slices (ready endpoints); an apiserver listed at its sidecar is `sidecar`. */
  byName: Map<string, 'sidecar' | 'apiserver'>;
  /** Addresses the slices list that the configuration does not publish, sorted. */
  unknown: string[];
  slices: SliceView[];
  /** Ready addresses the slices give kube-proxy, distinct, by kind. */
  counts: Record<AddressKind, number>;
  /** How the Endpoints differ from the slices (ready addresses); '' when they agree. */
  endpointsMismatch: string;
}

/** What kube-proxy is given: every slice of the Service, and the Endpoints compared with them. */
export function serviceView(plan: PublishPlan, slices: readonly ListedSlice[], endpointsCanonical: string | undefined): ServiceView {
  const byName = new Map<string, 'sidecar' | 'apiserver'>();
  const unknown = new Set<string>();
  const ready = new Set<string>();
  const counts: Record<AddressKind, number> = { sidecar: 0, apiserver: 0, other: 0 };
  const views: SliceView[] = [];
  for (const s of [...slices].sort((a, b) => compareStrings(a.name, b.name))) {
    const listed = sliceAddresses(s.canonical);
    for (const a of listed) {
      const at = formatAddress(a.ip, a.port);
      const c = classifyAddress(plan, a.ip, a.port);
      if (c.kind === 'other') unknown.add(`${at}${a.ready ? '' : ' (not ready)'}`);
      if (!a.ready) continue;
      if (!ready.has(at)) counts[c.kind]++;
      ready.add(at);
      if (c.name !== undefined && (c.kind === 'sidecar' || !byName.has(c.name))) byName.set(c.name, c.kind === 'sidecar' ? 'sidecar' : 'apiserver');
    }
    const addressType = (JSON.parse(s.canonical) as { addressType?: string }).addressType ?? '';
    views.push({
      name: s.name,
      addressType,
      addresses: listed.map((a) => `${formatAddress(a.ip, a.port)}${a.ready ? '' : ' (not ready)'}`).sort(compareStrings),
      writtenByMvproxy: s.digest === contentDigest(s.canonical),
      managedBy: s.managedBy,
    });
  }
  return { byName, unknown: [...unknown].sort(compareStrings), slices: views, counts, endpointsMismatch: endpointsMismatch(ready, endpointsCanonical) };
}

function endpointsMismatch(sliceReady: ReadonlySet<string>, endpointsCanonical: string | undefined): string {
  if (endpointsCanonical === undefined) return sliceReady.size === 0 ? '' : 'there is no Endpoints kubernetes';
  const inEndpoints = new Set(
    endpointsAddresses(endpointsCanonical)
      .filter((a) => a.ready)
      .map((a) => formatAddress(a.ip, a.port)),
  );
  const onlyEndpoints = [...inEndpoints].filter((a) => !sliceReady.has(a)).sort(compareStrings);
  const onlySlices = [...sliceReady].filter((a) => !inEndpoints.has(a)).sort(compareStrings);
  const parts = [
    ...(onlyEndpoints.length > 0 ? [`the Endpoints list ${onlyEndpoints.join(', ')} that no EndpointSlice does`] : []),
    ...(onlySlices.length > 0 ? [`the EndpointSlices list ${onlySlices.join(', ')} that the Endpoints do not`] : []),
  ];
  return parts.join('; ');
}
