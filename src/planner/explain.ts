// Why a request goes where it goes: the planner's decision for one request,
// in words, for operators (`mvproxy admin explain`). Pure: it reads the plan
// the sidecar runs and the model the plan was made from.
import type { ClusterModel } from '../model/cluster.js';
import { parseRequestPath, type RequestInfo } from '../model/requestInfo.js';
import { activeLocalOnlyGroupVersions, groupVersionKey, peerStanding } from '../model/liveness.js';
import type { RequestDestination, SidecarPlan } from './plan.js';
import { destinationForRequest, drainedApiservers, ServedIndex } from './planner.js';

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
  if (destination.kind === 'peers') {
    const peers = destination.peers.join(', ');
    if (destination === plan.fallback) {
      return `the local apiserver ${localName} is unavailable: a peer answers what it would have answered (${request.isResourceRequest ? `${what}, which no apiserver serves: its 404` : what}): ${peers}`;
    }
    if (!request.isResourceRequest) return `the local apiserver ${localName} serves nothing in ${what}; a peer that does answers it: ${peers}`;
    const localAvailable = local !== undefined && peerStanding(local, model.now, input.departedGraceMs) === 'available';
    if (servesLocally && localAvailable && draining.has(localName)) {
      return `the local apiserver ${localName} is ${drainState(input, localName)}: ${what} goes to peers that serve it and are not draining: ${peers}; another of them is tried only if the connection fails (rules 2, 5)`;
    }
    if (servesLocally) return `the local apiserver ${localName} is unavailable; ${what} goes to peers that serve it: ${peers} (rules 2, 5)`;
    return `the local apiserver ${localName} does not serve ${what}; it goes to peers that do: ${peers}; another of them is tried only if the connection fails (rules 2, 5)`;
  }
  if (request.error !== undefined) return `the path could not be classified (${request.error}): the local apiserver ${localName} answers it`;
  if (!request.isResourceRequest) return `not a resource request: the local apiserver ${localName} answers it`;
  if (activeLocalOnlyGroupVersions(model, model.now).has(groupVersionKey(request.group, request.version))) {
    return `${request.group}/${request.version} is served from a CustomResourceDefinition or an APIService: always the local apiserver ${localName} (rule 6)`;
  }
  if (servesLocally) {
    const kept = draining.has(localName) ? ` (it is ${drainState(input, localName)}, but no available peer that is not draining serves this)` : '';
    return `the local apiserver ${localName} serves ${what}${kept} (rule 1)`;
  }
  return `no apiserver serves ${what}: the local apiserver ${localName} answers with its own 404 (rule 3)`;
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
