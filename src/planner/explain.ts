// Why a request goes where it goes: the planner's decision for one request,
// in words, for operators (`mvproxy admin explain`). Pure: it reads the plan
// the sidecar runs and the model the plan was made from.
import type { ApiserverObservation, ClusterModel } from '../model/cluster.js';
import type { DroppedDiscoveryEntry } from '../model/discovery.js';
import { parseRequestPath, type RequestInfo } from '../model/requestInfo.js';
import { activeLocalOnlyGroupVersions, groupVersionKey, peerStanding } from '../model/liveness.js';
import type { RequestDestination, SidecarPlan } from './plan.js';
import { destinationForRequest, drainedApiservers, groupDocumentOf, LocalDoubts, ServedIndex } from './planner.js';

export interface RequestExplanation {
  destination: RequestDestination;
  reason: string;
  request: RequestInfo;
}

export interface ExplainInput {
  plan: SidecarPlan;
  model: ClusterModel;
  /** The planner's inputs of the same names (operator drains; not-ready apiservers are added here as there). */
  draining: ReadonlySet<string>;
  departedGraceMs: number;
}

export function explainRequest(input: ExplainInput, path: string, options: { peerProxied?: boolean } = {}): RequestExplanation {
  const request = parseRequestPath(path);
  const destination = destinationForRequest(input.plan, request, { alreadyProxied: options.peerProxied ?? false });
  return { destination, reason: reasonFor(input, request, destination, options.peerProxied ?? false), request };
}

function reasonFor(input: ExplainInput, request: RequestInfo, destination: RequestDestination, peerProxied: boolean): string {
  const { plan, model } = input;
  const draining = drainedApiservers(model, input.draining);
  const localName = plan.local.name;
  const what = describeTarget(request);
  if (peerProxied) return `already proxied by a peer (x-kubernetes-peer-proxied): served by the local apiserver ${localName}, never proxied twice (rule 2)`;
  if (destination.kind === 'unavailable') {
    return `${what} is served only by apiservers that cannot take it now (${destination.servedBy.join(', ')}: unreachable, or left within the grace period): 503 with Retry-After, never 404 (rule 4)`;
  }
  const local = model.apiservers.find((a) => a.endpoint.name === localName);
  const servesLocally = new ServedIndex(local?.servedSet ?? []).servesRequest(request);
  const localAvailable = local !== undefined && peerStanding(local, model.now, input.departedGraceMs) === 'available';
  // What the planner doubts about the local apiserver (it keeps that local while the apiserver is available).
  const doubts = local !== undefined && localAvailable ? new LocalDoubts(local) : undefined;
  if (destination.kind === 'peers') {
    const peers = destination.peers.join(', ');
    if (destination === plan.fallback) {
      return `the local apiserver ${localName} is unavailable: a peer answers what it would have answered (${request.isResourceRequest ? `${what}, which no apiserver serves: its 404` : what}): ${peers}`;
    }
    if (!request.isResourceRequest) return `the local apiserver ${localName} serves nothing in ${what}; a peer that does answers it: ${peers}`;
    if (servesLocally && localAvailable && draining.has(localName)) {
      return `the local apiserver ${localName} is ${drainState(input, localName)}: ${what} goes to peers that serve it and are not draining: ${peers}; another of them is tried only if the connection fails (rules 2, 5)`;
    }
    if (servesLocally) return `the local apiserver ${localName} is unavailable; ${what} goes to peers that serve it: ${peers} (rules 2, 5)`;
    return `the local apiserver ${localName} does not serve ${what}; it goes to peers that do: ${peers}; another of them is tried only if the connection fails (rules 2, 5)`;
  }
  if (request.error !== undefined) return `the path could not be classified (${request.error}): the local apiserver ${localName} answers it`;
  if (!request.isResourceRequest) {
    const document = groupDocumentOf(request.path);
    if (local !== undefined && doubts !== undefined && document !== undefined && doubts.covers(document)) {
      const subject = document.version === undefined ? `group ${document.group}` : document.group === '' ? document.version : `${document.group}/${document.version}`;
      return inDoubt(local, localName, doubts, document, subject, `${what} is answered locally`);
    }
    return `not a resource request: the local apiserver ${localName} answers it`;
  }
  if (activeLocalOnlyGroupVersions(model, model.now).has(groupVersionKey(request.group, request.version))) {
    return `${request.group}/${request.version} is served from a CustomResourceDefinition or an APIService: always the local apiserver ${localName} (rule 6)`;
  }
  if (servesLocally) {
    const kept = draining.has(localName) ? ` (it is ${drainState(input, localName)}, but no available peer that is not draining serves this)` : '';
    return `the local apiserver ${localName} serves ${what}${kept} (rule 1)`;
  }
  const id = { group: request.group, version: request.version, resource: request.resource, subresource: request.subresource };
  if (local !== undefined && doubts !== undefined && doubts.covers(id)) return inDoubt(local, localName, doubts, id, what, 'served locally');
  return `no apiserver serves ${what}: the local apiserver ${localName} answers with its own 404 (rule 3)`;
}

/** At most this many of the dropped entries behind a doubt are named. */
const MAX_ENTRIES_NAMED = 3;

/**
 * Why a request the planner's LocalDoubts covers stays local: no usable
 * discovery of the local apiserver at all, or the dropped entries of its
 * discovery that cover the request (each asked of LocalDoubts on its own, so
 * the planner's rule decides which, not a copy of it).
 */
function inDoubt(
  local: ApiserverObservation,
  localName: string,
  doubts: LocalDoubts,
  id: { group: string; version?: string; resource?: string; subresource?: string },
  subject: string,
  kept: string,
): string {
  const outcome = `${kept}, as without mvproxy (never rerouted on a guess, never a 503)`;
  if (doubts.everything) {
    return `mvproxy has no usable discovery of the local apiserver ${localName} (none read yet, only unreadable documents, or nothing routable in them), so what it serves of ${subject} is in doubt: ${outcome}`;
  }
  const discovery = local.discovery;
  const covering =
    discovery === undefined ? [] : (discovery.dropped ?? []).filter((d) => new LocalDoubts({ servedSet: local.servedSet, discovery: { ...discovery, dropped: [d] } }).covers(id));
  const named = covering.slice(0, MAX_ENTRIES_NAMED).map(describeDropped);
  if (covering.length > MAX_ENTRIES_NAMED) named.push(`and ${covering.length - MAX_ENTRIES_NAMED} more`);
  const unreadable = covering.some((d) => d.kind === 'malformed') ? 'could not be read' : 'cannot be routed on';
  return `the local apiserver ${localName}'s own discovery of ${subject} ${unreadable} (${named.length > 0 ? named.join('; ') : 'dropped entries'}): ${outcome}`;
}

/** `dropped entry /apis $.items[3].versions[0].resources[1]: resource name "" is not a DNS-1123 label`. */
function describeDropped(entry: DroppedDiscoveryEntry): string {
  return `dropped entry ${entry.document} ${entry.path}: ${entry.reason}`;
}

/** Why an apiserver counts as drained: the operator said so, or its /readyz fails. */
function drainState(input: ExplainInput, name: string): string {
  return input.draining.has(name) ? 'draining' : 'draining (not ready: starting, or in its shutdown delay)';
}

function describeTarget(request: RequestInfo): string {
  if (!request.isResourceRequest) return request.path;
  const gv = request.group === '' ? request.version : `${request.group}/${request.version}`;
  return `${gv} ${request.resource ?? ''}${request.subresource !== undefined ? `/${request.subresource}` : ''}`;
}
