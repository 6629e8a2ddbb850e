// The translator's routes: order, peer-proxied marking, 503 answers, timeouts and retries.
// Plans: test/support/sidecarPlans.ts; route selection: test/support/envoyRouteMatcher.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { SidecarPlan } from '../../../src/planner/plan.js';
import { PEER_PROXIED_HEADER, translateSidecar } from '../../../src/translator/translator.js';
import { routesOf, selectRoute } from '../../support/envoyRouteMatcher.js';
import { B, C, CONTRACT, FALLBACK, LOCAL_ROUTE, NON_CORE_REROUTES, REROUTES, UNAVAILABLE, plan } from '../../support/sidecarPlans.js';
import { throwawaySettingsForTestFile } from '../../support/translatorFixtures.js';

const settings = throwawaySettingsForTestFile('mvproxy-translator-');

describe('translateSidecar', () => {
  describe('routes', () => {
    test('core-group requests go local before the resource routes unless the plan sends some of the core group elsewhere', () => {
      const core = '/api/v1/namespaces/default/configmaps/c';
      const shortcut = (p: SidecarPlan): boolean => selectRoute(translateSidecar(p, settings), { path: core }).name === `${LOCAL_ROUTE} (core group)`;
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

    test('long-running flavours stream without a timeout; every other forwarding route times out 5 s after the apiserver would', () => {
      const longRunning = / \((upgrade|watch|long-running|long-running subresource)\)( \(client certificate\))?$/;
      for (const [limits, expected] of [
        [undefined, 65],
        [{ requestTimeoutSeconds: 300 }, 305],
      ] as const) {
        const routes = routesOf(translateSidecar(REROUTES, { ...settings, ...(limits ? { limits } : {}) })).filter((r) => r.route);
        assert.ok(routes.some((r) => longRunning.test(r.name ?? '')) && routes.some((r) => !longRunning.test(r.name ?? '')));
        for (const route of routes) {
          const timeout = longRunning.test(route.name ?? '') ? 0 : expected;
          assert.deepEqual(route.route?.timeout, { seconds: timeout }, route.name);
          assert.deepEqual(route.route?.idle_timeout, { seconds: timeout }, route.name);
        }
      }
    });

    test('every forwarding route retries only failures before sending', () => {
      for (const route of routesOf(translateSidecar(REROUTES, settings))) {
        if (route.route === undefined || route.route === null) continue;
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
      assert.ok(position('reroute-to-peers batch/v1, Resource=jobs/status') < position('reroute-to-peers batch/v1, Resource=jobs'));
      assert.ok(position('reroute-to-peers /v1, Resource=namespaces/finalize #1') < position('reroute-to-peers /v1, Resource=namespaces #1'));
    });
  });
});
