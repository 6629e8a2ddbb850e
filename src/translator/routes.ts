// The route configuration: already-proxied requests stay local, each
// resource route of the plan reroutes or answers 503, everything else is local.
import type { HeaderMatcher } from '../generated/envoy/config/route/v3/HeaderMatcher.js';
import type { Route } from '../generated/envoy/config/route/v3/Route.js';
import type { RouteAction } from '../generated/envoy/config/route/v3/RouteAction.js';
import type { RouteConfiguration } from '../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { RouteMatch } from '../generated/envoy/config/route/v3/RouteMatch.js';
import type { ResourceRoute, Unavailable } from '../planner/plan.js';
import { http1ClusterName, LOCAL_CLUSTER, peerClusterName, ROUTE_CONFIG_NAME } from './names.js';
import { resourcePathMatch } from './pathRegex.js';
import { emptyTypedConfig, seconds } from './typed.js';

/** The header upstream kube-apiserver sets on (and checks for) proxied requests. */
export const PEER_PROXIED_HEADER = 'x-kubernetes-peer-proxied';
/** Seconds a client should wait before retrying a 503. */
export const RETRY_AFTER_SECONDS = 1;
/** Longest a stream may stay silent; watches get bookmarks well within it. */
export const STREAM_IDLE_TIMEOUT_SECONDS = 3600;

/** Upgrade requests (exec, attach, port-forward, proxy over WebSocket or SPDY/3.1) carry an Upgrade header. */
const UPGRADE_REQUEST: HeaderMatcher = { name: 'upgrade', present_match: true };

export function routeConfiguration(routes: readonly ResourceRoute[]): RouteConfiguration {
  // Subresource routes first: each is a subset of its resource's regex. Regexes
  // of different resources are disjoint, so no other order matters.
  const ordered = [...routes.filter((r) => r.subresource !== undefined), ...routes.filter((r) => r.subresource === undefined)];
  return {
    name: ROUTE_CONFIG_NAME,
    virtual_hosts: [
      {
        name: ROUTE_CONFIG_NAME,
        domains: ['*'],
        routes: [
          // Proxied once already, by us or by an upstream-MVP apiserver: never again.
          ...forwardRoutes('peer-proxied', { prefix: '/', headers: [{ name: PEER_PROXIED_HEADER, present_match: true }] }, LOCAL_CLUSTER, false),
          ...ordered.flatMap(resourceRoutes),
          ...forwardRoutes('local', { prefix: '/' }, LOCAL_CLUSTER, false),
        ],
      },
    ],
  };
}

function resourceRoutes(route: ResourceRoute): Route[] {
  const { pathForms, groupVersionPin } = resourcePathMatch(route);
  const pin: HeaderMatcher = { name: ':path', string_match: { safe_regex: { regex: groupVersionPin } } };
  const kind = route.action.kind === 'peers' ? 'reroute' : 'unavailable';
  return pathForms.flatMap((form, i): Route[] => {
    const match: RouteMatch = { safe_regex: { regex: form }, headers: [pin] };
    const name = `${kind} ${describe(route)}${pathForms.length > 1 ? ` #${i + 1}` : ''}`;
    if (route.action.kind === 'unavailable') return [unavailableRoute(name, match, route, route.action)];
    return forwardRoutes(name, match, peerClusterName(route.action.peers), true);
  });
}

/** An upgrade flavour (HTTP/1.1 cluster) and a normal one, in that order. */
function forwardRoutes(name: string, match: RouteMatch, cluster: string, markProxied: boolean): Route[] {
  const headersToAdd = markProxied
    ? { request_headers_to_add: [{ header: { key: PEER_PROXIED_HEADER, value: 'true' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' as const }] }
    : {};
  return [
    {
      name: `${name} (upgrade)`,
      match: { ...match, headers: [...(match.headers ?? []), UPGRADE_REQUEST] },
      route: forwardAction(http1ClusterName(cluster)),
      ...headersToAdd,
    },
    { name, match, route: forwardAction(cluster), ...headersToAdd },
  ];
}

function forwardAction(cluster: string): RouteAction {
  return {
    cluster,
    // Watches and upgraded streams last as long as the client wants.
    timeout: seconds(0),
    idle_timeout: seconds(STREAM_IDLE_TIMEOUT_SECONDS),
    retry_policy: {
      // Only failures where nothing reached an apiserver (rule 5).
      retry_on: 'connect-failure,refused-stream,reset-before-request',
      num_retries: { value: 3 },
      // Each retry picks another apiserver of the set when there is one.
      retry_host_predicate: [
        {
          name: 'envoy.retry_host_predicates.previous_hosts',
          typed_config: emptyTypedConfig('envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate'),
        },
      ],
      host_selection_retry_max_attempts: 5,
    },
  };
}

/** Rule 4: a 503 the client retries, never a 404 that garbage collection would act on. */
function unavailableRoute(name: string, match: RouteMatch, route: ResourceRoute, action: Unavailable): Route {
  const status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message:
      `the server is currently unable to handle the request: ${describe(route)} is served only by ` +
      `apiservers that are unreachable or restarting (${action.servedBy.join(', ')})`,
    reason: 'ServiceUnavailable',
    code: 503,
  };
  return {
    name,
    match,
    direct_response: { status: 503, body: { inline_string: JSON.stringify(status) } },
    response_headers_to_add: [
      { header: { key: 'retry-after', value: String(RETRY_AFTER_SECONDS) }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
      { header: { key: 'content-type', value: 'application/json' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
    ],
  };
}

/** Kubernetes' GroupVersionResource notation: `batch/v1, Resource=jobs` (core: `/v1, ...`). */
function describe(route: ResourceRoute): string {
  const resource = route.subresource === undefined ? route.resource : `${route.resource}/${route.subresource}`;
  return `${route.group}/${route.version}, Resource=${resource}`;
}
