// The planner: from the observed cluster state to one plan per sidecar.
// Pure and deterministic: same model, same plans (sorted, no clock reads).
import type { ApiserverObservation, ClusterModel } from '../model/cluster.js';
import { activeLocalOnly, groupVersionKey } from '../model/liveness.js';
import { MERGED_DOCUMENT_PATHS, type MergedDocument } from '../model/requestInfo.js';
import type {
  Decision,
  DoubtScope,
  GroupDocumentRoute,
  Local,
  LocalEntry,
  LocalRule,
  PlanEntry,
  PlannedApiserver,
  RequestDestination,
  RerouteToPeers,
  ResourceId,
  ResourceMatch,
  RuleName,
  SidecarPlan,
} from './plan.js';
import { compareResourceIds } from './plan.js';
import { SidecarDecider } from './decider.js';
import { compareStrings } from '../util/order.js';
import type { PlannerOptions } from './options.js';

/** One plan per declared apiserver, sorted by node name. */
export function planSidecars(model: ClusterModel, opts: PlannerOptions): SidecarPlan[] {
  const draining = drainedApiservers(model, opts.draining);
  // The same for every sidecar: once, each group-version once (a CRD and an APIService may name the same), sorted.
  const byKey = new Map(activeLocalOnly(model, model.now).map(({ group, version }) => [groupVersionKey(group, version), { group, version }]));
  const localOnly: ReadonlySet<string> = new Set(byKey.keys());
  const sharedState = [...byKey.values()].sort((a, b) => compareStrings(a.group, b.group) || compareStrings(a.version, b.version));
  return [...model.apiservers]
    .sort((a, b) => compareStrings(a.endpoint.name, b.endpoint.name))
    .map((local) => planSidecar(local, model, { localOnly, sharedState }, { ...opts, draining }));
}

/** What every sidecar's plan shares: the local-only group-versions, as keys and as entries. */
interface SharedState {
  localOnly: ReadonlySet<string>;
  sharedState: readonly { group: string; version: string }[];
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

function planSidecar(local: ApiserverObservation, model: ClusterModel, shared: SharedState, opts: Required<PlannerOptions>): SidecarPlan {
  const decider = new SidecarDecider(local, model, opts, shared.localOnly);
  const resources: ResourceEntry[] = [];
  for (const id of decider.candidates()) {
    const decision = decider.resource(id);
    if (id.subresource !== undefined) {
      // Only where it differs: a subresource that goes where its resource goes, by the same rule, needs no entry.
      const resourceDecision = decider.resource({ group: id.group, version: id.version, resource: id.resource });
      if (sameDestination(decision.destination, resourceDecision.destination)) {
        // One route serves both; a different rule for the same local destination costs Envoy nothing (the catch-all takes both).
        if (decision.destination.kind !== 'local' || decision.rule === resourceDecision.rule) continue;
      }
    }
    // A subresource going "local" under a rerouted resource would need a local
    // route; it cannot arise, since serving a subresource means serving its
    // resource, everything not routed goes local anyway, and a drain moves a
    // resource only together with all its subresources.
    resources.push({ ...decision, id });
  }
  const fallback = decider.fallback();
  const plan: SidecarPlan = {
    node: local.endpoint.name,
    local: plannedApiserver(local),
    peers: model.apiservers
      .filter((a) => a !== local && observed(a))
      .sort((a, b) => compareStrings(a.endpoint.name, b.endpoint.name))
      .map(plannedApiserver),
    ...orderedEntries({
      resources,
      groupDocuments: decider.groupDocuments(),
      ...(fallback ? { fallback } : {}),
      sharedState: shared.sharedState,
      doubts: decider.localAvailable ? decider.doubts.scopes() : [],
    }),
  };
  return plan;
}

/** A decided resource (or subresource): its id, where it goes and by which rule. */
export interface ResourceEntry extends Decision {
  id: ResourceId;
}

/** What a sidecar's entries are made of: the decider's decisions. */
export interface PlanDecisions {
  /** Decided (sub)resources, in any order. */
  resources: readonly ResourceEntry[];
  /** peer-only-document: sorted by group, then version (the group document first). */
  groupDocuments: readonly GroupDocumentRoute[];
  /** local-down-fallback: while the local apiserver is unavailable, the available peers that answer for it. */
  fallback?: RerouteToPeers;
  /** shared-state-local: the active CRD and APIService group-versions, sorted by group, then version. */
  sharedState?: readonly { group: string; version: string }[];
  /** doubt-stays-local: what is in doubt of what the available local apiserver serves. */
  doubts?: readonly DoubtScope[];
}

/**
 * The plan's entries in the order they must match, and what the catch-all
 * takes to the local apiserver by rule: the one place of that order (the
 * translator makes Envoy routes of the entries in it; destination.ts reads
 * requests against it).
 */
export function orderedEntries(decisions: PlanDecisions): Pick<SidecarPlan, 'entries' | 'localEntries'> {
  const { fallback } = decisions;
  const local: Local = { kind: 'local' };
  // What nothing else takes: the local apiserver, or the peers that answer for it while it is unavailable.
  const otherwise: Local | RerouteToPeers = fallback ?? local;
  const catchAllRule: RuleName = fallback ? 'local-down-fallback' : 'not-a-resource';
  // Subresource entries first: each takes a subset of its resource's requests.
  const resources = [...decisions.resources].sort(
    (a, b) => Number(a.id.subresource === undefined) - Number(b.id.subresource === undefined) || compareResourceIds(a.id, b.id),
  );
  const routed = resources.filter((r) => r.destination.kind !== 'local');
  const resourceMatch = (r: ResourceEntry): ResourceMatch => ({ kind: 'resource', ...r.id });
  const resourceEntry = (r: ResourceEntry): PlanEntry => ({ rule: r.rule, match: resourceMatch(r), destination: r.destination });
  const coreGroupElsewhere = [...routed.map((r) => r.id), ...decisions.groupDocuments].some((r) => r.group === '');

  const entries: PlanEntry[] = [
    // Proxied once already, by a sidecar or by an upstream-MVP apiserver: never again.
    { rule: 'proxied-once', match: { kind: 'peer-proxied' }, destination: local },
    ...MERGED_DOCUMENTS.map((document): PlanEntry => ({ rule: 'merged-document', match: { kind: 'merged-document', document }, destination: otherwise })),
    ...(coreGroupElsewhere ? [] : [{ rule: catchAllRule, match: { kind: 'core-group' }, destination: otherwise } satisfies PlanEntry]),
    ...decisions.groupDocuments.map(
      (d): PlanEntry => ({
        rule: 'peer-only-document',
        match: { kind: 'group-document', group: d.group, ...(d.version === undefined ? {} : { version: d.version }) },
        destination: d.action,
      }),
    ),
    ...routed.map(resourceEntry),
    // An unavailable local apiserver still answers for its own health.
    ...(fallback ? [{ rule: 'not-a-resource', match: { kind: 'health' }, destination: local } satisfies PlanEntry] : []),
    { rule: catchAllRule, match: { kind: 'anything' }, destination: otherwise },
  ];
  // While the catch-all goes to fallback peers, they answer everything the local apiserver would have.
  const localEntries: LocalEntry[] = fallback
    ? []
    : [
        ...resources.filter((r) => r.destination.kind === 'local').map((r): LocalEntry => ({ rule: r.rule as LocalRule, match: resourceMatch(r) })),
        ...(decisions.sharedState ?? []).map(
          (gv): LocalEntry => ({ rule: 'shared-state-local', match: { kind: 'group-version', group: gv.group, version: gv.version } }),
        ),
        ...(decisions.doubts ?? []).map((scope): LocalEntry => ({ rule: 'doubt-stays-local', match: { kind: 'doubt', ...scope } })),
        { rule: 'nobody-serves', match: { kind: 'any-resource' } },
      ];
  return { entries, localEntries };
}

const MERGED_DOCUMENTS = Object.keys(MERGED_DOCUMENT_PATHS) as MergedDocument[];
/**
 * Whether anything was ever seen of a declared apiserver: it holds (or held)
 * an identity lease, answered, or served something. One never seen can be in
 * no route, so it is no planned peer (each planned peer costs every sidecar
 * its clusters); it becomes one, clusters first, once it shows up.
 */
function observed(a: ApiserverObservation): boolean {
  return a.lease !== undefined || a.leaseGoneAt !== undefined || a.reachable || a.servedSet.length > 0;
}

function plannedApiserver(observation: ApiserverObservation): PlannedApiserver {
  const { name, address } = observation.endpoint;
  return { name, address: { host: address.host, port: address.port } };
}

function sameDestination(a: RequestDestination, b: RequestDestination): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
