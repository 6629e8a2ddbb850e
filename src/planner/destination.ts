// Where one request goes under a finished plan, and by which rule: the plan's
// entries, read back (explain reports this; the translator's routing
// contract and the path oracle check Envoy against it).
import { groupDocumentOf, mergedDocumentOf, type RequestInfo } from '../model/requestInfo.js';
import { scopeCovers } from './doubts.js';
import { HEALTH_PATH_PREFIXES, type Decision, type EntryMatch, type LocalMatch, type RequestDestination, type SidecarPlan } from './plan.js';

/**
 * The entry that takes a request, as Envoy's routes do (the first that
 * matches), and its rule; for what the catch-all sends to the local
 * apiserver, the rule of the first local entry that matches. A request
 * already proxied by a peer is always served locally (proxied-once).
 */
export function decisionForRequest(
  plan: Pick<SidecarPlan, 'entries' | 'localEntries'>,
  request: RequestInfo,
  options: { alreadyProxied?: boolean } = {},
): Decision {
  const alreadyProxied = options.alreadyProxied ?? false;
  for (const entry of plan.entries) {
    // An early copy of the catch-all for speed: the entries after it give the same destination, and name the rule.
    if (entry.match.kind === 'core-group' || !takes(entry.match, request, alreadyProxied)) continue;
    if (entry.match.kind === 'anything') {
      const local = plan.localEntries.find((e) => takes(e.match, request, alreadyProxied));
      if (local) return { destination: entry.destination, rule: local.rule };
    }
    return { destination: entry.destination, rule: entry.rule };
  }
  // Every plan ends with its catch-all; a plan without one sends nothing elsewhere.
  return { destination: { kind: 'local' }, rule: 'not-a-resource' };
}

/** Where a request goes under a plan (decisionForRequest's destination). */
export function destinationForRequest(
  plan: Pick<SidecarPlan, 'entries' | 'localEntries'>,
  request: RequestInfo,
  options: { alreadyProxied?: boolean } = {},
): RequestDestination {
  return decisionForRequest(plan, request, options).destination;
}

/** Whether an entry's match takes a request (what the translator's Envoy matchers select, on kube-apiserver's reading of the path). */
function takes(match: EntryMatch | LocalMatch, request: RequestInfo, alreadyProxied: boolean): boolean {
  const resource = request.isResourceRequest && request.resource !== undefined;
  switch (match.kind) {
    case 'peer-proxied':
      return alreadyProxied;
    case 'merged-document':
      return mergedDocumentOf(request.path) === match.document;
    case 'core-group':
    case 'anything':
      return true;
    case 'group-document': {
      const document = resource ? undefined : groupDocumentOf(request.path);
      return document !== undefined && document.group === match.group && document.version === match.version;
    }
    case 'resource':
      return (
        resource &&
        request.group === match.group &&
        request.version === match.version &&
        request.resource === match.resource &&
        (match.subresource === undefined || request.subresource === match.subresource)
      );
    case 'group-version':
      return resource && request.group === match.group && request.version === match.version;
    case 'doubt': {
      if (resource) return scopeCovers(match, request);
      const document = request.error === undefined ? groupDocumentOf(request.path) : undefined;
      return document !== undefined && scopeCovers(match, document);
    }
    case 'any-resource':
      return resource;
    case 'health':
      return isHealthPath(request.path);
  }
}

/** Whether a path is one of the local apiserver's health endpoints (never sent to fallback peers). */
export function isHealthPath(path: string): boolean {
  const bare = path.replace(/[?#].*$/, '');
  return HEALTH_PATH_PREFIXES.some((prefix) => bare === prefix || bare.startsWith(`${prefix}/`));
}
