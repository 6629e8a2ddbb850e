// The translator turns a sidecar plan into Envoy resources that route every
// request where the plan says, and that Envoy itself accepts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Cluster } from '../../src/generated/envoy/config/cluster/v3/Cluster.js';
import type { HeaderMatcher } from '../../src/generated/envoy/config/route/v3/HeaderMatcher.js';
import type { Route } from '../../src/generated/envoy/config/route/v3/Route.js';
import type { RouteMatch } from '../../src/generated/envoy/config/route/v3/RouteMatch.js';
import type { ExternalProcessor } from '../../src/generated/envoy/extensions/filters/http/ext_proc/v3/ExternalProcessor.js';
import type { ExtProcPerRoute } from '../../src/generated/envoy/extensions/filters/http/ext_proc/v3/ExtProcPerRoute.js';
import type { FilterConfig } from '../../src/generated/envoy/config/route/v3/FilterConfig.js';
import type { Wasm } from '../../src/generated/envoy/extensions/filters/http/wasm/v3/Wasm.js';
import type { HeaderMutation } from '../../src/generated/envoy/extensions/filters/http/header_mutation/v3/HeaderMutation.js';
import type { HttpConnectionManager } from '../../src/generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpConnectionManager.js';
import type { DownstreamTlsContext } from '../../src/generated/envoy/extensions/transport_sockets/tls/v3/DownstreamTlsContext.js';
import type { UpstreamTlsContext } from '../../src/generated/envoy/extensions/transport_sockets/tls/v3/UpstreamTlsContext.js';
import type { HttpProtocolOptions } from '../../src/generated/envoy/extensions/upstreams/http/v3/HttpProtocolOptions.js';
import { parseRequestPath } from '../../src/model/requestInfo.js';
import type { GroupDocumentRoute, PlannedApiserver, RequestDestination, ResourceRoute, SidecarPlan } from '../../src/planner/plan.js';
import { destinationForRequest } from '../../src/planner/planner.js';
import {
  CONTROL_PLANE_CLUSTER,
  PEER_PROXIED_HEADER,
  flavouredClusterName,
  peerClusterName,
  UPSTREAM_FLAVOURS,
  translateSidecar,
  type EnvoyResources,
  type TranslatorSettings,
  type UpstreamFlavour,
} from '../../src/translator/translator.js';
import { envoyRoot } from '../../src/xds/protos.js';
import { unknownFields, validateWithEnvoy } from '../support/validate.js';
import { throwawaySettings, unpack } from '../support/translatorFixtures.js';
import type { ResponseMapper } from '../../src/generated/envoy/extensions/filters/network/http_connection_manager/v3/ResponseMapper.js';

// ---------------------------------------------------------------- fixtures

function apiserver(name: string, host: string): PlannedApiserver {
  return { name, address: { host, port: 6443 } };
}

const A = apiserver('a', '10.0.0.1');
const B = apiserver('b', '10.0.0.2');
const C = apiserver('c', '10.0.0.3');

function plan(routes: ResourceRoute[], peers: PlannedApiserver[] = [B, C], groupDocuments: GroupDocumentRoute[] = []): SidecarPlan {
  return { node: 'a', local: A, peers, routes, groupDocuments };
}

const NO_PEERS = plan([], []);

/** batch/v1 and storagemigration.k8s.io/v1 are served only by peers; the local apiserver serves batch/v2. */
const REROUTES = plan(
  [
    { group: '', version: 'v1', resource: 'pods', subresource: 'ephemeralcontainers', action: { kind: 'peers', peers: ['b'] } },
    { group: 'batch', version: 'v1', resource: 'cronjobs', action: { kind: 'peers', peers: ['b', 'c'] } },
    { group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['b', 'c'] } },
    { group: 'storagemigration.k8s.io', version: 'v1', resource: 'storageversionmigrations', action: { kind: 'peers', peers: ['c'] } },
  ],
  [B, C],
  [
    { group: 'batch', version: 'v1', action: { kind: 'peers', peers: ['b', 'c'] } },
    { group: 'storagemigration.k8s.io', action: { kind: 'peers', peers: ['c'] } },
    { group: 'storagemigration.k8s.io', version: 'v1', action: { kind: 'peers', peers: ['c'] } },
  ],
);

/** Reroutes outside the core group only: core requests take the shortcut. */
const NON_CORE_REROUTES = plan([{ group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['b', 'c'] } }]);

/** apps/v1 is served only by an unreachable peer. */
const UNAVAILABLE = plan(
  [
    { group: 'apps', version: 'v1', resource: 'deployments', action: { kind: 'unavailable', servedBy: ['b'] } },
    { group: '', version: 'v1', resource: 'pods', subresource: 'resize', action: { kind: 'unavailable', servedBy: ['b', 'c'] } },
  ],
  [B, C],
  [
    { group: 'apps', action: { kind: 'unavailable', servedBy: ['b'] } },
    { group: 'apps', version: 'v1', action: { kind: 'unavailable', servedBy: ['b'] } },
  ],
);

/** The local apiserver is down: what it served goes to b, what it would have answered (and its 404s) to the fallback b and c. */
const FALLBACK: SidecarPlan = {
  ...plan([{ group: '', version: 'v1', resource: 'pods', action: { kind: 'peers', peers: ['b'] } }]),
  fallback: { kind: 'peers', peers: ['b', 'c'] },
};

/** Every grammar corner at once: namespaces and its subresources, resources named like verbs, nested subresource routes. */
const CONTRACT = plan([
  { group: '', version: 'v1', resource: 'finalize', action: { kind: 'peers', peers: ['c'] } },
  { group: '', version: 'v1', resource: 'namespaces', action: { kind: 'peers', peers: ['b'] } },
  { group: '', version: 'v1', resource: 'namespaces', subresource: 'finalize', action: { kind: 'peers', peers: ['c'] } },
  { group: '', version: 'v1', resource: 'namespaces', subresource: 'other', action: { kind: 'unavailable', servedBy: ['c'] } },
  { group: '', version: 'v1', resource: 'pods', subresource: 'ephemeralcontainers', action: { kind: 'peers', peers: ['b', 'c'] } },
  { group: '', version: 'v1', resource: 'pods', subresource: 'status', action: { kind: 'unavailable', servedBy: ['c'] } },
  { group: '', version: 'v1', resource: 'status', action: { kind: 'peers', peers: ['b'] } },
  { group: '', version: 'v1', resource: 'watch', action: { kind: 'peers', peers: ['b', 'c'] } },
  { group: '', version: 'v1', resource: 'watch', subresource: 'log', action: { kind: 'peers', peers: ['c'] } },
  { group: 'apps', version: 'v1', resource: 'deployments', subresource: 'scale', action: { kind: 'unavailable', servedBy: ['b'] } },
  { group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['c'] } },
  { group: 'batch', version: 'v1', resource: 'jobs', subresource: 'status', action: { kind: 'peers', peers: ['b'] } },
]);

/** The longest built-in names: their route regexes must fit Envoy's RE2 program-size limit. */
const LONG_NAMES = plan([
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1alpha1',
    resource: 'validatingadmissionpolicybindings',
    action: { kind: 'peers', peers: ['b'] },
  },
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1alpha1',
    resource: 'validatingadmissionpolicies',
    subresource: 'status',
    action: { kind: 'unavailable', servedBy: ['b'] },
  },
  {
    group: 'flowcontrol.apiserver.k8s.io',
    version: 'v1beta3',
    resource: 'prioritylevelconfigurations',
    subresource: 'status',
    action: { kind: 'peers', peers: ['b', 'c'] },
  },
  { group: '', version: 'v1', resource: 'namespaces', subresource: 'finalize', action: { kind: 'peers', peers: ['b'] } },
]);

let certDir: string;
let settings: TranslatorSettings;

before(() => {
  certDir = mkdtempSync(join(tmpdir(), 'mvproxy-translator-'));
  settings = throwawaySettings(certDir);
});

after(() => rmSync(certDir, { recursive: true, force: true }));

// ---------------------------------------------------------------- helpers

function assertRetryableStatus(mapper: ResponseMapper | undefined, message: RegExp): void {
  assert.deepEqual(mapper?.status_code, { value: 503 });
  const status = JSON.parse(mapper?.body?.inline_string ?? '') as { code: number; reason: string; message: string };
  assert.equal(status.code, 503);
  assert.equal(status.reason, 'ServiceUnavailable');
  assert.match(status.message, message);
  assert.equal(mapper?.body_format_override?.content_type, 'application/json');
  assert.deepEqual(
    mapper?.headers_to_add?.map((h) => [h.header?.key, h.header?.value]),
    [['retry-after', '1']],
  );
}

function connectionManager(resources: EnvoyResources): HttpConnectionManager {
  const filter = resources.listeners[0]?.filter_chains?.[0]?.filters?.[0];
  assert.equal(filter?.name, 'envoy.filters.network.http_connection_manager');
  return unpack<HttpConnectionManager>(filter?.typed_config, 'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager');
}

function routesOf(resources: EnvoyResources): Route[] {
  assert.equal(resources.routes.length, 1);
  return resources.routes[0]?.virtual_hosts?.[0]?.routes ?? [];
}

function cluster(resources: EnvoyResources, name: string): Cluster {
  const found = resources.clusters.find((c) => c.name === name);
  assert.ok(found, `cluster ${name}`);
  return found;
}

interface TestRequest {
  /** As sent by the client; Envoy normalizes it before routing. */
  path: string;
  headers?: Record<string, string>;
  /** The client presented a certificate Envoy verified. */
  clientCert?: boolean;
}

/**
 * What Envoy's `normalize_path` does before routing (checked against Envoy
 * 1.40): decode escaped unreserved characters, turn backslashes into slashes,
 * remove dot segments; other escapes and the query stay as they are.
 */
function envoyNormalize(rawPath: string): string {
  const queryAt = rawPath.indexOf('?');
  const path = queryAt === -1 ? rawPath : rawPath.slice(0, queryAt);
  const query = queryAt === -1 ? '' : rawPath.slice(queryAt);
  const decoded = path.replace(/\\/g, '/').replace(/%([0-9A-Fa-f]{2})/g, (escaped, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return /^[A-Za-z0-9\-._~]$/.test(char) ? char : escaped;
  });
  const segments = decoded.split('/');
  const output: string[] = [];
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '.' || segment === '..') {
      if (segment === '..' && output.length > 1) output.pop();
      if (last) output.push('');
      return;
    }
    output.push(segment);
  });
  return (output.join('/') || '/') + query;
}

function fullMatch(regex: string, value: string): boolean {
  return new RegExp(`^(?:${regex})$`).test(value);
}

function headerMatches(matcher: HeaderMatcher, path: string, headers: Record<string, string>): boolean {
  const known = new Set(['name', 'present_match', 'string_match', 'invert_match']);
  for (const key of Object.keys(matcher)) assert.ok(known.has(key), `the test evaluator understands header matcher field ${key}`);
  const value = matcher.name === ':path' ? path : matcher.name === ':method' ? (headers[':method'] ?? 'GET') : headers[matcher.name ?? ''];
  const invert = matcher.invert_match === true;
  if (matcher.present_match) return (value !== undefined) !== invert;
  const stringMatch = matcher.string_match ?? {};
  for (const key of Object.keys(stringMatch)) assert.ok(['safe_regex', 'contains', 'ignore_case'].includes(key), `string matcher field ${key}`);
  if (value === undefined) return false; // Envoy: a missing header matches no string matcher, inverted or not
  if (stringMatch.contains !== undefined) {
    const found = stringMatch.ignore_case ? value.toLowerCase().includes(stringMatch.contains.toLowerCase()) : value.includes(stringMatch.contains);
    return found !== invert;
  }
  const regex = stringMatch.safe_regex?.regex;
  assert.ok(regex !== undefined, `header matcher ${matcher.name} is present_match, contains or a safe_regex`);
  return fullMatch(regex, value) !== invert;
}

/** Envoy's route match for the fields the translator uses; any other field fails the test. */
function routeMatches(match: RouteMatch, request: TestRequest): boolean {
  const known = new Set(['prefix', 'safe_regex', 'headers', 'tls_context', 'query_parameters']);
  for (const key of Object.keys(match)) assert.ok(known.has(key), `the test evaluator understands route match field ${key}`);
  const path = envoyNormalize(request.path);
  const pathWithoutQuery = path.split('?')[0] ?? '';
  const query = new URLSearchParams(path.split('?')[1] ?? '');
  for (const parameter of match.query_parameters ?? []) {
    assert.deepEqual(Object.keys(parameter).sort(), ['name', 'string_match']);
    const regex = parameter.string_match?.safe_regex?.regex;
    assert.ok(regex !== undefined && Object.keys(parameter.string_match ?? {}).length === 1, 'query parameters are matched by safe_regex');
    const value = query.get(parameter.name ?? '');
    if (value === null || !fullMatch(regex, value)) return false;
  }
  if (match.tls_context) {
    // Presented means verified (a certificate that fails verification fails the handshake), resumed sessions included.
    assert.deepEqual(match.tls_context, { presented: { value: true } });
    if (request.clientCert !== true) return false;
  }
  if (match.prefix !== undefined && match.prefix !== null && !path.startsWith(match.prefix)) return false;
  if (match.safe_regex?.regex !== undefined && !fullMatch(match.safe_regex.regex, pathWithoutQuery)) return false;
  return (match.headers ?? []).every((h) => headerMatches(h, path, request.headers ?? {}));
}

function selectRoute(resources: EnvoyResources, request: TestRequest): Route {
  const route = routesOf(resources).find((r) => routeMatches(r.match ?? {}, request));
  assert.ok(route, `some route matches ${request.path}`);
  return route;
}

/** A destination as a comparable string: `local`, `peers b,c`, `unavailable c`. */
function describeDestination(destination: RequestDestination): string {
  if (destination.kind === 'local') return 'local';
  if (destination.kind === 'peers') return `peers ${destination.peers.join(',')}`;
  return `unavailable ${destination.servedBy.join(',')}`;
}

/**
 * The cluster flavour a request should travel in: upgrades over HTTP/1.1,
 * watches over HTTP/2, the rest over HTTP/1.1; the front-proxy certificate
 * for client-certificate requests only.
 */
function expectedFlavour(request: TestRequest, upgrade: boolean): UpstreamFlavour {
  const watch = !upgrade && /[?&]watch=(1|t|T|true|True|TRUE)(&|$)/.test(request.path);
  return { protocol: watch ? 'http2' : 'http1', frontProxy: request.clientCert === true };
}

/** What the selected route does, in the same terms; a route to the wrong flavour of the right cluster is reported as such. */
function routedDestination(p: SidecarPlan, route: Route, flavour: UpstreamFlavour): string {
  if (route.direct_response) {
    assert.equal(route.direct_response.status, 503);
    const body = route.direct_response.body?.inline_string ?? '';
    const servedBy = /\(([^)]*)\)$/.exec((JSON.parse(body) as { message: string }).message)?.[1] ?? '';
    return `unavailable ${servedBy.split(', ').join(',')}`;
  }
  const clusterName = route.route?.cluster ?? '';
  const actions = [...p.routes, ...p.groupDocuments].map((r) => r.action).concat(p.fallback ? [p.fallback] : []);
  const sets = [['local'], ...actions.flatMap((a) => (a.kind === 'peers' ? [a.peers] : []))];
  for (const set of sets) {
    const base = set[0] === 'local' ? 'local' : peerClusterName(set);
    if (clusterName === flavouredClusterName(base, flavour)) return base === 'local' ? 'local' : `peers ${set.join(',')}`;
  }
  return `unknown cluster ${clusterName} (expected flavour ${JSON.stringify(flavour)})`;
}

const UPGRADE = { upgrade: 'websocket', connection: 'Upgrade' };
/** What kubectl and client-go send for aggregated discovery (without profile=nopeer). */
const AGGREGATED =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

/** A route's generic per-filter switch (FilterConfig) for `filter`, if it has one. */
function filterSwitch(route: Route, filter: string): FilterConfig | undefined {
  const perRoute = route.typed_per_filter_config?.[filter];
  return perRoute === undefined ? undefined : unpack<FilterConfig>(perRoute, 'envoy.config.route.v3.FilterConfig');
}

/** Whether Envoy calls ext_proc on this route: off in the filter chain, on where the route says so. */
function extProcOn(route: Route): boolean {
  return filterSwitch(route, 'envoy.filters.http.ext_proc')?.disabled === false;
}

/** Whether the identity filter runs on this route: on in the filter chain, off where the route says so. */
function identityOn(route: Route): boolean {
  return filterSwitch(route, 'mvproxy.identity')?.disabled !== true;
}

/** The routes that select a merged document (ext_proc on). */
const MERGED_ROUTE = /^(discovery \(aggregated|openapi index)/;

// ---------------------------------------------------------------- tests

describe('translateSidecar', () => {
  describe('routing contract', () => {
    /** Paths hand-picked for the parser's corner cases. */
    const cornerCases = [
      '/',
      '/api',
      '/api/v1',
      '/apis',
      '/apis/batch',
      '/apis/batch/v1',
      '/apis/batch/v1/',
      '/healthz',
      '/version',
      '/openapi/v3/apis/batch/v1',
      '/api/v1/namespaces',
      '/api/v1/namespaces/',
      '/api/v1/namespaces/foo',
      '/api/v1/namespaces/foo/',
      '/api/v1/namespaces/foo//',
      '/api/v1/namespaces/foo/status',
      '/api/v1/namespaces/foo/finalize',
      '/api/v1/namespaces/foo/finalize/x',
      '/api/v1/namespaces/foo/other',
      '/api/v1/namespaces/foo/pods',
      '/api/v1/namespaces/foo/pods/p/status',
      '/api/v1/namespaces/foo/pods/p/ephemeralcontainers',
      '/api/v1/namespaces/foo/pods/p/log',
      '/api/v1/namespaces/foo/namespaces/bar/other',
      '/api/v1/namespaces/foo/namespaces/bar/finalize',
      '/api/v1/namespaces//pods/p/status',
      '/api/v1/namespaces//status',
      '/api/v1/namespaces/foo/status/extra',
      '/api/v1/pods//status',
      '/api/v1/pods/p/status/',
      '/api/v1/status',
      '/api/v1/status/x',
      '/api/v1/finalize',
      '/api/v1/namespaces/foo/finalize',
      '/api/v1/watch',
      '/api/v1/watch/',
      '/api/v1/watch/watch',
      '/api/v1/watch/watch/x/log',
      '/api/v1/proxy/watch/x/log',
      '/api/v1/namespaces/foo/watch/x/log',
      '/api/v1/watch/namespaces',
      '/api/v1/watch/namespaces/foo',
      '/api/v1/watch/namespaces/foo/pods',
      '/api/v1/proxy/namespaces/foo/pods/p/status',
      '/api/v1/watch/namespaces/foo/pods/p/status',
      '/apis/batch/v1/jobs',
      '/apis/batch/v1/jobs?watch=1&resourceVersion=0',
      '/apis/batch/v1/jobs/j/status?x=/pods/a%zz',
      '/apis/batch/v1/namespaces/ns/jobs/j',
      '/apis/batch/v1/namespaces/ns/jobs/j/status',
      '/apis/batch/v1/watch/namespaces/ns/jobs',
      '/apis/batch/v1/proxy/namespaces/ns/jobs/j/status',
      '/apis/batch/v1/namespaces/ns/jobsx',
      '/apis/batch/v1/namespaces/ns/job',
      '/apis/batch/v2/jobs',
      '/apis/batchx/v1/jobs',
      '/apis/batch/v1/cronjobs',
      '/apis/apps/v1/namespaces/ns/deployments/d/scale',
      '/apis/apps/v1/namespaces/ns/deployments/d',
      '/apis/apps/v1/deployments//scale',
      '//api/v1/namespaces/foo',
      '///apis/batch/v1/jobs',
      '/apis//batch/v1/jobs',
      '/api/v1//namespaces',
      // Encodings and normalization.
      '/api/v1/namespaces/f%6Fo/p%6Fds/p/st%61tus',
      '/apis/b%61tch/v1/jobs',
      '/%61pis/batch/v1/jobs',
      '/api/v1/namespaces/foo/pods/a%2Fb',
      '/api/v1/namespaces/foo/pods/a%2Fb/status',
      '/api/v1/namespaces/a%2Fb/status',
      '/api/v1/namespaces/foo/pods/p%3A1/status',
      '/api/v1/namespaces/foo/pods/a%zz/status',
      '/apis/batch/v1/jobs/%',
      '/apis/batch/v1/jobs/%4',
      '/apis/batch/v1/namespaces/ns/jobs/j%25/status',
      '/apis/batch/v1/x/../jobs',
      '/apis/batch/v1/jobs/j/./status',
      '/apis/batch/v1/jobs/j/status/..',
      '/apis/batch/v1/%2e%2e/v1/jobs',
      '/apis/batch/v1/namespaces\\ns\\jobs',
    ];

    /** Every shape of path for a set of resources and subresources, generated. */
    function generatedPaths(): string[] {
      const groupVersions = ['/api/v1', '/apis/batch/v1', '/apis/apps/v1'];
      const resources = ['namespaces', 'pods', 'jobs', 'cronjobs', 'deployments', 'status', 'finalize', 'watch', 'proxy', 'other'];
      const tails = ['', '/', '/n', '/n/', '/n/status', '/n/finalize', '/n/ephemeralcontainers', '/n/scale', '/n/log', '/n/other', '/n/status/x', '//status'];
      const heads = ['', 'watch/', 'proxy/', 'namespaces/ns/', 'namespaces//', 'watch/namespaces/ns/', 'proxy/namespaces/ns/'];
      const paths: string[] = [];
      for (const gv of groupVersions) {
        for (const head of heads) for (const resource of resources) for (const tail of tails) paths.push(`${gv}/${head}${resource}${tail}`);
      }
      return paths;
    }

    const paths = [...cornerCases, ...generatedPaths()];

    /** Same destination with and without a client certificate; the identity filter only for certificates, ext_proc only for merged documents. */
    function assertContract(p: SidecarPlan, request: TestRequest, alreadyProxied: boolean, upgrade: boolean): void {
      const resources = translateSidecar(p, settings);
      const expected = describeDestination(destinationForRequest(p, parseRequestPath(envoyNormalize(request.path)), { alreadyProxied }));
      for (const clientCert of [false, true]) {
        const what = `${request.path}${alreadyProxied ? ' (already proxied)' : ''}${upgrade ? ' (upgrade)' : ''}${clientCert ? ' (client certificate)' : ''}`;
        const route = selectRoute(resources, { ...request, clientCert });
        assert.equal(routedDestination(p, route, expectedFlavour({ ...request, clientCert }, upgrade)), expected, what);
        const wantsExtProc = MERGED_ROUTE.test(route.name ?? '');
        assert.equal(extProcOn(route), wantsExtProc, `${what}: ext_proc ${wantsExtProc ? 'on' : 'off'} (route ${route.name})`);
        const wantsIdentity = clientCert && !route.direct_response;
        assert.equal(identityOn(route), wantsIdentity, `${what}: identity filter ${wantsIdentity ? 'on' : 'off'} (route ${route.name})`);
      }
    }

    test('route matchers send every path where parseRequestPath and the plan send it', () => {
      for (const path of paths) assertContract(CONTRACT, { path }, false, false);
    });

    test('upgrade requests go where their path goes, over the HTTP/1.1 flavour of the cluster', () => {
      for (const path of paths) assertContract(CONTRACT, { path, headers: UPGRADE }, false, true);
    });

    test('watches go where their path goes, over the HTTP/2 flavour of the cluster; watch=false is not a watch', () => {
      for (const query of ['watch=true', 'watch=1', 'resourceVersion=0&watch=True', 'watch=false', 'watch=0']) {
        for (const path of paths) assertContract(CONTRACT, { path: `${path.split('?')[0]}?${query}` }, false, false);
      }
    });

    test('requests already carrying x-kubernetes-peer-proxied are always served locally', () => {
      for (const path of paths) assertContract(CONTRACT, { path, headers: { [PEER_PROXIED_HEADER]: 'true' } }, true, false);
      for (const path of paths) {
        assertContract(CONTRACT, { path, headers: { [PEER_PROXIED_HEADER]: 'true', ...UPGRADE } }, true, true);
      }
    });

    test('discovery requests go where their path goes, and through ext_proc on the merged-document routes only', () => {
      const accepts = [AGGREGATED, `${AGGREGATED};profile=nopeer,${AGGREGATED}`, 'application/json'];
      for (const p of [CONTRACT, REROUTES, UNAVAILABLE, FALLBACK]) {
        for (const path of [...cornerCases, '/apis/', '/api/', '/apis/batch/', '/apis/batch/v1?timeout=32s']) {
          for (const accept of accepts) assertContract(p, { path, headers: { accept } }, false, false);
          assertContract(p, { path, headers: { accept: AGGREGATED, ...UPGRADE } }, false, true);
        }
      }
    });

    test('the contract holds for every representative plan', () => {
      for (const p of [NO_PEERS, NON_CORE_REROUTES, REROUTES, UNAVAILABLE, LONG_NAMES, FALLBACK]) {
        const documents = ['/apis/apps', '/apis/apps/', '/apis/storagemigration.k8s.io', '/apis/storagemigration.k8s.io/v1/', '/apis/batch/v2'];
        const openapi = [
          '/openapi/v3',
          '/openapi/v3/',
          '/openapi/v3/apis/storagemigration.k8s.io/v1?hash=AB12',
          '/openapi/v3/apis/batch/v2',
          '/openapi/v3/apis/apps',
          '/openapi/v3/api/v1',
        ];
        const health = ['/healthz', '/livez', '/readyz', '/readyz/etcd', '/readyz?verbose', '/healthzz', '/version'];
        documents.push(...openapi, ...health);
        for (const path of [...cornerCases, ...documents, '/apis/admissionregistration.k8s.io/v1alpha1/validatingadmissionpolicies/p/status']) {
          assertContract(p, { path }, false, false);
        }
      }
    });

    test('route regexes stay in the subset RE2 and JavaScript agree on', () => {
      const regexes = [REROUTES, UNAVAILABLE, CONTRACT, LONG_NAMES]
        .flatMap((p) => routesOf(translateSidecar(p, settings)))
        .flatMap((r) => [r.match?.safe_regex?.regex, ...(r.match?.headers ?? []).map((h) => h.string_match?.safe_regex?.regex)])
        .filter((regex): regex is string => regex !== undefined);
      assert.ok(regexes.length > 0);
      for (const regex of regexes) {
        // No lookaround, backreferences, named groups, lazy or possessive quantifiers, counted repetition.
        assert.doesNotMatch(regex, /\(\?[=!<]|\\[1-9]|\(\?P|[*+?}]\?|[*+?]\+|\{\d/, regex);
        assert.doesNotThrow(() => new RegExp(regex), regex);
      }
    });
  });

  describe('routes', () => {
    test('core-group requests go local before the resource routes unless the plan sends some of the core group elsewhere', () => {
      const core = '/api/v1/namespaces/default/configmaps/c';
      const shortcut = (p: SidecarPlan): boolean => selectRoute(translateSidecar(p, settings), { path: core }).name === 'local (core group)';
      assert.equal(shortcut(NON_CORE_REROUTES), true);
      assert.equal(shortcut(REROUTES), false, 'pods/ephemeralcontainers is rerouted');
      assert.equal(shortcut(plan([], [B, C], [{ group: '', version: 'v2', action: { kind: 'peers', peers: ['b'] } }])), false);
    });

    test('rerouted requests are marked x-kubernetes-peer-proxied; local ones are not', () => {
      for (const route of [REROUTES, FALLBACK].flatMap((p) => routesOf(translateSidecar(p, settings))).filter((r) => r.route)) {
        const marks = (route.request_headers_to_add ?? []).filter((h) => h.header?.key === PEER_PROXIED_HEADER);
        if (route.route?.cluster?.startsWith('local')) {
          assert.deepEqual(marks, [], route.name);
        } else {
          assert.deepEqual(marks, [{ header: { key: PEER_PROXIED_HEADER, value: 'true' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }], route.name);
        }
      }
    });

    test('an unavailable resource answers 503 with a metav1.Status body, JSON content type and Retry-After', () => {
      const route = selectRoute(translateSidecar(UNAVAILABLE, settings), { path: '/apis/apps/v1/namespaces/ns/deployments' });
      assert.equal(route.direct_response?.status, 503);
      const status: unknown = JSON.parse(route.direct_response?.body?.inline_string ?? '');
      assert.deepEqual(status, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'the server is currently unable to handle the request: apps/v1, Resource=deployments is served only by ' +
          'apiservers that are unreachable or restarting (b)',
        reason: 'ServiceUnavailable',
        code: 503,
      });
      const headers = Object.fromEntries((route.response_headers_to_add ?? []).map((h) => [h.header?.key, h.header?.value]));
      assert.deepEqual(headers, { 'retry-after': '1', 'content-type': 'application/json' });
    });

    test('every forwarding route streams without a timeout and retries only failures before sending', () => {
      for (const route of routesOf(translateSidecar(REROUTES, settings))) {
        if (route.route === undefined || route.route === null) continue;
        assert.deepEqual(route.route.timeout, { seconds: 0 }, route.name);
        assert.deepEqual(route.route.idle_timeout, { seconds: 3600 }, route.name);
        const retry = route.route.retry_policy;
        assert.equal(retry?.retry_on, 'connect-failure,refused-stream,reset-before-request', route.name);
        assert.deepEqual(retry?.num_retries, { value: 3 });
        assert.deepEqual(
          retry?.retry_host_predicate?.map((p) => [p.name, p.typed_config && 'type_url' in p.typed_config ? p.typed_config.type_url : undefined]),
          [['envoy.retry_host_predicates.previous_hosts', 'type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate']],
        );
      }
    });

    test('subresource routes come before the route of their resource', () => {
      const names = routesOf(translateSidecar(CONTRACT, settings)).map((r) => r.name ?? '');
      const position = (name: string): number => names.indexOf(name);
      assert.ok(position('reroute batch/v1, Resource=jobs/status') < position('reroute batch/v1, Resource=jobs'));
      assert.ok(position('reroute /v1, Resource=namespaces/finalize #1') < position('reroute /v1, Resource=namespaces #1'));
    });
  });

  describe('clusters', () => {
    test('the local apiserver and every peer get a cluster in each of the four flavours, whether or not a route uses them', () => {
      const resources = translateSidecar(plan([]), settings);
      const flavours = (set: string): string[] => [set, `${set}-front-proxy`, `${set}-h1`, `${set}-h1-front-proxy`];
      assert.deepEqual(
        resources.clusters.map((c) => c.name),
        [...flavours('local'), ...flavours('peer-b'), ...flavours('peer-c')],
      );
      for (const c of resources.clusters) {
        assert.equal(c.eds_cluster_config?.service_name, /^(local|peer-b|peer-c)/.exec(c.name ?? '')?.[0], `${c.name} shares its set's endpoints`);
      }
      assert.deepEqual(
        resources.endpoints.map((e) => [e.cluster_name, e.endpoints?.[0]?.lb_endpoints?.map((l) => l.endpoint?.address?.socket_address?.address)]),
        [
          ['local', ['10.0.0.1']],
          ['peer-b', ['10.0.0.2']],
          ['peer-c', ['10.0.0.3']],
        ],
      );
    });

    test('with an egress proxy, peer connections are tunneled through it and the local apiserver is reached directly', () => {
      const egress = { ...settings, upstream: { ...settings.upstream, egressProxy: { host: '10.9.9.9', port: 3128 } } };
      const resources = translateSidecar(REROUTES, egress);
      assert.equal(cluster(resources, 'local').transport_socket?.name, 'envoy.transport_sockets.tls');
      for (const name of ['peer-b', 'peer-b-h1']) assert.equal(cluster(resources, name).transport_socket?.name, 'envoy.transport_sockets.http_11_proxy');
      const peerEndpoint = resources.endpoints.find((e) => e.cluster_name === 'peer-b')?.endpoints?.[0]?.lb_endpoints?.[0];
      const proxy = unpack<{ socket_address: { address: string; port_value: number } }>(
        peerEndpoint?.metadata?.typed_filter_metadata?.['envoy.http11_proxy_transport_socket.proxy_address'],
        'envoy.config.core.v3.Address',
      );
      assert.deepEqual(proxy.socket_address, { address: '10.9.9.9', port_value: 3128 });
      // The CONNECT target is the endpoint's address, never a name the proxy cannot resolve.
      assert.equal(peerEndpoint?.endpoint?.hostname, undefined);
      const localEndpoint = resources.endpoints.find((e) => e.cluster_name === 'local')?.endpoints?.[0]?.lb_endpoints?.[0];
      assert.equal(localEndpoint?.metadata, undefined);
    });

    test('a route over several peers uses one cluster holding them all, so a retry can move to another peer', () => {
      const resources = translateSidecar(REROUTES, settings);
      assert.equal(selectRoute(resources, { path: '/apis/batch/v1/jobs' }).route?.cluster, 'peers-b+c-h1');
      const endpoints = resources.endpoints.find((e) => e.cluster_name === 'peers-b+c');
      assert.deepEqual(
        endpoints?.endpoints?.[0]?.lb_endpoints?.map((l) => l.endpoint?.hostname),
        ['b', 'c'],
      );
      assert.equal(cluster(resources, 'peers-b+c-h1').eds_cluster_config?.service_name, 'peers-b+c');
    });

    test('clusters are discovered over ADS (EDS) when every apiserver address is an IP', () => {
      const local = cluster(translateSidecar(NO_PEERS, settings), 'local');
      assert.equal(local.type, 'EDS');
      assert.deepEqual(local.eds_cluster_config, { eds_config: { ads: {}, resource_api_version: 'V3' }, service_name: 'local' });
    });

    test('an apiserver reached by host name gets a DNS cluster with its endpoint inline', () => {
      const resources = translateSidecar(plan([], [apiserver('b', 'apiserver-b.example')]), settings);
      const peer = cluster(resources, 'peer-b');
      assert.equal(peer.type, 'STRICT_DNS');
      assert.equal(peer.load_assignment?.endpoints?.[0]?.lb_endpoints?.[0]?.endpoint?.address?.socket_address?.address, 'apiserver-b.example');
      assert.equal(
        resources.endpoints.some((e) => e.cluster_name === 'peer-b'),
        false,
      );
    });

    test('every apiserver connection verifies the peer CA as kubernetes.default.svc', () => {
      for (const c of translateSidecar(REROUTES, settings).clusters) {
        assert.equal(c.transport_socket?.name, 'envoy.transport_sockets.tls');
        const tls = unpack<UpstreamTlsContext>(c.transport_socket?.typed_config, 'envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext');
        assert.equal(tls.sni, 'kubernetes.default.svc', c.name);
        assert.deepEqual(tls.common_tls_context?.validation_context, {
          trusted_ca: { filename: settings.upstream.peerCaPath },
          match_typed_subject_alt_names: [{ san_type: 'DNS', matcher: { exact: 'kubernetes.default.svc' } }],
        });
      }
    });

    test('only the front-proxy flavours present the front-proxy certificate', () => {
      const clusters = translateSidecar(REROUTES, settings).clusters;
      for (const c of clusters) {
        const tls = unpack<UpstreamTlsContext>(c.transport_socket?.typed_config, 'envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext');
        const expected = (c.name ?? '').endsWith('-front-proxy')
          ? [{ certificate_chain: { filename: settings.upstream.frontProxyCertPath }, private_key: { filename: settings.upstream.frontProxyKeyPath } }]
          : undefined;
        assert.deepEqual(tls.common_tls_context?.tls_certificates, expected, c.name);
      }
      assert.equal(clusters.filter((c) => (c.name ?? '').endsWith('-front-proxy')).length * 2, clusters.length);
    });

    test('the HTTP/1.1 flavours speak only HTTP/1.1; the others negotiate HTTP/2', () => {
      const resources = translateSidecar(NO_PEERS, settings);
      const options = (name: string): HttpProtocolOptions =>
        unpack<HttpProtocolOptions>(
          cluster(resources, name).typed_extension_protocol_options?.['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'],
          'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        );
      for (const name of ['local-h1', 'local-h1-front-proxy']) assert.deepEqual(options(name).explicit_http_config, { http_protocol_options: {} });
      for (const name of ['local', 'local-front-proxy']) assert.ok(options(name).auto_config?.http2_protocol_options);
    });

    test('Envoy closes idle apiserver connections after 60 s, before kube-apiserver closes them at 90 s', () => {
      for (const c of translateSidecar(REROUTES, settings).clusters) {
        const options = unpack<HttpProtocolOptions>(
          c.typed_extension_protocol_options?.['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'],
          'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        );
        assert.deepEqual(options.common_http_protocol_options?.idle_timeout, { seconds: 60 }, c.name);
      }
    });

    test('clusters eject apiservers on connection failures only, never on 5xx', () => {
      const outlier = cluster(translateSidecar(NO_PEERS, settings), 'local').outlier_detection;
      assert.equal(outlier?.split_external_local_origin_errors, true);
      assert.deepEqual(outlier?.enforcing_consecutive_local_origin_failure, { value: 100 });
      assert.deepEqual(outlier?.enforcing_consecutive_5xx, { value: 0 });
      assert.deepEqual(outlier?.enforcing_success_rate, { value: 0 });
    });

    test('circuit breakers allow a million concurrent requests: every watch holds one', () => {
      const threshold = cluster(translateSidecar(NO_PEERS, settings), 'local').circuit_breakers?.thresholds?.[0];
      for (const limit of [threshold?.max_requests, threshold?.max_pending_requests, threshold?.max_connections]) {
        assert.deepEqual(limit, { value: 1_000_000 });
      }
      assert.deepEqual(cluster(translateSidecar(NO_PEERS, settings), 'local').connect_timeout, { seconds: 1 });
    });

    test('apiserver names that would collide as cluster names are refused', () => {
      assert.throws(() => translateSidecar(plan([], [apiserver('b', '10.0.0.2'), apiserver('b-h1', '10.0.0.3')]), settings), /twice/);
    });
  });

  describe('listener', () => {
    test('client-sent X-Remote-* headers are stripped before routing, by prefix and in any case', () => {
      const filters = connectionManager(translateSidecar(NO_PEERS, settings)).http_filters ?? [];
      assert.deepEqual(
        filters.map((f) => f.name),
        ['envoy.filters.http.header_mutation', 'mvproxy.identity', 'envoy.filters.http.ext_proc', 'envoy.filters.http.router'],
      );
      const mutation = unpack<HeaderMutation>(filters[0]?.typed_config, 'envoy.extensions.filters.http.header_mutation.v3.HeaderMutation');
      assert.deepEqual(mutation.mutations?.request_mutations, [{ remove_on_match: { key_matcher: { prefix: 'x-remote-', ignore_case: true } } }]);
    });

    test('the connection manager keeps apiserver path semantics, sets X-Forwarded-For and allows upgrades and endless streams', () => {
      const hcm = connectionManager(translateSidecar(NO_PEERS, settings));
      assert.deepEqual(hcm.use_remote_address, { value: true });
      assert.equal(hcm.xff_num_trusted_hops, 0);
      assert.deepEqual(hcm.upgrade_configs, [{ upgrade_type: 'websocket' }, { upgrade_type: 'SPDY/3.1' }]);
      assert.deepEqual(hcm.stream_idle_timeout, { seconds: 0 });
      assert.deepEqual(hcm.request_timeout, { seconds: 0 });
      assert.deepEqual(hcm.normalize_path, { value: true });
      assert.equal(hcm.merge_slashes, false);
      assert.equal(hcm.path_with_escaped_slashes_action, 'KEEP_UNCHANGED');
      assert.equal(hcm.rds?.route_config_name, 'apiserver');
    });

    test('headers with underscores never reach an apiserver (X_Remote_User is X-Remote-User to some servers)', () => {
      const hcm = connectionManager(translateSidecar(NO_PEERS, settings));
      assert.equal(hcm.common_http_protocol_options?.headers_with_underscores_action, 'DROP_HEADER');
    });

    test('client certificates are optional but verified against the cluster client CA when presented', () => {
      const chain = translateSidecar(NO_PEERS, settings).listeners[0]?.filter_chains?.[0];
      const tls = unpack<DownstreamTlsContext>(chain?.transport_socket?.typed_config, 'envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext');
      assert.deepEqual(tls.require_client_certificate, { value: false });
      assert.deepEqual(tls.common_tls_context?.validation_context, { trusted_ca: { filename: settings.listener.clientCaPath } });
      assert.deepEqual(tls.common_tls_context?.tls_certificates, [
        { certificate_chain: { filename: settings.listener.servingCertPath }, private_key: { filename: settings.listener.servingKeyPath } },
      ]);
    });
  });

  describe('ext_proc', () => {
    function extProcConfig(resources: EnvoyResources): ExternalProcessor {
      const filter = (connectionManager(resources).http_filters ?? []).find((f) => f.name === 'envoy.filters.http.ext_proc');
      return unpack<ExternalProcessor>(filter?.typed_config, 'envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor');
    }

    test('ext_proc is off in the filter chain, calls the control-plane cluster as this node and fails open to the local answer', () => {
      const filter = (connectionManager(translateSidecar(NO_PEERS, settings)).http_filters ?? []).find((f) => f.name === 'envoy.filters.http.ext_proc');
      assert.equal(filter?.disabled, true);
      const config = extProcConfig(translateSidecar(NO_PEERS, settings));
      assert.deepEqual(config.grpc_service, {
        envoy_grpc: { cluster_name: CONTROL_PLANE_CLUSTER },
        initial_metadata: [{ key: 'x-mvproxy-node', value: 'a' }],
      });
      assert.equal(config.failure_mode_allow, true);
      assert.equal(config.allow_mode_override, false);
      assert.equal(config.disable_clear_route_cache, true);
      assert.deepEqual(config.message_timeout, { seconds: 0, nanos: 250_000_000 });
      assert.deepEqual(config.mutation_rules, { disallow_is_error: { value: true } });
      assert.deepEqual(config.processing_mode, {
        request_header_mode: 'SEND',
        response_header_mode: 'SEND',
        request_body_mode: 'NONE',
        response_body_mode: 'NONE',
        request_trailer_mode: 'SKIP',
        response_trailer_mode: 'SKIP',
      });
    });

    test('the verified client certificate reaches the identity filter in x-forwarded-client-cert; a client-sent one never does', () => {
      const hcm = connectionManager(translateSidecar(NO_PEERS, settings));
      assert.equal(hcm.forward_client_cert_details, 'SANITIZE_SET');
      assert.deepEqual(hcm.set_current_client_cert_details, { cert: true });
    });

    test("the identity filter carries the compiled module inline, fails closed and names the apiserver's identity headers", () => {
      const filter = (connectionManager(translateSidecar(NO_PEERS, settings)).http_filters ?? []).find((f) => f.name === 'mvproxy.identity');
      assert.equal(filter?.disabled, undefined, 'on unless a route switches it off');
      const wasm = unpack<Wasm>(filter?.typed_config, 'envoy.extensions.filters.http.wasm.v3.Wasm');
      assert.equal(wasm.config?.vm_config?.runtime, 'envoy.wasm.runtime.v8');
      assert.deepEqual(wasm.config?.vm_config?.code?.local?.inline_bytes, settings.identityFilter.module);
      assert.equal(wasm.config?.fail_open, false);
      const configuration = unpack<{ value: string }>(wasm.config?.configuration, 'google.protobuf.StringValue');
      assert.deepEqual(JSON.parse(configuration.value), {
        userHeader: 'x-remote-user',
        uidHeader: 'x-remote-uid',
        groupHeader: 'x-remote-group',
        extraHeaderPrefix: 'x-remote-extra-',
      });
    });

    test('a request that reached no apiserver gets a 503 Status with Retry-After, never an empty or plain-text 503', () => {
      const mappers = connectionManager(translateSidecar(NO_PEERS, settings)).local_reply_config?.mappers ?? [];
      const mapper = mappers.find((m) => m.filter?.response_flag_filter !== undefined);
      assert.deepEqual(mapper?.filter?.response_flag_filter?.flags, ['UF', 'UH', 'URX', 'UO', 'UC']);
      assertRetryableStatus(mapper, /no apiserver could be reached/);
    });

    test('every forwarding route has a client-certificate twin just before it, going to the front-proxy flavour of the same cluster', () => {
      const routes = routesOf(translateSidecar(CONTRACT, settings));
      routes.forEach((route, i) => {
        if (!(route.name ?? '').endsWith(' (client certificate)')) return;
        const twin = routes[i + 1];
        assert.equal(twin?.name, (route.name ?? '').replace(' (client certificate)', ''));
        assert.equal(route.route?.cluster, `${twin?.route?.cluster ?? ''}-front-proxy`);
        assert.deepEqual(twin?.request_headers_to_add, route.request_headers_to_add);
        assert.deepEqual({ ...route.match, tls_context: undefined }, { ...twin?.match, tls_context: undefined });
        assert.equal(identityOn(route), true);
        assert.equal(identityOn(twin as Route), false);
        assert.equal(extProcOn(route), extProcOn(twin as Route), 'ext_proc alike for both twins');
      });
      const forwarding = routes.filter((r) => r.route);
      assert.equal(forwarding.filter((r) => (r.name ?? '').endsWith(' (client certificate)')).length * 2, forwarding.length);
      for (const r of forwarding) assert.equal((r.route?.cluster ?? '').endsWith('-front-proxy'), (r.name ?? '').endsWith(' (client certificate)'), r.name);
    });

    test('unavailable resources are answered by Envoy without ext_proc or the identity filter, certificate or not', () => {
      const resources = translateSidecar(UNAVAILABLE, settings);
      for (const clientCert of [false, true]) {
        const route = selectRoute(resources, { path: '/apis/apps/v1/deployments', clientCert });
        assert.equal(route.direct_response?.status, 503);
        assert.equal(extProcOn(route), false);
        assert.equal(identityOn(route), false);
      }
    });

    test('aggregated discovery without profile=nopeer goes to the local apiserver through ext_proc, told which document, for every client', () => {
      const resources = translateSidecar(NO_PEERS, settings);
      const cases: Array<[string, string, string]> = [
        ['/apis', 'discovery (aggregated)', 'group-discovery'],
        ['/apis?timeout=32s', 'discovery (aggregated)', 'group-discovery'],
        ['/api', 'discovery (aggregated, core)', 'core-discovery'],
        ['/api/', 'discovery (aggregated, core)', 'core-discovery'],
      ];
      for (const [path, name, document] of cases) {
        for (const clientCert of [false, true]) {
          const route = selectRoute(resources, { path, headers: { accept: AGGREGATED }, clientCert });
          assert.equal(route.name, `${name}${clientCert ? ' (client certificate)' : ''}`, path);
          assert.equal(route.route?.cluster, clientCert ? 'local-h1-front-proxy' : 'local-h1');
          const perRoute = filterSwitch(route, 'envoy.filters.http.ext_proc');
          assert.equal(perRoute?.disabled, false);
          assert.deepEqual(unpack<ExtProcPerRoute>(perRoute?.config, 'envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute'), {
            '@type': 'type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute',
            overrides: { grpc_initial_metadata: [{ key: 'x-mvproxy-document', value: document }] },
          });
        }
      }
    });

    test('only GET and HEAD of /apis go through ext_proc', () => {
      const resources = translateSidecar(NO_PEERS, settings);
      assert.equal(selectRoute(resources, { path: '/apis', headers: { accept: AGGREGATED, ':method': 'HEAD' } }).name, 'discovery (aggregated)');
      for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
        assert.equal(extProcOn(selectRoute(resources, { path: '/apis', headers: { accept: AGGREGATED, ':method': method } })), false, method);
      }
    });

    test('the OpenAPI v3 index goes to the local apiserver through ext_proc, told it is the index', () => {
      const route = selectRoute(translateSidecar(NO_PEERS, settings), { path: '/openapi/v3' });
      const perRoute = filterSwitch(route, 'envoy.filters.http.ext_proc');
      assert.deepEqual(
        unpack<ExtProcPerRoute>(perRoute?.config, 'envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute').overrides?.grpc_initial_metadata,
        [{ key: 'x-mvproxy-document', value: 'openapi-index' }],
      );
    });

    test('discovery with profile=nopeer, unaggregated discovery and group documents served locally skip ext_proc', () => {
      const resources = translateSidecar(REROUTES, settings);
      const nopeer = selectRoute(resources, { path: '/apis', headers: { accept: `${AGGREGATED.split(',')[0]};profile=nopeer` } });
      assert.equal(nopeer.name, 'local');
      assert.equal(selectRoute(resources, { path: '/apis', headers: { accept: 'application/json' } }).name, 'local');
      assert.equal(selectRoute(resources, { path: '/apis/batch', headers: { accept: AGGREGATED } }).name, 'local');
      assert.equal(selectRoute(resources, { path: '/apis/batch/v2', headers: { accept: AGGREGATED } }).name, 'local');
    });

    test('group and group-version documents served only by peers go to those peers, marked proxied, identity only for certificates', () => {
      const resources = translateSidecar(REROUTES, settings);
      const expectations: Array<[string, string, string]> = [
        ['/apis/batch/v1', 'reroute discovery batch/v1', peerClusterName(['b', 'c'])],
        ['/apis/batch/v1/?timeout=32s', 'reroute discovery batch/v1', peerClusterName(['b', 'c'])],
        ['/apis/storagemigration.k8s.io', 'reroute discovery storagemigration.k8s.io', peerClusterName(['c'])],
        ['/apis/storagemigration.k8s.io/', 'reroute discovery storagemigration.k8s.io', peerClusterName(['c'])],
        ['/apis/storagemigration.k8s.io/v1', 'reroute discovery storagemigration.k8s.io/v1', peerClusterName(['c'])],
      ];
      for (const [path, name, cluster] of expectations) {
        for (const clientCert of [false, true]) {
          const route = selectRoute(resources, { path, clientCert });
          assert.equal(route.name, clientCert ? `${name} (client certificate)` : name, path);
          assert.equal(route.route?.cluster, flavouredClusterName(cluster, { protocol: 'http1', frontProxy: clientCert }), path);
          assert.equal(extProcOn(route), false, path);
          assert.equal(identityOn(route), clientCert, path);
          assert.deepEqual(
            (route.request_headers_to_add ?? []).map((h) => [h.header?.key, h.header?.value]),
            [[PEER_PROXIED_HEADER, 'true']],
          );
        }
      }
      assert.equal(selectRoute(resources, { path: '/apis/storagemigrationxk8s.io/v1' }).name, 'local');
      assert.equal(selectRoute(resources, { path: '/apis/batch/v1/jobs' }).name, 'reroute batch/v1, Resource=jobs');
    });

    test('group documents served only by unreachable peers are a 503 Status from Envoy, without ext_proc or identity', () => {
      const resources = translateSidecar(UNAVAILABLE, settings);
      for (const path of ['/apis/apps', '/apis/apps/v1']) {
        for (const clientCert of [false, true]) {
          const route = selectRoute(resources, { path, clientCert });
          assert.equal(route.direct_response?.status, 503, path);
          assert.equal(extProcOn(route), false, path);
          const status = JSON.parse(route.direct_response?.body?.inline_string ?? '') as { code: number; message: string };
          assert.equal(status.code, 503);
          assert.match(status.message, /the discovery document of apps(\/v1)? is served only by apiservers that are unreachable or restarting \(b\)$/);
        }
      }
    });

    test('each peer set of a group-document route gets its cluster even when no resource route uses it', () => {
      const only = plan([], [B, C], [{ group: 'batch', version: 'v1', action: { kind: 'peers', peers: ['b', 'c'] } }]);
      const names = translateSidecar(only, settings).clusters.map((c) => c.name);
      for (const flavour of UPSTREAM_FLAVOURS) assert.ok(names.includes(flavouredClusterName(peerClusterName(['b', 'c']), flavour)));
    });
  });

  describe('output', () => {
    test('translating the same plan twice gives byte-identical resources', () => {
      assert.equal(JSON.stringify(translateSidecar(CONTRACT, settings)), JSON.stringify(translateSidecar(CONTRACT, settings)));
    });

    test('every field set is known to the loaded Envoy API, so protobuf encoding drops nothing', () => {
      const root = envoyRoot();
      const types = {
        clusters: 'envoy.config.cluster.v3.Cluster',
        endpoints: 'envoy.config.endpoint.v3.ClusterLoadAssignment',
        listeners: 'envoy.config.listener.v3.Listener',
        routes: 'envoy.config.route.v3.RouteConfiguration',
      } as const;
      for (const p of [NO_PEERS, REROUTES, UNAVAILABLE, CONTRACT]) {
        const resources = translateSidecar(p, settings);
        for (const [key, typeName] of Object.entries(types) as Array<[keyof typeof types, string]>) {
          for (const resource of resources[key]) assert.deepEqual(unknownFields(root.lookupType(typeName), resource, key), []);
        }
      }
    });
  });

  describe('envoy --mode validate', () => {
    const cases: Array<[string, SidecarPlan]> = [
      ['a sidecar without peers', NO_PEERS],
      ['a sidecar rerouting resources and subresources to peers', REROUTES],
      ['a sidecar answering 503 for unavailable resources', UNAVAILABLE],
      ['a sidecar whose apiserver is down, falling back to peers', FALLBACK],
      ['a sidecar with every grammar corner case', CONTRACT],
      ['a sidecar routing the longest built-in names', LONG_NAMES],
    ];
    test('Envoy accepts the configuration of a sidecar reaching peers through an egress proxy', async () => {
      const egress = { ...settings, upstream: { ...settings.upstream, egressProxy: { host: '127.0.0.1', port: 3128 } } };
      const result = await validateWithEnvoy(translateSidecar(REROUTES, egress));
      assert.ok(result.ok, result.output);
    });
    for (const [what, p] of cases) {
      test(`Envoy accepts the configuration of ${what}`, async () => {
        const result = await validateWithEnvoy(translateSidecar(p, settings));
        assert.ok(result.ok, result.output);
      });
    }
  });
});
