// The planner: from the observed cluster state to one plan per sidecar.
// Pure and deterministic: same model, same plans (sorted, no clock reads).
import type { ApiserverObservation, ClusterModel, ServedResource } from '../model/cluster.js';
import type { DroppedDiscoveryEntry } from '../model/discovery.js';
import { groupDocumentOf, mergedDocumentOf, type RequestInfo } from '../model/requestInfo.js';
import { activeLocalOnlyGroupVersions, groupVersionKey, peerStanding, type PeerStanding } from '../model/liveness.js';
import {
  HEALTH_PATH_PREFIXES,
  type Decision,
  type GroupDocumentRoute,
  type RerouteToPeers,
  type PlannedApiserver,
  type RequestDestination,
  type ResourceRoute,
  type ResourceRouteAction,
  type SidecarPlan,
} from './plan.js';
import { compareStrings } from '../util/order.js';

export interface PlannerOptions {
  /**
   * How long a peer whose identity lease disappeared still counts as serving
   * what it served: its resources answer 503 rather than 404 meanwhile (unavailable-503).
   */
  departedGraceMs: number;
  /**
   * Apiservers an operator is draining before taking them down (their
   * upgrade): their own sidecars send what peers also serve to those peers,
   * and no sidecar chooses them while another available apiserver serves the
   * same thing. Never a 503 because of a drain: what only drained apiservers
   * serve still goes to them while they are up. Apiservers that fail /readyz
   * are drained too (drainedApiservers).
   */
  draining?: ReadonlySet<string>;
}

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

/**
 * Where a request goes under a plan: the route of its subresource, else of its
 * resource (or its discovery document's), else the local apiserver, or the
 * plan's fallback peers while the local apiserver is unavailable (never for
 * its health endpoints). A request already proxied by a peer is always served
 * locally (proxied-once).
 */
export function destinationForRequest(plan: SidecarPlan, request: RequestInfo, options: { alreadyProxied?: boolean } = {}): RequestDestination {
  if (options.alreadyProxied) return { kind: 'local' };
  const fallback: RequestDestination = plan.fallback && !isHealthPath(request.path) ? plan.fallback : { kind: 'local' };
  if (!request.isResourceRequest || request.resource === undefined) {
    const document = groupDocumentOf(request.path);
    const route = document && plan.groupDocuments.find((d) => d.group === document.group && d.version === document.version);
    return route ? route.action : fallback;
  }
  const matches = (route: ResourceRoute, subresource: string | undefined): boolean =>
    route.group === request.group && route.version === request.version && route.resource === request.resource && route.subresource === subresource;
  const route =
    (request.subresource !== undefined ? plan.routes.find((r) => matches(r, request.subresource)) : undefined) ??
    plan.routes.find((r) => matches(r, undefined));
  return route ? route.action : fallback;
}

function isHealthPath(path: string): boolean {
  const bare = path.replace(/[?#].*$/, '');
  return HEALTH_PATH_PREFIXES.some((prefix) => bare === prefix || bare.startsWith(`${prefix}/`));
}

/**
 * What the control plane does not know, or doubts, about what the local
 * apiserver serves. Everything while its served set is empty: a kube-apiserver
 * always serves something, so an empty set means no usable discovery was read
 * (none yet, only unreadable documents, or nothing routable in them). Else
 * the entries of its discovery that were dropped (malformed, or names too
 * long to route; src/model/routableDiscovery.ts): a resource it lists, but not in a
 * form mvproxy routes on. While the local apiserver is available, a request
 * in doubt goes to it, as it would without mvproxy: never rerouted on a
 * guess, never a 503 (doubt-stays-local; docs/never-worse.md).
 */
export class LocalDoubts {
  readonly everything: boolean;
  /** Dropped entries by group name. */
  private readonly dropped = new Map<string, DroppedDiscoveryEntry[]>();

  constructor(local: Pick<ApiserverObservation, 'servedSet' | 'discovery'>) {
    this.everything = local.servedSet.length === 0;
    for (const d of local.discovery?.dropped ?? []) {
      // An entry with no readable group name cannot be told from any other, and
      // a named group in /api or a group "" in /apis names nothing a request can
      // reach: neither puts anything in doubt.
      if (d.group === undefined || (d.document === '/api') !== (d.group === '')) continue;
      const entries = this.dropped.get(d.group) ?? [];
      entries.push(d);
      this.dropped.set(d.group, entries);
    }
  }

  /** Whether what the local apiserver serves of this resource (or subresource, or, without a resource, group-version or group) is in doubt. */
  covers(id: DoubtedId): boolean {
    return this.everything || this.covering(id).length > 0;
  }

  /** The dropped entries that put this resource (subresource, group-version or group) in doubt, in discovery order. */
  covering(id: DoubtedId): DroppedDiscoveryEntry[] {
    return (this.dropped.get(id.group) ?? []).filter(
      (d) =>
        (d.version === undefined || id.version === undefined || d.version === id.version) &&
        (d.resource === undefined || id.resource === undefined || d.resource === id.resource) &&
        (d.subresource === undefined || d.subresource === id.subresource),
    );
  }
}

/** What LocalDoubts is asked about: a resource or subresource, or without a resource a group-version or group. */
interface DoubtedId {
  group: string;
  version?: string | undefined;
  resource?: string | undefined;
  subresource?: string | undefined;
}

/** What one apiserver serves, as lookup keys. */
export class ServedIndex {
  readonly keys = new Set<string>();

  constructor(servedSet: readonly ServedResource[]) {
    for (const served of servedSet) {
      this.keys.add(resourceKey(served.group, served.version, served.resource));
      for (const subresource of served.subresources) {
        this.keys.add(resourceKey(served.group, served.version, served.resource, subresource));
      }
    }
  }

  serves(key: string): boolean {
    return this.keys.has(key);
  }

  /** Whether the resource a request names (and its subresource, if any) is served. */
  servesRequest(request: Pick<RequestInfo, 'group' | 'version' | 'resource' | 'subresource'>): boolean {
    return request.resource !== undefined && this.serves(resourceKey(request.group, request.version, request.resource, request.subresource));
  }
}

/**
 * The index of a served set, made once per set however many sidecars' deciders
 * ask (every sidecar rates every peer). Weak: gone with the model.
 */
const servedIndexes = new WeakMap<readonly ServedResource[], ServedIndex>();

function servedIndexOf(servedSet: readonly ServedResource[]): ServedIndex {
  let index = servedIndexes.get(servedSet);
  if (!index) {
    index = new ServedIndex(servedSet);
    servedIndexes.set(servedSet, index);
  }
  return index;
}

interface ResourceId {
  group: string;
  version: string;
  resource: string;
  subresource?: string;
}

interface RatedPeer {
  name: string;
  standing: Exclude<PeerStanding, 'gone'>;
  draining: boolean;
  servedSet: readonly ServedResource[];
  served: ServedIndex;
}

/**
 * Every request rule (docs/request-rules.md) for one sidecar, decided in one
 * place: the plan is made of its decisions, and `explain` asks it the same
 * questions, so the two cannot disagree.
 */
export class SidecarDecider {
  readonly local: ApiserverObservation;
  /** The local apiserver judged like a peer: while it is down or restarting its sidecar routes around it. */
  readonly localAvailable: boolean;
  readonly localDraining: boolean;
  /** What mvproxy doubts about what the local apiserver serves (it stays local while available). */
  readonly doubts: LocalDoubts;
  /** Peers whose lease is long gone contribute nothing; the rest, sorted by name. */
  private readonly ratedPeers: RatedPeer[] = [];
  /**
   * The rated peers that serve anything: the only ones a route can name (an
   * empty served set serves nothing; such a peer counts for fallback() only).
   * With many declared apiservers not yet observed, this keeps every decision
   * proportional to the peers that serve, not to all of them.
   */
  private readonly servingPeers: RatedPeer[];
  private readonly localServed: ServedIndex;
  private readonly localOnly: ReadonlySet<string>;
  private readonly localSubresources: Map<string, string[]>;

  constructor(
    local: ApiserverObservation,
    model: ClusterModel,
    opts: Required<PlannerOptions>,
    localOnly: ReadonlySet<string> = activeLocalOnlyGroupVersions(model, model.now),
  ) {
    this.local = local;
    this.localOnly = localOnly;
    this.localServed = servedIndexOf(local.servedSet);
    this.localAvailable = peerStanding(local, model.now, opts.departedGraceMs) === 'available';
    this.localDraining = opts.draining.has(local.endpoint.name);
    this.doubts = new LocalDoubts(local);
    this.localSubresources = new Map(local.servedSet.map((s) => [resourceKey(s.group, s.version, s.resource), s.subresources]));
    const others = model.apiservers.filter((a) => a !== local).sort((a, b) => compareStrings(a.endpoint.name, b.endpoint.name));
    for (const peer of others) {
      const standing = peerStanding(peer, model.now, opts.departedGraceMs);
      if (standing === 'gone') continue;
      const name = peer.endpoint.name;
      this.ratedPeers.push({ name, standing, draining: opts.draining.has(name), servedSet: peer.servedSet, served: servedIndexOf(peer.servedSet) });
    }
    this.servingPeers = this.ratedPeers.filter((p) => p.servedSet.length > 0);
  }

  /** Every (sub)resource served anywhere that counts and is not local-only: what may need a route. */
  candidates(): ResourceId[] {
    const candidates = new Map<string, ResourceId>();
    for (const served of [this.local.servedSet, ...this.servingPeers.map((p) => p.servedSet)].flat()) {
      if (this.isLocalOnly(served)) continue;
      const { group, version, resource } = served;
      candidates.set(resourceKey(group, version, resource), { group, version, resource });
      for (const subresource of served.subresources) {
        candidates.set(resourceKey(group, version, resource, subresource), { group, version, resource, subresource });
      }
    }
    return [...candidates.values()];
  }

  /** Where a request for this resource (or subresource) goes, and by which rule. */
  resource(id: ResourceId): Decision {
    const local: Decision['destination'] = { kind: 'local' };
    if (this.isLocalOnly(id)) return { destination: local, rule: 'shared-state-local' };
    const key = resourceKey(id.group, id.version, id.resource, id.subresource);
    const servedLocally = this.localServed.serves(key);
    if (servedLocally && this.localAvailable) {
      const successors = this.localDraining ? this.successorsOf(id) : [];
      if (successors.length > 0) return { destination: { kind: 'peers', peers: successors }, rule: 'drained-to-peers' };
      return { destination: local, rule: 'served-locally' };
    }
    // Not known to be served locally, but maybe it is: the local apiserver
    // decides, as without mvproxy (even while drained: a drain never moves
    // what it may serve on a guess).
    if (this.localAvailable && this.doubts.covers(id)) return { destination: local, rule: 'doubt-stays-local' };
    const servingPeers = this.servingPeers.filter((p) => p.served.serves(key));
    const available = preferUndrained(servingPeers.filter((p) => p.standing === 'available'));
    if (available.length > 0) return { destination: { kind: 'peers', peers: available.map((p) => p.name) }, rule: 'reroute-to-peers' };
    const servedBy = [...(servedLocally ? [this.local.endpoint.name] : []), ...servingPeers.map((p) => p.name)].sort(compareStrings);
    if (servedBy.length > 0 && (servingPeers.length > 0 || !this.localAvailable))
      return { destination: { kind: 'unavailable', servedBy }, rule: 'unavailable-503' };
    // The local apiserver gives the honest 404 (or, while it is down, a peer answers for it).
    return { destination: local, rule: 'nobody-serves' };
  }

  /**
   * Discovery documents served only by peers: group-versions of which the
   * local apiserver serves nothing, and groups of which it serves no version
   * (never local-only group-versions), nor group-versions (groups) where what
   * the available local apiserver serves is in doubt. Sent to the available
   * peers that serve anything there, else 503 while some unavailable peer
   * does.
   */
  groupDocuments(): GroupDocumentRoute[] {
    const { local, servingPeers: ratedPeers, localOnly } = this;
    const doubts = this.localAvailable ? this.doubts : undefined;
    const localGroups = new Set(local.servedSet.map((s) => s.group));
    const localGroupVersions = new Set(local.servedSet.map((s) => groupVersionKey(s.group, s.version)));
    const peerOnly = new Map<string, { group: string; version: string }>();
    for (const peer of ratedPeers) {
      for (const { group, version } of peer.servedSet) {
        const key = groupVersionKey(group, version);
        if (!localOnly.has(key) && !localGroupVersions.has(key) && !doubts?.covers({ group, version })) peerOnly.set(key, { group, version });
      }
    }
    const actionFor = (serves: (s: ServedResource) => boolean): ResourceRouteAction => {
      const serving = ratedPeers.filter((p) => p.servedSet.some(serves));
      const available = preferUndrained(serving.filter((p) => p.standing === 'available')).map((p) => p.name);
      if (available.length > 0) return { kind: 'peers', peers: available };
      return { kind: 'unavailable', servedBy: serving.map((p) => p.name) };
    };
    const documents: GroupDocumentRoute[] = [];
    const peerOnlyGroups = new Set<string>();
    for (const { group, version } of peerOnly.values()) {
      documents.push({ group, version, action: actionFor((s) => s.group === group && s.version === version) });
      // The core group has no group document: `/api` is the list of its versions.
      if (group !== '' && !localGroups.has(group) && !doubts?.covers({ group })) peerOnlyGroups.add(group);
    }
    for (const group of peerOnlyGroups) {
      documents.push({ group, action: actionFor((s) => s.group === group && !localOnly.has(groupVersionKey(s.group, s.version))) });
    }
    return documents.sort((a, b) => compareStrings(a.group, b.group) || compareStrings(a.version ?? '', b.version ?? ''));
  }

  /**
   * The rule behind whatever a request is (explain asks this; the plan's
   * routes come from the same decisions): already proxied, a resource, a
   * peer-only discovery document, a merged document, or anything else the
   * local apiserver (or, while it is down, a peer) answers.
   */
  decideRequest(request: RequestInfo, options: { alreadyProxied?: boolean } = {}): Decision {
    const local: Decision['destination'] = { kind: 'local' };
    if (options.alreadyProxied) return { destination: local, rule: 'proxied-once' };
    const fallback = this.fallback();
    if (request.isResourceRequest && request.resource !== undefined) {
      const { group, version, resource, subresource } = request;
      const decision = this.resource({ group, version, resource, ...(subresource === undefined ? {} : { subresource }) });
      // What nobody serves is the local apiserver's 404; while it is down, a peer's.
      if (decision.rule === 'nobody-serves' && fallback) return { destination: fallback, rule: 'local-down-fallback' };
      return decision;
    }
    const document = request.error === undefined ? groupDocumentOf(request.path) : undefined;
    if (document !== undefined) {
      const route = this.groupDocuments().find((d) => d.group === document.group && d.version === document.version);
      if (route) return { destination: route.action, rule: 'peer-only-document' };
      if (this.localAvailable && this.doubts.covers(document)) return { destination: local, rule: 'doubt-stays-local' };
    }
    if (fallback && !isHealthPath(request.path)) return { destination: fallback, rule: 'local-down-fallback' };
    if (request.error === undefined && mergedDocumentOf(request.path) !== undefined) return { destination: local, rule: 'merged-document' };
    return { destination: local, rule: 'not-a-resource' };
  }

  /** While the local apiserver is unavailable: the peers that answer what it would have answered. */
  fallback(): RerouteToPeers | undefined {
    if (this.localAvailable) return undefined;
    const peers = preferUndrained(this.ratedPeers.filter((p) => p.standing === 'available'));
    return peers.length > 0 ? { kind: 'peers', peers: peers.map((p) => p.name) } : undefined;
  }

  /**
   * Where a draining apiserver hands a resource over: available peers, not
   * draining themselves, that serve the resource and every subresource of it
   * the local one serves, so a resource and its subresources move together
   * (a subresource left behind would need a route back to the local apiserver).
   */
  private successorsOf(id: ResourceId): string[] {
    const resource = resourceKey(id.group, id.version, id.resource);
    const subresources = this.localSubresources.get(resource) ?? [];
    return this.servingPeers
      .filter((p) => p.standing === 'available' && !p.draining && p.served.serves(resource))
      .filter((p) => subresources.every((sub) => p.served.serves(resourceKey(id.group, id.version, id.resource, sub))))
      .map((p) => p.name);
  }

  private isLocalOnly(id: { group: string; version: string }): boolean {
    return this.localOnly.has(groupVersionKey(id.group, id.version));
  }
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

/** The peers not being drained if there are any, else all of them: a drain never causes a 503. */
function preferUndrained(peers: RatedPeer[]): RatedPeer[] {
  const undrained = peers.filter((p) => !p.draining);
  return undrained.length > 0 ? undrained : peers;
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

function resourceKey(group: string, version: string, resource: string, subresource?: string | undefined): string {
  return JSON.stringify(subresource === undefined ? [group, version, resource] : [group, version, resource, subresource]);
}

function compareRoutes(a: ResourceRoute, b: ResourceRoute): number {
  return (
    compareStrings(a.group, b.group) ||
    compareStrings(a.version, b.version) ||
    compareStrings(a.resource, b.resource) ||
    compareStrings(a.subresource ?? '', b.subresource ?? '')
  );
}
