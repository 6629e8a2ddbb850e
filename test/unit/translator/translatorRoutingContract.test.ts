// The translator's routing contract: for every path (corner cases and generated shapes), Envoy's route
// selects the destination parseRequestPath and the plan give (planner/destination.ts), over the right
// cluster flavour, on a route named after the plan's rule for it, with document filters and the identity
// filter only where they belong.
// Plans: test/support/sidecarPlans.ts; route selection: test/support/envoyRouteMatcher.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { legacyDocumentOfPath } from '../../../src/discovery/legacy.js';

import type { Route } from '../../../src/generated/envoy/config/route/v3/Route.js';
import { parseRequestPath } from '../../../src/model/requestInfo.js';
import type { RequestDestination, SidecarPlan } from '../../../src/planner/plan.js';
import { decisionForRequest } from '../../../src/planner/destination.js';
import { PEER_PROXIED_HEADER, flavouredClusterName, peerClusterName, translateSidecar, type UpstreamFlavour } from '../../../src/translator/translator.js';
import { AGGREGATED, routesOf, selectRoute, type TestRequest } from '../../support/envoyRouteMatcher.js';
import { CONTRACT, FALLBACK, LOCAL_ROUTE, LONG_NAMES, NON_CORE_REROUTES, NO_PEERS, REROUTES, UNAVAILABLE } from '../../support/sidecarPlans.js';
import { anyDocumentFilterOn, extProcOn, identityOn } from '../../support/translatedFilters.js';
import { throwawaySettingsForTestFile } from '../../support/translatorFixtures.js';

const settings = throwawaySettingsForTestFile('mvproxy-translator-');

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
  const actions = p.entries.map((e) => e.destination);
  const sets = [['local'], ...actions.flatMap((a) => (a.kind === 'peers' ? [a.peers] : []))];
  for (const set of sets) {
    const base = set[0] === 'local' ? 'local' : peerClusterName(set);
    if (clusterName === flavouredClusterName(base, flavour)) return base === 'local' ? 'local' : `peers ${set.join(',')}`;
  }
  return `unknown cluster ${clusterName} (expected flavour ${JSON.stringify(flavour)})`;
}

const UPGRADE = { upgrade: 'websocket', connection: 'Upgrade' };

/** The rules a route's name gives: the catch-all to the local apiserver names every rule it takes there, any other route its first word. */
function rulesNamedBy(name: string): string[] {
  return name.startsWith(LOCAL_ROUTE) ? LOCAL_ROUTE.split(', ') : [name.split(' ', 1)[0] ?? ''];
}

/** The routes that select a merged document (its document filter on). */
const MERGED_ROUTE = /^merged-document /;
/** Of those, the routes of legacy group and group-version documents. */
const LEGACY_ROUTE = /^merged-document \S+ legacy /;

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
      // Encoded slashes are separators (the sidecar decodes them, as the apiserver does); encoded backslashes are not.
      '/apis/batch/v1/namespaces/x%2Fcronjobs/jobs',
      '/apis/batch/v1%2Fjobs',
      '/apis/batch%2fv1%2fjobs%2fj%2fstatus',
      '/%2Fapis/batch/v1/jobs',
      '/apis%2F%2Fbatch/v1/jobs',
      '/apis/batch/v1/jobs/j%2F',
      '/apis/batch/v1/jobs%2F..%2Fcronjobs',
      '/apis/batch/v1/jobs/j%2Fstatus',
      '/api/v1/namespaces%2Ffoo%2Fstatus',
      '/api/v1/namespaces/foo%2Fpods/p%2Fstatus',
      '/api/v1/namespaces/foo%5Cpods',
      '/api/v1/namespaces/foo/pods/a%5Cb/status',
      '/api/v1/namespaces/foo/pods/a%5cb',
      '/apis/batch/v1/jobs%2',
      '/apis/batch/v1/jobs?x=%2F..%2Fcronjobs',
      '/apis/batch/v1/jobs/j/st%61tus',
      '/apis/batch/v1/j%6Fbs',
      '/apis/batch/v1/%77atch/jobs',
      '/apis/batch/v1/./jobs',
      '/apis/batch/v1/jobs/../cronjobs',
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

    /**
     * Same destination with and without a client certificate, on a route named after the plan's rule for the
     * request; the identity filter only for certificates, a document filter only for merged documents, ext_proc
     * never (every document is pushed).
     */
    function assertContract(p: SidecarPlan, request: TestRequest, alreadyProxied: boolean, upgrade: boolean): void {
      const resources = translateSidecar(p, settings);
      const decision = decisionForRequest(p, parseRequestPath(request.path), { alreadyProxied });
      const expected = describeDestination(decision.destination);
      for (const clientCert of [false, true]) {
        const what = `${request.path}${alreadyProxied ? ' (already proxied)' : ''}${upgrade ? ' (upgrade)' : ''}${clientCert ? ' (client certificate)' : ''}`;
        const route = selectRoute(resources, { ...request, clientCert });
        // Discovery documents are not watched (the apiserver answers the document): HTTP/1.1 whatever the query.
        const notWatched = upgrade || MERGED_ROUTE.test(route.name ?? '');
        assert.equal(routedDestination(p, route, expectedFlavour({ ...request, clientCert }, notWatched)), expected, what);
        // A merged document's path without the aggregated Accept (or as an upgrade) is not merged: the catch-all's.
        const merged = MERGED_ROUTE.test(route.name ?? '');
        const rule = decision.rule === 'merged-document' && !merged ? (p.entries.at(-1)?.rule ?? '') : decision.rule;
        if (LEGACY_ROUTE.test(route.name ?? '')) {
          // A legacy document the plan leaves to the catch-all (no peer-only route takes it): merged on its way back.
          assert.ok(legacyDocumentOfPath(request.path.split('?')[0] ?? '') !== undefined, `${what}: route ${route.name} takes a legacy document`);
          assert.equal(decision.rule, p.entries.at(-1)?.rule, `${what}: route ${route.name} takes what the catch-all would`);
        } else assert.ok(rulesNamedBy(route.name ?? '').includes(rule), `${what}: route ${route.name} names rule ${rule}`);
        const wantsDocument = merged;
        assert.equal(anyDocumentFilterOn(route), wantsDocument, `${what}: document filter ${wantsDocument ? 'on' : 'off'} (route ${route.name})`);
        assert.equal(extProcOn(route), false, `${what}: ext_proc off (route ${route.name})`);
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

    test('discovery requests go where their path goes, with a document filter on the merged-document routes only', () => {
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
});
