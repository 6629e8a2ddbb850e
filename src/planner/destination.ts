// Where one request goes under a finished plan: what the sidecar's routes
// say, read back (the translator's routing contract and the path oracle
// check Envoy against this).
import { groupDocumentOf, type RequestInfo } from '../model/requestInfo.js';
import { HEALTH_PATH_PREFIXES, type RequestDestination, type ResourceRoute, type SidecarPlan } from './plan.js';

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

/** Whether a path is one of the local apiserver's health endpoints (never sent to fallback peers). */
export function isHealthPath(path: string): boolean {
  const bare = path.replace(/[?#].*$/, '');
  return HEALTH_PATH_PREFIXES.some((prefix) => bare === prefix || bare.startsWith(`${prefix}/`));
}
