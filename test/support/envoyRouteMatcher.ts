// Which route of a translated route configuration Envoy would select for a
// request: the listener's path normalization and Envoy's route matching, for exactly the
// matcher fields the translator uses (any other field fails the test).
import assert from 'node:assert/strict';

import type { HeaderMatcher } from '../../src/generated/envoy/config/route/v3/HeaderMatcher.js';
import type { Route } from '../../src/generated/envoy/config/route/v3/Route.js';
import type { RouteMatch } from '../../src/generated/envoy/config/route/v3/RouteMatch.js';
import { sidecarPath } from '../../src/model/requestInfo.js';
import type { EnvoyResources } from '../../src/translator/translator.js';
import { AGGREGATED_DISCOVERY_AS, AGGREGATED_DISCOVERY_JSON } from '../../src/model/discovery.js';

export interface TestRequest {
  /** As sent by the client; Envoy normalizes it before routing. */
  path: string;
  headers?: Record<string, string>;
  /** The client presented a certificate Envoy verified. */
  clientCert?: boolean;
}

/**
 * What the sidecar's listener does to the path before routing: only encoded
 * slashes are decoded (sidecarPath, which the path oracle checks against Envoy
 * and kube-apiserver end to end).
 */
export function envoyNormalize(rawPath: string): string {
  return sidecarPath(rawPath);
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

/** The first route that matches the request, as Envoy selects it. */
export function selectRoute(resources: EnvoyResources, request: TestRequest): Route {
  const route = routesOf(resources).find((r) => routeMatches(r.match ?? {}, request));
  assert.ok(route, `some route matches ${request.path}`);
  return route;
}

/** The routes of the one route configuration, in order. */
export function routesOf(resources: EnvoyResources): Route[] {
  assert.equal(resources.routes.length, 1);
  return resources.routes[0]?.virtual_hosts?.[0]?.routes ?? [];
}

/** What kubectl and client-go send for aggregated discovery (without profile=nopeer). */
export const AGGREGATED = `${AGGREGATED_DISCOVERY_JSON},application/json;g=apidiscovery.k8s.io;v=v2beta1;${AGGREGATED_DISCOVERY_AS},application/json`;
