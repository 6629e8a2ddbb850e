// Why a request goes where it goes: the plan's entry for one request, in
// words, for operators (`mvproxy admin explain`). Pure: it reads the plan the
// sidecar runs, and the model the plan was made from for the words.
import type { ApiserverObservation, ClusterModel } from '../model/cluster.js';
import type { DroppedDiscoveryEntry } from '../model/discovery.js';
import { groupDocumentOf, parseRequestPath, type RequestInfo } from '../model/requestInfo.js';
import { fallbackOf, type Decision, type RequestDestination, type RuleName, type SidecarPlan } from './plan.js';
import { decisionForRequest } from './destination.js';
import { LocalDoubts } from './doubts.js';
import { drainedApiservers } from './planner.js';

export interface RequestExplanation {
  /** Where the sidecar's routes send the request now. */
  destination: RequestDestination;
  /** The request rule behind it (docs/request-rules.md). */
  rule: RuleName;
  reason: string;
  request: RequestInfo;
}

export interface ExplainInput {
  plan: SidecarPlan;
  model: ClusterModel;
  /** The operator's drains, as the planner was told them (not-ready apiservers count as drained as there). */
  draining: ReadonlySet<string>;
}

/**
 * Where a request sent to the plan's sidecar goes and why: the plan's entry
 * that takes it, its destination and rule (destination.ts), in words. The
 * model only supplies the words (which discovery entries are in doubt, who is
 * draining); nothing is decided here.
 */
export function explainRequest(input: ExplainInput, path: string, options: { peerProxied?: boolean } = {}): RequestExplanation {
  const request = parseRequestPath(path);
  const decision = decisionForRequest(input.plan, request, { alreadyProxied: options.peerProxied ?? false });
  const local = input.model.apiservers.find((a) => a.endpoint.name === input.plan.node);
  const reason =
    local === undefined ? `the local apiserver ${input.plan.node} is not in the model yet: it answers` : reasonFor({ input, local, request, decision });
  return { destination: decision.destination, rule: decision.rule, reason: `${reason} (${citation(decision)})`, request };
}

/** `rule served-locally`, or with the retry rule for requests sent to peers. */
function citation(decision: Decision): string {
  return decision.destination.kind === 'peers' ? `rules ${decision.rule}, retry-connect-only` : `rule ${decision.rule}`;
}

interface Explained {
  input: ExplainInput;
  local: ApiserverObservation;
  request: RequestInfo;
  decision: Decision;
}

function reasonFor({ input, local, request, decision }: Explained): string {
  const localName = local.endpoint.name;
  const what = describeTarget(request);
  const peers = decision.destination.kind === 'peers' ? decision.destination.peers.join(', ') : '';
  switch (decision.rule) {
    case 'proxied-once':
      return `already proxied by a peer (x-kubernetes-peer-proxied): served by the local apiserver ${localName}, never proxied twice`;
    case 'shared-state-local':
      return `${request.group}/${request.version} is served from a CustomResourceDefinition or an APIService: always the local apiserver ${localName}`;
    case 'served-locally': {
      const draining = drainedApiservers(input.model, input.draining).has(localName);
      const kept = !local.reachable
        ? ' (every apiserver looks unreachable while its lease stands: more likely mvproxy polling too slowly than all of them gone)'
        : draining
          ? ` (it is ${drainState(input, localName)}, but no available peer that is not draining serves this)`
          : '';
      return `the local apiserver ${localName} serves ${what}${kept}`;
    }
    case 'drained-to-peers':
      return `the local apiserver ${localName} is ${drainState(input, localName)}: ${what} goes to peers that serve it and are not draining: ${peers}; another of them is tried only if the connection fails`;
    case 'doubt-stays-local': {
      const doubts = new LocalDoubts(local);
      const document = request.isResourceRequest ? undefined : groupDocumentOf(request.path);
      if (document === undefined) {
        const id = { group: request.group, version: request.version, resource: request.resource, subresource: request.subresource };
        return inDoubt(localName, doubts, id, what, 'served locally');
      }
      const subject =
        document.version === undefined ? `group ${document.group}` : document.group === '' ? document.version : `${document.group}/${document.version}`;
      return inDoubt(localName, doubts, document, subject, `${what} is answered locally`);
    }
    case 'reroute-to-peers':
      // Peers take what the local apiserver serves only while it is unavailable, and then they answer for it (fallback).
      if (fallbackOf(input.plan)) return `the local apiserver ${localName} is unavailable; ${what} goes to peers that serve it: ${peers}`;
      return `the local apiserver ${localName} does not serve ${what}; it goes to peers that do: ${peers}; another of them is tried only if the connection fails`;
    case 'unavailable-503': {
      const servedBy = decision.destination.kind === 'unavailable' ? decision.destination.servedBy.join(', ') : '';
      return `${what} is served only by apiservers that cannot take it now (${servedBy}: unreachable, or left within the grace period): 503 with Retry-After, never 404`;
    }
    case 'nobody-serves':
      return `no apiserver serves ${what}: the local apiserver ${localName} answers with its own 404`;
    case 'peer-only-document':
      if (decision.destination.kind === 'unavailable') {
        return `the local apiserver ${localName} serves nothing in ${what}, and the peers that do cannot take it now (${decision.destination.servedBy.join(', ')}): 503 with Retry-After`;
      }
      return `the local apiserver ${localName} serves nothing in ${what}; a peer that does answers it: ${peers}`;
    case 'merged-document': {
      const answering = peers ? `the local apiserver ${localName} is unavailable, so a peer (${peers})` : `the local apiserver ${localName}`;
      return `${what}: ${answering} authenticates and authorizes the client, then mvproxy answers with the merged document (aggregated discovery only with the aggregated Accept and without profile=nopeer; ${peers ? "the peer's" : "the local apiserver's"} own document while the control plane does not answer)`;
    }
    case 'local-down-fallback':
      return `the local apiserver ${localName} is unavailable: a peer answers what it would have answered (${request.isResourceRequest ? `${what}, which no apiserver serves: its 404` : what}): ${peers}`;
    case 'not-a-resource':
      if (request.error !== undefined) return `the path could not be classified (${request.error}): the local apiserver ${localName} answers it`;
      return `not a resource request: the local apiserver ${localName} answers it`;
  }
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
  const covering = doubts.covering(id);
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
