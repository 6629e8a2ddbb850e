// The translator's ext_proc, document-filter and identity-filter configuration, and the routes that switch them on:
// merged discovery and OpenAPI documents, client-certificate twins, group documents.
// Plans: test/support/sidecarPlans.ts; route selection: test/support/envoyRouteMatcher.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Route } from '../../../src/generated/envoy/config/route/v3/Route.js';
import type { ExternalProcessor } from '../../../src/generated/envoy/extensions/filters/http/ext_proc/v3/ExternalProcessor.js';
import type { ExtProcPerRoute } from '../../../src/generated/envoy/extensions/filters/http/ext_proc/v3/ExtProcPerRoute.js';
import type { Wasm } from '../../../src/generated/envoy/extensions/filters/http/wasm/v3/Wasm.js';
import type { ResponseMapper } from '../../../src/generated/envoy/extensions/filters/network/http_connection_manager/v3/ResponseMapper.js';
import { CONTROL_PLANE_CLUSTER } from '../../../src/xds/bootstrap.js';
import {
  PEER_PROXIED_HEADER,
  flavouredClusterName,
  peerClusterName,
  UPSTREAM_FLAVOURS,
  translateSidecar,
  DOCUMENT_FILTERS,
  DOCUMENT_PUSH_BUDGET_BYTES,
  type EnvoyResources,
} from '../../../src/translator/translator.js';
import { AGGREGATED, routesOf, selectRoute } from '../../support/envoyRouteMatcher.js';
import { B, C, CONTRACT, LOCAL_ROUTE, NO_PEERS, REROUTES, UNAVAILABLE, plan } from '../../support/sidecarPlans.js';
import { anyDocumentFilterOn, connectionManager, documentFilterOn, extProcOn, filterSwitch, identityOn } from '../../support/translatedFilters.js';
import type { MergedDocument } from '../../../src/model/requestInfo.js';
import { throwawaySettingsForTestFile, unpack } from '../../support/translatorFixtures.js';

const settings = throwawaySettingsForTestFile('mvproxy-translator-');

/** The bytes a document filter's configuration holds (its set; none: it holds nothing). */
function documentSetOf(resources: ReturnType<typeof translateSidecar>, document: MergedDocument): number[] {
  const config = resources.extensionConfigs.find((c) => c.name === DOCUMENT_FILTERS[document]);
  assert.ok(config, `${document} has a configuration`);
  const wasm = unpack<Wasm>(config.typed_config, 'envoy.extensions.filters.http.wasm.v3.Wasm');
  return [...(unpack<{ value?: Uint8Array }>(wasm.config?.configuration, 'google.protobuf.BytesValue').value ?? [])];
}

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

describe('translateSidecar', () => {
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
        response_body_mode: 'BUFFERED_PARTIAL',
        request_trailer_mode: 'SKIP',
        response_trailer_mode: 'SKIP',
      });
    });

    test('the verified client certificate reaches the identity filter in x-forwarded-client-cert; a client-sent one never does', () => {
      const hcm = connectionManager(translateSidecar(NO_PEERS, settings));
      assert.equal(hcm.forward_client_cert_details, 'SANITIZE_SET');
      assert.deepEqual(hcm.set_current_client_cert_details, { cert: true });
    });

    test("the identity filter comes over ECDS with the compiled module inline, fails closed and names the apiserver's identity headers", () => {
      const resources = translateSidecar(NO_PEERS, settings);
      const filter = (connectionManager(resources).http_filters ?? []).find((f) => f.name === 'mvproxy.identity');
      assert.equal(filter?.disabled, undefined, 'on unless a route switches it off');
      assert.equal(filter?.typed_config, undefined, 'no module in the listener');
      assert.deepEqual(filter?.config_discovery?.type_urls, ['type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm']);
      assert.equal(filter?.config_discovery?.default_config, undefined, 'no default: the listener waits for it');
      const config = resources.extensionConfigs.find((c) => c.name === 'mvproxy.identity');
      const wasm = unpack<Wasm>(config?.typed_config, 'envoy.extensions.filters.http.wasm.v3.Wasm');
      assert.equal(wasm.config?.vm_config?.runtime, 'envoy.wasm.runtime.v8');
      assert.deepEqual(wasm.config?.vm_config?.code?.local?.inline_bytes, settings.filterModule);
      assert.equal(wasm.config?.fail_open, false);
      const configuration = unpack<{ value: string }>(wasm.config?.configuration, 'google.protobuf.StringValue');
      assert.deepEqual(JSON.parse(configuration.value), {
        userHeader: 'x-remote-user',
        uidHeader: 'x-remote-uid',
        groupHeader: 'x-remote-group',
        extraHeaderPrefix: 'x-remote-extra-',
      });
    });

    test('each document filter is off in the chain, a no-op until its first configuration, and holds its document set over ECDS, in the document VM, failing open', () => {
      const set = Uint8Array.from([1, 2, 3]);
      const resources = translateSidecar(NO_PEERS, settings, undefined, new Map([['group-discovery', set]]));
      for (const name of Object.values(DOCUMENT_FILTERS)) {
        const filter = (connectionManager(resources).http_filters ?? []).find((f) => f.name === name);
        assert.equal(filter?.disabled, true, name);
        assert.equal(filter?.config_discovery?.apply_default_config_without_warming, true, name);
        assert.equal(
          (filter?.config_discovery?.default_config as { '@type'?: string } | undefined)?.['@type'],
          'type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation',
        );
      }
      assert.deepEqual(
        resources.extensionConfigs.map((c) => c.name),
        ['mvproxy.discovery.core', 'mvproxy.discovery.groups', 'mvproxy.discovery.openapi', 'mvproxy.identity'],
        'every document filter has a configuration',
      );
      const wasm = unpack<Wasm>(resources.extensionConfigs[1]?.typed_config, 'envoy.extensions.filters.http.wasm.v3.Wasm');
      assert.equal(wasm.config?.root_id, 'mvproxy.discovery');
      assert.equal(wasm.config?.vm_config?.vm_id, 'mvproxy.documents', 'one VM for every document filter, not the identity filter’s');
      assert.deepEqual(wasm.config?.vm_config?.code?.local?.inline_bytes, settings.documentModule);
      assert.equal(wasm.config?.fail_open, true);
      assert.deepEqual(wasm.config?.allow_on_headers_stop_iteration, { value: true }, 'Envoy calls the body callbacks while the response headers wait');
      assert.deepEqual([...(unpack<{ value: Uint8Array }>(wasm.config?.configuration, 'google.protobuf.BytesValue').value ?? [])], [1, 2, 3]);
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

    test('aggregated discovery without profile=nopeer goes to the local apiserver with the filter holding its document on, for every client', () => {
      const resources = translateSidecar(NO_PEERS, settings);
      const cases: Array<[string, string, MergedDocument]> = [
        ['/apis', 'merged-document group-discovery', 'group-discovery'],
        ['/apis?timeout=32s', 'merged-document group-discovery', 'group-discovery'],
        ['/api', 'merged-document core-discovery', 'core-discovery'],
        ['/api/', 'merged-document core-discovery', 'core-discovery'],
      ];
      for (const [path, name, document] of cases) {
        for (const clientCert of [false, true]) {
          const route = selectRoute(resources, { path, headers: { accept: AGGREGATED }, clientCert });
          assert.equal(route.name, `${name}${clientCert ? ' (client certificate)' : ''}`, path);
          assert.equal(route.route?.cluster, clientCert ? 'local-h1-front-proxy' : 'local-h1');
          assert.equal(documentFilterOn(route, document), true, path);
          assert.equal(extProcOn(route), false, path);
        }
      }
    });

    test('a document over the push budget goes through ext_proc instead, told which document', () => {
      const oversize = new Uint8Array(DOCUMENT_PUSH_BUDGET_BYTES + 1);
      const resources = translateSidecar(NO_PEERS, settings, undefined, new Map([['group-discovery', oversize]]));
      const route = selectRoute(resources, { path: '/apis', headers: { accept: AGGREGATED } });
      assert.equal(documentFilterOn(route, 'group-discovery'), false);
      const perRoute = filterSwitch(route, 'envoy.filters.http.ext_proc');
      assert.equal(perRoute?.disabled, false);
      assert.deepEqual(unpack<ExtProcPerRoute>(perRoute?.config, 'envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute'), {
        '@type': 'type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute',
        overrides: { grpc_initial_metadata: [{ key: 'x-mvproxy-document', value: 'group-discovery' }] },
      });
      assert.equal(
        documentFilterOn(selectRoute(resources, { path: '/api', headers: { accept: AGGREGATED } }), 'core-discovery'),
        true,
        'the others stay pushed',
      );
      assert.deepEqual(documentSetOf(resources, 'group-discovery'), [], 'its filter holds nothing');
    });

    test('a document the control plane holds no set for gets the empty configuration: its filter holds nothing, never left out of the response', () => {
      const resources = translateSidecar(NO_PEERS, settings, undefined, new Map([['group-discovery', Uint8Array.from([1, 2, 3])]]));
      assert.deepEqual(documentSetOf(resources, 'core-discovery'), []);
      assert.deepEqual(documentSetOf(resources, 'openapi-index'), []);
      assert.deepEqual(documentSetOf(resources, 'group-discovery'), [1, 2, 3]);
    });

    test('only GET and HEAD of /apis get the merged document', () => {
      const resources = translateSidecar(NO_PEERS, settings);
      assert.equal(selectRoute(resources, { path: '/apis', headers: { accept: AGGREGATED, ':method': 'HEAD' } }).name, 'merged-document group-discovery');
      for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
        const route = selectRoute(resources, { path: '/apis', headers: { accept: AGGREGATED, ':method': method } });
        assert.equal(extProcOn(route) || anyDocumentFilterOn(route), false, method);
      }
    });

    test('the OpenAPI v3 index goes to the local apiserver with the filter holding the merged index on', () => {
      const route = selectRoute(translateSidecar(NO_PEERS, settings), { path: '/openapi/v3' });
      assert.equal(documentFilterOn(route, 'openapi-index'), true);
      assert.equal(
        anyDocumentFilterOn({
          ...route,
          typed_per_filter_config: { ...route.typed_per_filter_config, [DOCUMENT_FILTERS['openapi-index']]: undefined as never },
        }),
        false,
      );
      assert.equal(extProcOn(route), false);
    });

    test('discovery with profile=nopeer gets the local answer, untouched', () => {
      const resources = translateSidecar(REROUTES, settings);
      const nopeer = selectRoute(resources, { path: '/apis', headers: { accept: `${AGGREGATED.split(',')[0]};profile=nopeer` } });
      assert.equal(nopeer.name, LOCAL_ROUTE);
      assert.equal(anyDocumentFilterOn(nopeer) || extProcOn(nopeer), false);
    });

    test('legacy discovery of what the local apiserver serves goes to it with the filter of its document on', () => {
      const resources = translateSidecar(REROUTES, settings);
      const cases: Array<[string, string, MergedDocument]> = [
        ['/apis', 'merged-document group-discovery', 'group-discovery'],
        ['/api', 'merged-document core-discovery', 'core-discovery'],
        ['/apis/batch', 'merged-document group-discovery legacy /apis/{g}, /apis/{g}/{v}', 'group-discovery'],
        ['/apis/batch/v2/', 'merged-document group-discovery legacy /apis/{g}, /apis/{g}/{v}', 'group-discovery'],
        ['/api/v1', 'merged-document core-discovery legacy /api/{v}', 'core-discovery'],
      ];
      for (const [path, name, document] of cases) {
        const route = selectRoute(resources, { path, headers: { accept: 'application/json' } });
        assert.equal(route.name, name, path);
        assert.equal(route.route?.cluster, 'local-h1', path);
        assert.equal(documentFilterOn(route, document), true, path);
      }
      const write = selectRoute(resources, { path: '/apis/batch', headers: { ':method': 'POST' } });
      assert.equal(anyDocumentFilterOn(write), false, 'only GET and HEAD');
    });

    test('legacy discovery switches to ext_proc with its document', () => {
      const oversize = new Uint8Array(DOCUMENT_PUSH_BUDGET_BYTES + 1);
      const resources = translateSidecar(REROUTES, settings, undefined, new Map([['group-discovery', oversize]]));
      assert.equal(extProcOn(selectRoute(resources, { path: '/apis/batch/v2' })), true);
      assert.equal(extProcOn(selectRoute(resources, { path: '/api/v1' })), false, 'the core document stays pushed');
    });

    test('group and group-version documents served only by peers go to those peers, marked proxied, identity only for certificates', () => {
      const resources = translateSidecar(REROUTES, settings);
      const expectations: Array<[string, string, string]> = [
        ['/apis/batch/v1', 'peer-only-document discovery batch/v1', peerClusterName(['b', 'c'])],
        ['/apis/batch/v1/?timeout=32s', 'peer-only-document discovery batch/v1', peerClusterName(['b', 'c'])],
        ['/apis/storagemigration.k8s.io', 'peer-only-document discovery storagemigration.k8s.io', peerClusterName(['c'])],
        ['/apis/storagemigration.k8s.io/', 'peer-only-document discovery storagemigration.k8s.io', peerClusterName(['c'])],
        ['/apis/storagemigration.k8s.io/v1', 'peer-only-document discovery storagemigration.k8s.io/v1', peerClusterName(['c'])],
      ];
      for (const [path, name, cluster] of expectations) {
        for (const clientCert of [false, true]) {
          const route = selectRoute(resources, { path, clientCert });
          assert.equal(route.name, clientCert ? `${name} (client certificate)` : name, path);
          assert.equal(route.route?.cluster, flavouredClusterName(cluster, { protocol: 'http1', frontProxy: clientCert }), path);
          assert.equal(extProcOn(route) || anyDocumentFilterOn(route), false, path);
          assert.equal(identityOn(route), clientCert, path);
          assert.deepEqual(
            (route.request_headers_to_add ?? []).map((h) => [h.header?.key, h.header?.value]),
            [[PEER_PROXIED_HEADER, 'true']],
          );
        }
      }
      assert.equal(
        selectRoute(resources, { path: '/apis/storagemigrationxk8s.io/v1' }).name,
        'merged-document group-discovery legacy /apis/{g}, /apis/{g}/{v}',
      );
      assert.equal(selectRoute(resources, { path: '/apis/batch/v1/jobs' }).name, 'reroute-to-peers batch/v1, Resource=jobs');
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
});
