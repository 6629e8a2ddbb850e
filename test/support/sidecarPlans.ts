// Representative sidecar plans for the translator's tests: node a, peers b
// and c, and the routes each plan exercises; planOf makes a plan of routes
// written as the plan's views show them (plan.ts resourceRoutesOf).
import type { GroupDocumentRoute, PlannedApiserver, RerouteToPeers, ResourceRoute, SidecarPlan } from '../../src/planner/plan.js';
import { orderedEntries } from '../../src/planner/planner.js';
import { LOCAL_RULES } from '../../src/planner/plan.js';

/** The name of the catch-all route to the local apiserver (translator/routes.ts): its rule, and the rules of what it takes there. */
export const LOCAL_ROUTE = ['not-a-resource', ...LOCAL_RULES].join(', ');

export function apiserver(name: string, host: string): PlannedApiserver {
  return { name, address: { host, port: 6443 } };
}

const A = apiserver('a', '10.0.0.1');
export const B = apiserver('b', '10.0.0.2');
export const C = apiserver('c', '10.0.0.3');

/** What a test plan is made of: routes to peers are reroute-to-peers, 503 routes unavailable-503. */
export interface PlanParts {
  node: string;
  local: PlannedApiserver;
  peers: PlannedApiserver[];
  routes?: readonly ResourceRoute[];
  groupDocuments?: readonly GroupDocumentRoute[];
  fallback?: RerouteToPeers;
}

/** The plan the planner would make of these decisions (planner.ts orderedEntries). */
export function planOf(parts: PlanParts): SidecarPlan {
  const { node, local, peers, routes = [], groupDocuments = [], fallback } = parts;
  const resources = routes.map(({ action, ...id }) => ({
    id,
    destination: action,
    rule: action.kind === 'peers' ? ('reroute-to-peers' as const) : ('unavailable-503' as const),
  }));
  return { node, local, peers, ...orderedEntries({ resources, groupDocuments, ...(fallback ? { fallback } : {}) }) };
}

export function plan(routes: ResourceRoute[], peers: PlannedApiserver[] = [B, C], groupDocuments: GroupDocumentRoute[] = []): SidecarPlan {
  return planOf({ node: 'a', local: A, peers, routes, groupDocuments });
}

export const NO_PEERS = plan([], []);

/** batch/v1 and storagemigration.k8s.io/v1 are served only by peers; the local apiserver serves batch/v2. */
export const REROUTES = plan(
  [
    { group: '', version: 'v1', resource: 'pods', subresource: 'ephemeralcontainers', action: { kind: 'peers', peers: ['b'] } },
    { group: 'batch', version: 'v1', resource: 'cronjobs', action: { kind: 'peers', peers: ['b', 'c'] } },
    { group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['b', 'c'] } },
    { group: 'storagemigration.k8s.io', version: 'v1', resource: 'storageversionmigrations', action: { kind: 'peers', peers: ['c'] } },
  ],
  [B, C],
  [
    { group: 'batch', version: 'v1', action: { kind: 'peers', peers: ['b', 'c'] } },
    { group: 'storagemigration.k8s.io', action: { kind: 'peers', peers: ['c'] } },
    { group: 'storagemigration.k8s.io', version: 'v1', action: { kind: 'peers', peers: ['c'] } },
  ],
);

/** Reroutes outside the core group only: core requests take the shortcut. */
export const NON_CORE_REROUTES = plan([{ group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['b', 'c'] } }]);

/** apps/v1 is served only by an unreachable peer. */
export const UNAVAILABLE = plan(
  [
    { group: 'apps', version: 'v1', resource: 'deployments', action: { kind: 'unavailable', servedBy: ['b'] } },
    { group: '', version: 'v1', resource: 'pods', subresource: 'resize', action: { kind: 'unavailable', servedBy: ['b', 'c'] } },
  ],
  [B, C],
  [
    { group: 'apps', action: { kind: 'unavailable', servedBy: ['b'] } },
    { group: 'apps', version: 'v1', action: { kind: 'unavailable', servedBy: ['b'] } },
  ],
);

/** The local apiserver is down: what it served goes to b, what it would have answered (and its 404s) to the fallback b and c. */
export const FALLBACK: SidecarPlan = planOf({
  node: 'a',
  local: A,
  peers: [B, C],
  routes: [{ group: '', version: 'v1', resource: 'pods', action: { kind: 'peers', peers: ['b'] } }],
  fallback: { kind: 'peers', peers: ['b', 'c'] },
});

/** Every grammar corner at once: namespaces and its subresources, resources named like verbs, nested subresource routes. */
export const CONTRACT = plan([
  { group: '', version: 'v1', resource: 'finalize', action: { kind: 'peers', peers: ['c'] } },
  { group: '', version: 'v1', resource: 'namespaces', action: { kind: 'peers', peers: ['b'] } },
  { group: '', version: 'v1', resource: 'namespaces', subresource: 'finalize', action: { kind: 'peers', peers: ['c'] } },
  { group: '', version: 'v1', resource: 'namespaces', subresource: 'other', action: { kind: 'unavailable', servedBy: ['c'] } },
  { group: '', version: 'v1', resource: 'pods', subresource: 'ephemeralcontainers', action: { kind: 'peers', peers: ['b', 'c'] } },
  { group: '', version: 'v1', resource: 'pods', subresource: 'status', action: { kind: 'unavailable', servedBy: ['c'] } },
  { group: '', version: 'v1', resource: 'status', action: { kind: 'peers', peers: ['b'] } },
  { group: '', version: 'v1', resource: 'watch', action: { kind: 'peers', peers: ['b', 'c'] } },
  { group: '', version: 'v1', resource: 'watch', subresource: 'log', action: { kind: 'peers', peers: ['c'] } },
  { group: 'apps', version: 'v1', resource: 'deployments', subresource: 'scale', action: { kind: 'unavailable', servedBy: ['b'] } },
  { group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['c'] } },
  { group: 'batch', version: 'v1', resource: 'jobs', subresource: 'status', action: { kind: 'peers', peers: ['b'] } },
]);

/** The longest built-in names: their route regexes must fit Envoy's RE2 program-size limit. */
export const LONG_NAMES = plan([
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1alpha1',
    resource: 'validatingadmissionpolicybindings',
    action: { kind: 'peers', peers: ['b'] },
  },
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1alpha1',
    resource: 'validatingadmissionpolicies',
    subresource: 'status',
    action: { kind: 'unavailable', servedBy: ['b'] },
  },
  {
    group: 'flowcontrol.apiserver.k8s.io',
    version: 'v1beta3',
    resource: 'prioritylevelconfigurations',
    subresource: 'status',
    action: { kind: 'peers', peers: ['b', 'c'] },
  },
  { group: '', version: 'v1', resource: 'namespaces', subresource: 'finalize', action: { kind: 'peers', peers: ['b'] } },
]);
