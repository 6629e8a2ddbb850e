// The planner: from the observed cluster state to one plan per sidecar.
// Pure and deterministic: same model, same plans (sorted, no clock reads).
import type { ApiserverObservation, ClusterModel } from '../model/cluster.js';
import { activeLocalOnlyGroupVersions } from '../model/liveness.js';
import type { PlannedApiserver, RequestDestination, ResourceRoute, ResourceRouteAction, SidecarPlan } from './plan.js';
import { SidecarDecider, type ResourceId } from './decider.js';
import { compareStrings } from '../util/order.js';
import type { PlannerOptions } from './options.js';

/** One plan per declared apiserver, sorted by node name. */
export function planSidecars(model: ClusterModel, opts: PlannerOptions): SidecarPlan[] {
  const localOnly = activeLocalOnlyGroupVersions(model, model.now);
  const draining = drainedApiservers(model, opts.draining);
  return [...model.apiservers]
    .sort((a, b) => compareStrings(a.endpoint.name, b.endpoint.name))
    .map((local) => planSidecar(local, model, localOnly, { ...opts, draining }));
}

/**
 * Who is drained: whom the operator drains, and every apiserver whose /readyz
 * fails while it is reachable. An apiserver fails /readyz while it starts and
 * during its shutdown delay, when it still serves but is about to stop
 * listening: moving its traffic then (as a drain does, never causing a 503)
 * makes its restart invisible to clients, with no operator involved.
 */
export function drainedApiservers(model: ClusterModel, operatorDrains: ReadonlySet<string> = new Set()): Set<string> {
  const drained = new Set(operatorDrains);
  for (const a of model.apiservers) if (a.reachable && a.ready === false) drained.add(a.endpoint.name);
  return drained;
}

/** The decider of one sidecar, with the planner's own inputs (what `explain` asks). */
export function sidecarDecider(model: ClusterModel, opts: PlannerOptions, node: string): SidecarDecider | undefined {
  const local = model.apiservers.find((a) => a.endpoint.name === node);
  return local === undefined ? undefined : new SidecarDecider(local, model, { ...opts, draining: drainedApiservers(model, opts.draining) });
}

function planSidecar(local: ApiserverObservation, model: ClusterModel, localOnly: ReadonlySet<string>, opts: Required<PlannerOptions>): SidecarPlan {
  const decider = new SidecarDecider(local, model, opts, localOnly);
  const routes: ResourceRoute[] = [];
  for (const id of decider.candidates()) {
    const { destination } = decider.resource(id);
    if (id.subresource !== undefined) {
      // Only where servers differ: a subresource that goes where its resource goes needs no route.
      const resourceDestination = decider.resource({ group: id.group, version: id.version, resource: id.resource }).destination;
      if (sameDestination(destination, resourceDestination)) continue;
    }
    // A subresource going "local" under a rerouted resource would need a local
    // route; it cannot arise, since serving a subresource means serving its
    // resource, everything not routed goes local anyway, and a drain moves a
    // resource only together with all its subresources.
    if (destination.kind !== 'local') routes.push(routeFor(id, destination));
  }
  routes.sort(compareRoutes);

  const plan: SidecarPlan = {
    node: local.endpoint.name,
    local: plannedApiserver(local),
    peers: model.apiservers
      .filter((a) => a !== local && observed(a))
      .sort((a, b) => compareStrings(a.endpoint.name, b.endpoint.name))
      .map(plannedApiserver),
    routes,
    groupDocuments: decider.groupDocuments(),
  };
  const fallback = decider.fallback();
  if (fallback) plan.fallback = fallback;
  return plan;
}

/**
 * Whether anything was ever seen of a declared apiserver: it holds (or held)
 * an identity lease, answered, or served something. One never seen can be in
 * no route, so it is no planned peer (each planned peer costs every sidecar
 * its clusters); it becomes one, clusters first, once it shows up.
 */
function observed(a: ApiserverObservation): boolean {
  return a.lease !== undefined || a.leaseGoneAt !== undefined || a.reachable || a.servedSet.length > 0;
}

function routeFor(id: ResourceId, action: ResourceRouteAction): ResourceRoute {
  const route: ResourceRoute = { group: id.group, version: id.version, resource: id.resource, action };
  if (id.subresource !== undefined) route.subresource = id.subresource;
  return route;
}

function plannedApiserver(observation: ApiserverObservation): PlannedApiserver {
  const { name, address } = observation.endpoint;
  return { name, address: { host: address.host, port: address.port } };
}

function sameDestination(a: RequestDestination, b: RequestDestination): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function compareRoutes(a: ResourceRoute, b: ResourceRoute): number {
  return (
    compareStrings(a.group, b.group) ||
    compareStrings(a.version, b.version) ||
    compareStrings(a.resource, b.resource) ||
    compareStrings(a.subresource ?? '', b.subresource ?? '')
  );
}
