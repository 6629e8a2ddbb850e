// Which requests keep no timeout: for every request shape, the route Envoy selects has no timeout
// wherever kube-apiserver's own long-running check exempts the request from its request timeout
// (never stricter than the apiserver), and has the request timeout everywhere else except for
// the few shapes the matchers knowingly take for long-running (routes.ts).
// Route selection: test/support/envoyRouteMatcher.ts; plans: test/support/sidecarPlans.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Route } from '../../../src/generated/envoy/config/route/v3/Route.js';
import type { SidecarPlan } from '../../../src/planner/plan.js';
import { translateSidecar } from '../../../src/translator/translator.js';
import { envoyNormalize, selectRoute } from '../../support/envoyRouteMatcher.js';
import { CONTRACT, NO_PEERS } from '../../support/sidecarPlans.js';
import { throwawaySettingsForTestFile } from '../../support/translatorFixtures.js';

const settings = throwawaySettingsForTestFile('mvproxy-translator-');

// ---------------------------------------------------------------- the oracle: kube-apiserver's reading

/** Go's url.PathUnescape / QueryUnescape: every escape decoded; a malformed one is an error (undefined). */
function goUnescape(text: string, query: boolean): string | undefined {
  if (/%(?![0-9A-Fa-f]{2})/.test(text)) return undefined;
  const plus = query ? text.replace(/\+/g, ' ') : text;
  return Buffer.from(
    plus.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
    'latin1',
  ).toString('latin1');
}

/** Go's url.ParseQuery as Request.URL.Query() uses it: pairs split on '&', a pair with ';' or a bad escape dropped. */
function goQuery(query: string): Map<string, string[]> {
  const values = new Map<string, string[]>();
  for (const pair of query.split('&')) {
    if (pair === '' || pair.includes(';')) continue;
    const at = pair.indexOf('=');
    const key = goUnescape(at === -1 ? pair : pair.slice(0, at), true);
    const value = goUnescape(at === -1 ? '' : pair.slice(at + 1), true);
    if (key === undefined || value === undefined) continue;
    values.set(key, [...(values.get(key) ?? []), value]);
  }
  return values;
}

/**
 * kube-apiserver's BasicLongRunningRequestCheck(watch, proxy; attach, exec, proxy, log, portforward)
 * applied to its RequestInfoFactory.NewRequestInfo of the request the sidecar forwards (Envoy's
 * normalized path, query unchanged), restated from upstream (requestinfo.go, longrunning.go).
 */
function apiserverLongRunning(method: string, rawPath: string): boolean {
  const forwarded = envoyNormalize(rawPath);
  const queryAt = forwarded.indexOf('?');
  const path = goUnescape(queryAt === -1 ? forwarded : forwarded.slice(0, queryAt), false);
  if (path === undefined) return false; // Go answers 400 before any handler
  const query = goQuery(queryAt === -1 ? '' : forwarded.slice(queryAt + 1));
  let parts = path.replace(/^\/+|\/+$/g, '') === '' ? [] : path.replace(/^\/+|\/+$/g, '').split('/');
  const nonResource = (): boolean => path.startsWith('/debug/pprof/');
  if (parts.length < 3 || !['api', 'apis'].includes(parts[0] ?? '')) return nonResource();
  const prefix = parts[0];
  parts = parts.slice(1);
  if (prefix === 'apis') {
    if (parts.length < 3) return nonResource();
    parts = parts.slice(1);
  }
  parts = parts.slice(1); // the version
  let verb: string;
  if (['proxy', 'watch'].includes(parts[0] ?? '')) {
    if (parts.length < 2) return false; // an error: 500, not long-running
    verb = parts[0] as string;
    parts = parts.slice(1);
  } else {
    verb = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }[method] ?? '';
  }
  if (parts[0] === 'namespaces' && parts.length > 2 && !['status', 'finalize'].includes(parts[2] ?? '')) parts = parts.slice(2);
  const subresource = parts.length >= 3 && verb !== 'proxy' ? parts[2] : '';
  const name = parts.length >= 2 ? parts[1] : '';
  if (name === '' && verb === 'get') {
    const watch = query.get('watch');
    verb = watch !== undefined && watch[0] !== '0' && watch[0]?.toLowerCase() !== 'false' ? 'watch' : 'list';
  }
  return ['watch', 'proxy'].includes(verb) || ['attach', 'exec', 'proxy', 'log', 'portforward'].includes(subresource ?? '');
}

/**
 * The shapes routes.ts knowingly takes for long-running although the apiserver may not: a `watch`
 * (or escaped) query key with any value or method, an escape in the path, a special-verb segment right
 * after the group-version, or a long-running subresource name three segments after it (five
 * after `namespaces/{ns}/`).
 */
function knownOverApproximation(rawPath: string): boolean {
  const forwarded = envoyNormalize(rawPath);
  const [path = '', query] = forwarded.split(/\?(.*)/s);
  if (query?.split('&').some((pair) => /^(watch|[^=]*%[^=]*)(=|$)/.test(pair))) return true;
  if (path.includes('%')) return true;
  const afterGroupVersion = /^\/+(?:api|apis\/[^/]*)\/[^/]*\/(.*)$/.exec(path)?.[1];
  if (afterGroupVersion === undefined) return false;
  if (/^(proxy|watch)\//.test(afterGroupVersion)) return true;
  return /^(namespaces\/[^/]*\/)?[^/]*\/[^/]*\/(attach|exec|log|portforward|proxy)(\/|$)/.test(afterGroupVersion);
}

// ---------------------------------------------------------------- the requests

const SUBRESOURCES = ['attach', 'exec', 'log', 'portforward', 'proxy', 'status', 'other'];

function requestPaths(): string[] {
  const groupVersions = ['/api/v1', '/apis/batch/v1', '//api/v1', '/apis//v1'];
  const heads = ['', 'watch/', 'proxy/', 'namespaces/ns/', 'namespaces//', 'watch/namespaces/ns/', 'proxy/namespaces/ns/'];
  const resources = ['pods', 'jobs', 'namespaces', 'nodes', 'services', 'log', 'exec', 'watch', 'proxy', 'status'];
  const tails = ['', '/', '/n', '//', '/n/x/y', ...SUBRESOURCES.flatMap((s) => [`/n/${s}`, `/n/${s}/x`, `//${s}`])];
  const paths: string[] = [];
  for (const gv of groupVersions) {
    for (const head of heads) for (const resource of resources) for (const tail of tails) paths.push(`${gv}/${head}${resource}${tail}`);
  }
  paths.push(
    '/',
    '/api',
    '/apis',
    '/api/v1',
    '/api/v1/',
    '/apis/batch/v1',
    '/api/v1/watch',
    '/api/v1/watch/',
    '/api/v1/proxy',
    '/healthz',
    '/version',
    '/debug/pprof/',
    '/debug/pprof/profile',
    '/debug/pprofx',
    '//debug/pprof/profile',
    '/debug/flags/v',
    '/metrics',
    '/openapi/v2',
    '/api/v1/namespaces/ns/pods/p%2Fx/log',
    '/api/v1/namespaces/ns/pods%2Fp/log',
    '/api/v1/namespaces%2Fns%2Fpods/p/log',
    '/api/v1/namespaces/ns/pods/p/l%6Fg',
    '/api/v1/namespaces/ns/pods/p/%65xec',
    '/api/v1/namespaces/ns/pods/p/../q/exec',
    '/api/v1/namespaces/ns/pods/p/./exec',
    '/api/v1/namespaces/ns/pods/p\\exec',
    '/api/v1/namespaces/ns/pods/p%zz/exec',
    '/api/v1/namespaces/ns/status/x/exec',
    '/api/v1/namespaces/ns/finalize/x/log',
    '/api/v1/namespaces/n1/namespaces/n2/exec',
    '/api/v1/namespaces/ns/services/https:s:443/proxy/some/path',
    '/api/v1/nodes/n/proxy/metrics',
    '/apis/metrics.k8s.io/v1beta1/nodes',
  );
  return paths;
}

/** Every path gets these; the focused paths below get every query and method. */
const SOME_QUERIES = ['', '?watch=1', '?watch=0'];
const SOME_METHODS = ['GET', 'POST'];
const FOCUSED_PATHS = [
  '/api/v1/pods',
  '/api/v1/namespaces/ns/pods',
  '/api/v1/namespaces/ns/pods/p',
  '/api/v1/namespaces/ns/pods/p/log',
  '/apis/batch/v1/watch/jobs',
  '/apis/batch/v1/namespaces/ns/jobs/',
  '/apis/batch/v1',
  '/api/v1/namespaces',
  '/healthz',
  '/debug/pprof/profile',
];
const QUERIES = [
  '',
  '?watch=true',
  '?watch=1',
  '?watch=0',
  '?watch=false',
  '?watch=FALSE',
  '?watch=yes',
  '?watch=',
  '?watch',
  '?resourceVersion=0&watch=true',
  '?w%61tch=true',
  '?watch=0&watch=1',
  '?watch=1&watch=0',
  '?watchx=1',
  '?xwatch=1',
  '?follow=true',
  '?timeout=30s&limit=500',
  '?x=/a/b/exec',
];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** The route timeout of the route Envoy selects; undefined for a direct response (answered at once). */
function timeoutOf(resources: ReturnType<typeof translateSidecar>, path: string, method: string): number | undefined {
  const route: Route = selectRoute(resources, { path, headers: { ':method': method } });
  if (route.direct_response) return undefined;
  const timeout = Number(route.route?.timeout?.seconds ?? Number.NaN);
  assert.equal(Number(route.route?.idle_timeout?.seconds ?? Number.NaN), timeout, `${route.name}: idle timeout equals the route timeout`);
  return timeout;
}

describe('translateSidecar', () => {
  describe('long-running requests', () => {
    const plans: Array<[string, SidecarPlan]> = [
      // Every route kind goes through the same flavours: the local routes, and resource routes of every grammar shape.
      ['no peers', NO_PEERS],
      ['contract', CONTRACT],
    ];
    for (const [what, p] of plans) {
      test(`${what}: no timeout wherever kube-apiserver has none; the request timeout elsewhere, but for the known over-approximations`, () => {
        const resources = translateSidecar(p, settings);
        let longRunning = 0;
        let timed = 0;
        let overApproximated = 0;
        const requests = [
          ...requestPaths().flatMap((path) => SOME_QUERIES.flatMap((query) => SOME_METHODS.map((method) => [method, `${path}${query}`] as const))),
          ...FOCUSED_PATHS.flatMap((path) => QUERIES.flatMap((query) => METHODS.map((method) => [method, `${path}${query}`] as const))),
        ];
        for (const [method, request] of requests) {
          {
            const timeout = timeoutOf(resources, request, method);
            if (timeout === undefined) continue;
            const what = `${method} ${request}`;
            if (apiserverLongRunning(method, request)) {
              longRunning++;
              assert.equal(timeout, 0, `${what} is long-running to kube-apiserver: no timeout`);
            } else if (timeout === 0) {
              overApproximated++;
              assert.ok(knownOverApproximation(request), `${what} is not long-running to kube-apiserver, yet has no timeout`);
            } else {
              timed++;
              assert.equal(timeout, 65, what);
            }
          }
        }
        assert.ok(longRunning > 1000 && timed > 1000, `${longRunning} long-running, ${timed} timed`);
        assert.ok(overApproximated < longRunning, `${overApproximated} over-approximated`);
      });
    }

    test('the oracle reads requests as kube-apiserver does', () => {
      const cases: Array<[string, string, boolean]> = [
        ['GET', '/api/v1/namespaces/ns/pods?watch=true', true],
        ['GET', '/api/v1/namespaces/ns/pods?watch=yes', true],
        ['GET', '/api/v1/namespaces/ns/pods?watch=', true],
        ['GET', '/api/v1/namespaces/ns/pods?watch=False', false],
        ['GET', '/api/v1/namespaces/ns/pods?watch=0&watch=1', false],
        ['GET', '/api/v1/namespaces/ns/pods?w%61tch=1', true],
        ['HEAD', '/api/v1/pods?watch=1', true],
        ['POST', '/api/v1/namespaces/ns/pods?watch=1', false],
        ['GET', '/api/v1/namespaces/ns/pods/p?watch=1', false],
        ['GET', '/api/v1/watch/namespaces/ns/pods', true],
        ['DELETE', '/api/v1/proxy/nodes/n/x', true],
        ['GET', '/api/v1/namespaces/ns/pods/p/log?follow=true', true],
        ['POST', '/api/v1/namespaces/ns/pods/p/exec', true],
        ['GET', '/api/v1/namespaces/ns/pods/p/status', false],
        ['GET', '/api/v1/namespaces/ns/log', false],
        ['GET', '/api/v1/namespaces/n1/namespaces/n2/exec', true],
        ['GET', '/api/v1/namespaces/ns/pods%2Fp/log', true],
        ['GET', '/api/v1/namespaces/ns/pods/p%2Fx/log', false],
        ['GET', '/debug/pprof/profile?seconds=120', true],
        ['GET', '//debug/pprof/profile', false],
        ['GET', '/apis/batch/v1?watch=1', false],
      ];
      for (const [method, path, expected] of cases) assert.equal(apiserverLongRunning(method, path), expected, `${method} ${path}`);
    });
  });
});
