// The route configuration: the plan's entries (src/planner/plan.ts), in the
// plan's order, each made into Envoy routes named after its request rule
// (docs/request-rules.md), so an access log entry or a config dump names the
// rule that answered. This file decides nothing: what goes where, and in
// which order, is the plan's. Merged documents (discovery, aggregated and
// legacy, the OpenAPI v3 index) go to the local apiserver (or the fallback peers) with
// the document filter that answers them inside Envoy switched on, or ext_proc
// for a document over the push budget (documentFilters.ts decides which).
//
// Every forwarding route has a client-certificate twin just before it (RouteMatch
// tls_context presented) that leaves the identity filter on, so Envoy turns
// the certificate into X-Remote-* headers, and that uses the front-proxy
// flavour of the cluster (the apiserver believes those headers from it only);
// the twin without it switches the identity filter off and travels without
// the front-proxy certificate. Both go to the same apiservers.
import type { HeaderMatcher } from '../generated/envoy/config/route/v3/HeaderMatcher.js';
import type { Route } from '../generated/envoy/config/route/v3/Route.js';
import type { RouteConfiguration } from '../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { RouteMatch } from '../generated/envoy/config/route/v3/RouteMatch.js';
import { HEALTH_PATH_PREFIXES, LOCAL_RULES, type PlanEntry, type RequestDestination, type ResourceMatch, type Unavailable } from '../planner/plan.js';
import { loggedRouteMetadata, type LoggedRoute } from './accessLog.js';
import { identityFilterDisabled } from './identityFilter.js';
import { mergedDocumentAnswerer } from './documentFilters.js';
import { MERGED_DOCUMENT_PATHS, type MergedDocument } from '../model/requestInfo.js';
import { flavouredClusterName, LOCAL_CLUSTER, peerClusterName, ROUTE_CONFIG_NAME, type UpstreamFlavour } from './names.js';
import { escapeRegex, resourcePathMatch } from './pathRegex.js';
import { sidecarLimits, type TranslatorSettings } from './settings.js';
import { forwardAction, NO_TIMEOUT } from './forwardAction.js';
import { serviceUnavailableJson } from '../model/status.js';
import { NOPEER_PROFILE } from '../model/discovery.js';

/** The header upstream kube-apiserver sets on (and checks for) proxied requests. */
export const PEER_PROXIED_HEADER = 'x-kubernetes-peer-proxied';
/** Seconds a client should wait before retrying a 503. */
export const RETRY_AFTER_SECONDS = 1;
/**
 * How much longer than the apiservers' --request-timeout the sidecar waits
 * for an answer before it answers 504 itself: an apiserver that is alive
 * answers its own 504 first (its clock starts when it receives the request,
 * Envoy's once the whole request has been sent).
 */
export const REQUEST_TIMEOUT_MARGIN_SECONDS = 5;

// Long-running requests: exactly those kube-apiserver exempts from its request
// timeout, BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
// sets.NewString("attach", "exec", "proxy", "log", "portforward"))
// (pkg/controlplane/apiserver/config.go; k8s.io/apiserver/pkg/server/filters/
// longrunning.go): verb watch (the /watch/ prefix, or `watch` in the query of a
// collection GET with any value but 0 or false, any case: requestinfo.go),
// verb proxy (the /proxy/ prefix), those five subresources, and non-resource
// paths under /debug/pprof/. They keep no route timeout and no idle timeout,
// as on the apiserver, where an idle `kubectl exec` or port-forward lives until
// the kubelet's streaming idle timeout and a watch until its own timeout.
//
// The matchers may take a request for long-running that is not (it only keeps
// today's no-timeout), never the reverse (that would cut a stream the
// apiserver keeps): a `watch` query parameter with any value or method, or an
// escaped key (Go decodes keys), counts; so does any path with an escape in
// it (Go decodes every escape before it reads the path, so `l%6Fg` is `log` to
// it, whereas Envoy's matchers see the path as sent); so do any three segments
// before a long-running subresource name, after `namespaces/{ns}/` or not.
// Upgrade requests keep no timeout whatever their path: an apiserver that
// switches protocols hijacks the connection, which its timeout filter then
// neither writes to nor closes (k8s.io/apiserver/pkg/server/filters/timeout.go).
//
// Both are matched against the whole `:path` (query included) and each stays
// below Envoy's RE2 program-size limit of 100 (88 and 79 instructions).
/** A path segment in `:path`: the query starts at `?`. */
const PATH_SEGMENT = '[^/?]*';
/** `/api/{v}/` or `/apis/{g}/{v}/`, any leading slashes (kube-apiserver trims them). */
const GROUP_VERSION_PATH = `/+(?:api|apis/${PATH_SEGMENT})/${PATH_SEGMENT}/`;
/** kube-apiserver's long-running verbs and subresources, as upstream lists them. */
const LONG_RUNNING_VERBS = ['watch', 'proxy'];
const LONG_RUNNING_SUBRESOURCES = ['attach', 'exec', 'proxy', 'log', 'portforward'];
const alternatives = (names: string[]): string => `(?:${[...names].sort().join('|')})`;
const LONG_RUNNING_VERB_PATH = `${GROUP_VERSION_PATH}${alternatives(LONG_RUNNING_VERBS)}/.*`;
/** The watch query parameter, its key as sent (an escaped key may decode to `watch`). */
const WATCH_QUERY = `[^?]*\\?(?:.*&)?(?:watch|[^&=]*%[^&=]*)(?:[=&].*)?`;
const ESCAPED_PATH = '[^?]*%.*';
const PROFILER_PATH = '/debug/pprof/.*';
/** Verbs watch and proxy, the profiler, and what could be either to Go. */
const LONG_RUNNING: HeaderMatcher = {
  name: ':path',
  string_match: { safe_regex: { regex: [LONG_RUNNING_VERB_PATH, WATCH_QUERY, ESCAPED_PATH, PROFILER_PATH].join('|') } },
};
/** `{resource}/{name}/{subresource}`, in a namespace or not. */
const LONG_RUNNING_SUBRESOURCE: HeaderMatcher = {
  name: ':path',
  string_match: {
    safe_regex: {
      regex: `${GROUP_VERSION_PATH}(?:namespaces/${PATH_SEGMENT}/)?${PATH_SEGMENT}/${PATH_SEGMENT}/${alternatives(LONG_RUNNING_SUBRESOURCES)}(?:[/?].*)?`,
    },
  },
};

/** Upgrade requests (exec, attach, port-forward, proxy over WebSocket or SPDY/3.1) carry an Upgrade header. */
const UPGRADE_REQUEST: HeaderMatcher = { name: 'upgrade', present_match: true };
const NOT_UPGRADE_REQUEST: HeaderMatcher = { name: 'upgrade', present_match: true, invert_match: true };

/**
 * Watches (`?watch=true`, and the other common spellings kube-apiserver reads
 * as true) go over HTTP/2, many to a connection. A watch spelled otherwise
 * (or through the deprecated /watch/ path) still works over HTTP/1.1, on a
 * connection of its own.
 */
const WATCH_REQUEST: RouteMatch['query_parameters'] = [{ name: 'watch', string_match: { safe_regex: { regex: '1|[tT]|[tT]rue|TRUE' } } }];

/**
 * The client presented a certificate. Envoy completes no handshake with a
 * certificate the cluster client CA does not verify, so presented means
 * verified; `validated` would be false on a resumed TLS session, whose
 * certificate Envoy verified when the session began (and still reports in
 * x-forwarded-client-cert).
 */
const CLIENT_CERTIFICATE: RouteMatch['tls_context'] = { presented: { value: true } };

/** Suffix of the name of a route's client-certificate twin. */
const CLIENT_CERTIFICATE_ROUTE_SUFFIX = ' (client certificate)';

export function routeConfiguration(
  entries: readonly PlanEntry[],
  settings: Pick<TranslatorSettings, 'limits'> = {},
  overExtProc: ReadonlySet<MergedDocument> = new Set(),
): RouteConfiguration {
  // Every request that is not long-running: the apiserver's own timeout, and a little more.
  const timeout = sidecarLimits(settings).requestTimeoutSeconds + REQUEST_TIMEOUT_MARGIN_SECONDS;
  const routes: Route[] = [];
  const coreGroupRoute = entries.some((entry) => entry.match.kind === 'core-group');
  for (const entry of entries) {
    // Legacy documents after the peer-only ones (the plan's group documents) and before what would take them:
    // `/api/{v}` before the core group's prefix (which comes only when no core document is a peer's), the rest before the catch-all.
    if (entry.match.kind === 'core-group') routes.push(...legacyDocumentRoutes(entries, 'core-discovery', timeout, overExtProc));
    if (entry.match.kind === 'anything') {
      if (!coreGroupRoute) routes.push(...legacyDocumentRoutes(entries, 'core-discovery', timeout, overExtProc));
      routes.push(...legacyDocumentRoutes(entries, 'group-discovery', timeout, overExtProc));
    }
    routes.push(...entryRoutes(entry, timeout, overExtProc));
  }
  return { name: ROUTE_CONFIG_NAME, virtual_hosts: [{ name: ROUTE_CONFIG_NAME, domains: ['*'], routes }] };
}

/**
 * The legacy documents of group-versions and groups the local apiserver
 * serves at least partly (those only peers serve have their own routes, the
 * plan's group documents, before these): `/api/{v}` with the core document's
 * filter, `/apis/{g}` and `/apis/{g}/{v}` with the groups'; to where the
 * aggregated document goes. The filter merges the part's legacy entries
 * into the apiserver's 200 when it has any for the path, and lets anything
 * else through (docs/never-worse.md, "Merged documents").
 */
function legacyDocumentRoutes(
  entries: readonly PlanEntry[],
  document: 'core-discovery' | 'group-discovery',
  timeout: number,
  overExtProc: ReadonlySet<MergedDocument>,
): Route[] {
  const aggregated = entries.find((entry) => entry.match.kind === 'merged-document' && entry.match.document === document);
  if (aggregated === undefined) return [];
  const regex = document === 'core-discovery' ? '/api/[^/]+/?' : '/apis/[^/]+(?:/[^/]+)?/?';
  const label = document === 'core-discovery' ? '/api/{v}' : '/apis/{g}, /apis/{g}/{v}';
  return documentAnswerRoutes(
    `${aggregated.rule} ${document} legacy ${label}`,
    document,
    { safe_regex: { regex }, headers: [READ_ONLY, NOT_UPGRADE_REQUEST] },
    aggregated.destination,
    timeout,
    overExtProc,
  );
}

/** The Envoy routes of one plan entry, in order, named after its rule. */
function entryRoutes(entry: PlanEntry, timeout: number, overExtProc: ReadonlySet<MergedDocument>): Route[] {
  const { rule, match, destination } = entry;
  switch (match.kind) {
    case 'peer-proxied':
      return answerRoutes(
        rule,
        { prefix: '/', headers: [{ name: PEER_PROXIED_HEADER, present_match: true }] },
        destination,
        timeout,
        'an already proxied request',
      );
    case 'merged-document':
      return mergedDocumentRoutes(`${rule} ${match.document}`, match.document, destination, timeout, overExtProc);
    case 'core-group':
      return answerRoutes(`${catchAllName(entry)} (core group)`, { prefix: '/api/' }, destination, timeout, 'the core group', catchAllLogged(destination));
    case 'group-document':
      return groupDocumentRoutes(rule, match, destination, timeout);
    case 'resource':
      return resourceRoutes(rule, match, destination, timeout);
    case 'health': {
      // The local apiserver's own /healthz, /livez and /readyz (and their checks).
      const alternatives = HEALTH_PATH_PREFIXES.map((p) => escapeRegex(p)).join('|');
      return answerRoutes(`${rule} (health)`, { safe_regex: { regex: `(?:${alternatives})(?:/.*)?` } }, destination, timeout, 'a health endpoint');
    }
    case 'anything':
      return answerRoutes(catchAllName(entry), { prefix: '/' }, destination, timeout, 'the request', catchAllLogged(destination));
  }
}

/**
 * The catch-all's name: its rule, and while it goes to the local apiserver
 * the rules of what it takes there without a route of its own (the plan's
 * local entries).
 */
function catchAllName(entry: PlanEntry): string {
  return entry.destination.kind === 'local' ? [entry.rule, ...LOCAL_RULES].join(', ') : entry.rule;
}

/** A catch-all to the fallback peers is logged as a reroute of no particular resource. */
function catchAllLogged(destination: RequestDestination): LoggedRoute | undefined {
  return destination.kind === 'peers' ? loggedAs(destination, { group: '' }) : undefined;
}

/** The access log's record of a route that does not go local: a reroute or a 503, of what it takes. */
function loggedAs(destination: RequestDestination, what: { group: string; version?: string; resource?: string; subresource?: string }): LoggedRoute {
  return {
    kind: destination.kind === 'unavailable' ? 'unavailable' : 'reroute',
    group: what.group,
    version: what.version ?? '',
    resource: what.resource ?? '',
    subresource: what.subresource ?? '',
  };
}

/** Forwarding routes to where `destination` says (logged when `logged` is given), or the one 503 route of unavailable-503. */
function answerRoutes(name: string, match: RouteMatch, destination: RequestDestination, timeout: number, what: string, logged?: LoggedRoute): Route[] {
  if (destination.kind === 'unavailable') return [unavailableRoute(name, match, what, destination, logged)];
  return forwardRoutes(name, match, destination.kind === 'local' ? LOCAL_CLUSTER : peerClusterName(destination.peers), timeout, logged);
}

function resourceRoutes(rule: string, route: ResourceMatch, destination: RequestDestination, timeout: number): Route[] {
  const { pathForms, groupVersionPin } = resourcePathMatch(route);
  const pin: HeaderMatcher = { name: ':path', string_match: { safe_regex: { regex: groupVersionPin } } };
  const logged = loggedAs(destination, route);
  return pathForms.flatMap((form, i): Route[] => {
    const match: RouteMatch = { safe_regex: { regex: form }, headers: [pin] };
    const name = `${rule} ${describe(route)}${pathForms.length > 1 ? ` #${i + 1}` : ''}`;
    return answerRoutes(name, match, destination, timeout, describe(route), logged);
  });
}

/**
 * `/apis/{g}`, `/apis/{g}/{v}` (`/api/{v}`) where the local apiserver serves
 * nothing, and the group-version's OpenAPI v3 document
 * (`/openapi/v3/apis/{g}/{v}`, `/openapi/v3/api/{v}`, which the merged index
 * points at): the peer serves the document itself and authenticates the
 * caller; nothing is merged. The query
 * (the OpenAPI `hash`) is not part of what safe_regex matches.
 */
function groupDocumentRoutes(rule: string, document: { group: string; version?: string }, destination: RequestDestination, timeout: number): Route[] {
  const path = document.group === '' ? '/api' : `/apis/${escapeRegex(document.group)}`;
  const what = document.version === undefined ? `${document.group}` : `${document.group}/${document.version}`;
  const logged = loggedAs(destination, document);
  const routesFor = (label: string, regex: string): Route[] =>
    answerRoutes(`${rule} ${label} ${what}`, { safe_regex: { regex } }, destination, timeout, `the ${label} document of ${what}`, logged);
  if (document.version === undefined) return routesFor('discovery', `${path}/?`);
  const versioned = `${path}/${escapeRegex(document.version)}`;
  return [...routesFor('discovery', `${versioned}/?`), ...routesFor('openapi', `/openapi/v3${versioned}/?`)];
}

/**
 * Documents answered merged, after the local apiserver has authenticated and
 * authorized the client: discovery (`/api` and `/apis`, GET or HEAD, without
 * profile=nopeer: aggregated or legacy, as the apiserver's Content-Type
 * says) and the OpenAPI v3 index (`/openapi/v3`). The route decides which
 * document a request is for and switches on the filter that holds it
 * (documentFilters.ts), or ext_proc for a document too large to push
 * (`overExtProc`); either replaces the apiserver's 200 with the merged
 * document (the format the apiserver negotiated) and lets every other answer,
 * 401 and 403 included, through. Upgrade requests never are; already-proxied
 * ones matched earlier.
 */
function mergedDocumentRoutes(
  name: string,
  document: MergedDocument,
  destination: RequestDestination,
  timeout: number,
  overExtProc: ReadonlySet<MergedDocument>,
): Route[] {
  const path = `${escapeRegex(MERGED_DOCUMENT_PATHS[document])}/?`;
  const match: RouteMatch =
    document === 'openapi-index'
      ? { safe_regex: { regex: path }, headers: [READ_ONLY, NOT_UPGRADE_REQUEST] }
      : {
          safe_regex: { regex: path },
          headers: [READ_ONLY, { name: 'accept', string_match: { contains: NOPEER_PROFILE, ignore_case: true }, invert_match: true }, NOT_UPGRADE_REQUEST],
        };
  return documentAnswerRoutes(name, document, match, destination, timeout, overExtProc);
}

const READ_ONLY: HeaderMatcher = { name: ':method', string_match: { safe_regex: { regex: 'GET|HEAD' } } };

/** A merged document's routes (with and without a client certificate): to the apiserver, its answerer (filter or ext_proc) on. */
function documentAnswerRoutes(
  name: string,
  document: MergedDocument,
  match: RouteMatch,
  destination: RequestDestination,
  timeout: number,
  overExtProc: ReadonlySet<MergedDocument>,
): Route[] {
  if (destination.kind === 'unavailable') throw new Error(`merged document ${document}: answered by an apiserver, never a 503`);
  const set = destination.kind === 'local' ? LOCAL_CLUSTER : peerClusterName(destination.peers);
  return [true, false].map((certificate) => ({
    name: `${name}${certificate ? CLIENT_CERTIFICATE_ROUTE_SUFFIX : ''}`,
    match: certificate ? { ...match, tls_context: CLIENT_CERTIFICATE } : match,
    // Discovery and the OpenAPI index are not long-running.
    route: forwardAction(flavouredClusterName(set, { protocol: 'http1', frontProxy: certificate }), timeout),
    // To a fallback peer: marked, so it answers for itself and never proxies further.
    ...(set === LOCAL_CLUSTER ? {} : { request_headers_to_add: [PEER_PROXIED] }),
    typed_per_filter_config: {
      ...mergedDocumentAnswerer(document, overExtProc),
      ...(certificate ? {} : identityFilterDisabled()),
    },
  }));
}

/** Marks a request sent to a peer, so that the peer serves it itself (proxied-once). */
const PEER_PROXIED = { header: { key: PEER_PROXIED_HEADER, value: 'true' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' as const };

/**
 * Five flavours, in this order: upgrades (HTTP/1.1, as Envoy requires), watches
 * (HTTP/2), the other long-running requests (two matchers, HTTP/1.1), all with
 * no timeout, and everything else (HTTP/1.1), which gets `timeout` (seconds)
 * as route and idle timeout. Each is preceded by its client-certificate twin
 * (identity filter on, front-proxy connection); the others switch the
 * identity filter off. `rerouted` (routes to peers) marks the request as
 * proxied and puts the route in the access log (route metadata).
 */
function forwardRoutes(name: string, match: RouteMatch, set: string, timeout: number, rerouted?: LoggedRoute): Route[] {
  const rerouteFields = rerouted
    ? {
        request_headers_to_add: [PEER_PROXIED],
        metadata: loggedRouteMetadata(rerouted),
      }
    : {};
  const withHeader = (header: HeaderMatcher): RouteMatch => ({ ...match, headers: [...(match.headers ?? []), header] });
  const flavours: Array<[string, RouteMatch, UpstreamFlavour['protocol'], number]> = [
    [`${name} (upgrade)`, withHeader(UPGRADE_REQUEST), 'http1', NO_TIMEOUT],
    [`${name} (watch)`, { ...match, query_parameters: WATCH_REQUEST }, 'http2', NO_TIMEOUT],
    [`${name} (long-running)`, withHeader(LONG_RUNNING), 'http1', NO_TIMEOUT],
    [`${name} (long-running subresource)`, withHeader(LONG_RUNNING_SUBRESOURCE), 'http1', NO_TIMEOUT],
    [name, match, 'http1', timeout],
  ];
  return flavours.flatMap(([flavourName, flavourMatch, protocol, flavourTimeout]): Route[] => [
    {
      name: `${flavourName}${CLIENT_CERTIFICATE_ROUTE_SUFFIX}`,
      match: { ...flavourMatch, tls_context: CLIENT_CERTIFICATE },
      route: forwardAction(flavouredClusterName(set, { protocol, frontProxy: true }), flavourTimeout),
      ...rerouteFields,
    },
    {
      name: flavourName,
      match: flavourMatch,
      route: forwardAction(flavouredClusterName(set, { protocol, frontProxy: false }), flavourTimeout),
      ...rerouteFields,
      typed_per_filter_config: identityFilterDisabled(),
    },
  ]);
}

/** unavailable-503: a 503 the client retries, never a 404 that garbage collection would act on. */
function unavailableRoute(name: string, match: RouteMatch, what: string, action: Unavailable, logged: LoggedRoute | undefined): Route {
  const body = serviceUnavailableJson(`${what} is served only by apiservers that are unreachable or restarting (${action.servedBy.join(', ')})`);
  return {
    name,
    match,
    ...(logged ? { metadata: loggedRouteMetadata(logged) } : {}),
    // Answered by Envoy itself: no identity needed, so no client-certificate twin.
    typed_per_filter_config: identityFilterDisabled(),
    direct_response: { status: 503, body: { inline_string: body } },
    response_headers_to_add: [
      { header: { key: 'retry-after', value: String(RETRY_AFTER_SECONDS) }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
      { header: { key: 'content-type', value: 'application/json' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
    ],
  };
}

/** Kubernetes' GroupVersionResource notation: `batch/v1, Resource=jobs` (core: `/v1, ...`). */
function describe(route: ResourceMatch): string {
  const resource = route.subresource === undefined ? route.resource : `${route.resource}/${route.subresource}`;
  return `${route.group}/${route.version}, Resource=${resource}`;
}
