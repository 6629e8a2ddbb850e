// What one sidecar must do, as plain data: the planner's output and the
// translator's input. Every request rule of docs/request-rules.md is an entry
// carrying its name, in the order entries must match; everything else is
// sorted, so equal plans serialize equally.
import type { NetworkAddress } from '../model/cluster.js';
import type { MergedDocument } from '../model/requestInfo.js';
import { compareStrings } from '../util/order.js';

/** An apiserver a sidecar sends requests to. */
export interface PlannedApiserver {
  /** The endpoint name (for peers, also what routes refer to). */
  name: string;
  address: NetworkAddress;
}

/** reroute-to-peers (docs/request-rules.md): served by these reachable, live peers (sorted by name). */
export interface RerouteToPeers {
  kind: 'peers';
  peers: string[];
}

/** unavailable-503: served only by apiservers that are unreachable or left recently: answer 503. */
export interface Unavailable {
  kind: 'unavailable';
  /** The peers that serve it but cannot take it now (sorted by name). */
  servedBy: string[];
}

export type ResourceRouteAction = RerouteToPeers | Unavailable;

/** Where a request goes: the local apiserver, peers, or a 503. */
export type RequestDestination = Local | ResourceRouteAction;

/** The request rules, by the names docs/request-rules.md gives them. */
export type RuleName =
  | 'proxied-once'
  | 'shared-state-local'
  | 'served-locally'
  | 'drained-to-peers'
  | 'doubt-stays-local'
  | 'reroute-to-peers'
  | 'unavailable-503'
  | 'nobody-serves'
  | 'peer-only-document'
  | 'merged-document'
  | 'local-down-fallback'
  | 'not-a-resource';

/** The planner's decision for one request: where, and by which rule. */
export interface Decision {
  destination: RequestDestination;
  rule: RuleName;
}

/** Where forwarding goes when it is not to peers. */
export interface Local {
  kind: 'local';
}

/** The rules whose requests the local apiserver answers without a route of their own: the catch-all sends them there. */
export const LOCAL_RULES = ['shared-state-local', 'served-locally', 'doubt-stays-local', 'nobody-serves'] as const satisfies readonly RuleName[];
export type LocalRule = (typeof LOCAL_RULES)[number];

/** A resource, or one of its subresources. */
export interface ResourceId {
  /** "" for the core group. */
  group: string;
  version: string;
  resource: string;
  subresource?: string;
}

/**
 * What requests an entry takes. Matched on what kube-apiserver reads a path
 * as (src/model/requestInfo.ts); the translator makes Envoy matchers of it.
 */
export type EntryMatch =
  /** Requests that carry x-kubernetes-peer-proxied. */
  | { kind: 'peer-proxied' }
  /** A merged document: aggregated discovery (GET or HEAD, the aggregated Accept, no profile=nopeer) or the OpenAPI v3 index. */
  | { kind: 'merged-document'; document: MergedDocument }
  /**
   * Everything under `/api/`, taken before the resource routes: an early copy
   * of the catch-all, where no entry sends anything of the core group
   * elsewhere (most requests are for it, and each resource route is a regex).
   */
  | { kind: 'core-group' }
  /** `/apis/{g}` (no version), `/apis/{g}/{v}` or `/api/{v}`, and the group-version's OpenAPI v3 document. */
  | { kind: 'group-document'; group: string; version?: string }
  | ResourceMatch
  /** The local apiserver's own `/healthz`, `/livez`, `/readyz` and their checks. */
  | { kind: 'health' }
  /** Anything: the catch-all, last. */
  | { kind: 'anything' };

/** A resource (and every subresource of it without an entry of its own), or one subresource. */
export type ResourceMatch = { kind: 'resource' } & ResourceId;

/** What a local entry takes, of what the catch-all takes. */
export type LocalMatch =
  | ResourceMatch
  /** Every resource of a group-version. */
  | { kind: 'group-version'; group: string; version: string }
  /** Resources and discovery documents a dropped discovery entry of the local apiserver covers (doubts.ts); no group: everything. */
  | ({ kind: 'doubt' } & DoubtScope)
  /** Any resource request. */
  | { kind: 'any-resource' };

/** What a doubt covers: a group, a group-version, a resource or a subresource of the local apiserver's discovery (none of them: everything). */
export interface DoubtScope {
  group?: string;
  version?: string;
  resource?: string;
  subresource?: string;
}

/** One request rule's decision for the requests an entry takes. */
export interface PlanEntry {
  rule: RuleName;
  match: EntryMatch;
  destination: RequestDestination;
}

/** What the catch-all takes to the local apiserver by a rule of its own; no Envoy route of its own. */
export interface LocalEntry {
  rule: LocalRule;
  match: LocalMatch;
}

/** A resource route seen on its own (status, events, tools): a resource or subresource entry that does not go local. */
export interface ResourceRoute extends ResourceId {
  action: ResourceRouteAction;
}

/** A peer-only discovery document seen on its own: `version` absent for the group document `/apis/{group}`. */
export interface GroupDocumentRoute {
  group: string;
  version?: string;
  action: ResourceRouteAction;
}

export interface SidecarPlan {
  /** xDS node id of the sidecar: the local apiserver's endpoint name. */
  node: string;
  local: PlannedApiserver;
  /**
   * Every other declared apiserver ever seen (a lease, an answer, a served
   * set), sorted by name, whether or not a route uses it: each gets a stable
   * cluster. One never seen can be in no route and is left out.
   */
  peers: PlannedApiserver[];
  /**
   * Every request rule's entries, in the order they must match (the first
   * that takes a request decides; the translator makes one Envoy route set of
   * each, in this order): proxied-once, the merged documents, the core-group
   * shortcut, peer-only documents, resource routes (subresources first),
   * the health endpoints (while the local apiserver is unavailable), and the
   * catch-all (not-a-resource to the local apiserver, or local-down-fallback
   * to peers). planner.ts `orderedEntries` is the one place of this order.
   */
  entries: PlanEntry[];
  /**
   * What the catch-all sends to the local apiserver, by rule, in the order
   * they are asked: resources served locally or kept local on a doubt, CRD
   * and APIService group-versions, doubted scopes, any other resource.
   * Empty while the catch-all goes to fallback peers.
   */
  localEntries: LocalEntry[];
}

/** The apiserver's own health endpoints (`/healthz`, `/livez`, `/readyz` and their checks): never answered by a peer. */
export const HEALTH_PATH_PREFIXES: readonly string[] = ['/healthz', '/livez', '/readyz'];

/** Orders resources by group, version, resource, then subresource (the whole resource first). */
export function compareResourceIds(a: ResourceId, b: ResourceId): number {
  return (
    compareStrings(a.group, b.group) ||
    compareStrings(a.version, b.version) ||
    compareStrings(a.resource, b.resource) ||
    compareStrings(a.subresource ?? '', b.subresource ?? '')
  );
}

/** The plan's resource routes (entries of a resource or subresource), sorted by compareResourceIds. */
export function resourceRoutesOf(plan: Pick<SidecarPlan, 'entries'>): ResourceRoute[] {
  const routes: ResourceRoute[] = [];
  for (const { match, destination } of plan.entries) {
    if (match.kind !== 'resource' || destination.kind === 'local') continue;
    const { kind: _, ...id } = match;
    routes.push({ ...id, action: destination });
  }
  return routes.sort(compareResourceIds);
}

/** The plan's peer-only discovery documents, sorted by group, then version (the group document first). */
export function groupDocumentsOf(plan: Pick<SidecarPlan, 'entries'>): GroupDocumentRoute[] {
  const documents: GroupDocumentRoute[] = [];
  for (const { match, destination } of plan.entries) {
    if (match.kind !== 'group-document' || destination.kind === 'local') continue;
    documents.push({ group: match.group, ...(match.version === undefined ? {} : { version: match.version }), action: destination });
  }
  return documents;
}

/** The peers that answer for the local apiserver while it is unavailable (local-down-fallback), if any. */
export function fallbackOf(plan: Pick<SidecarPlan, 'entries'>): RerouteToPeers | undefined {
  const catchAll = plan.entries.at(-1);
  return catchAll?.match.kind === 'anything' && catchAll.destination.kind === 'peers' ? catchAll.destination : undefined;
}
