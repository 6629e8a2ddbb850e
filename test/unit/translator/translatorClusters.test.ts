// The translator's clusters: flavours, endpoints, egress proxy, TLS, protocols and limits.
// Plans: test/support/sidecarPlans.ts; route selection: test/support/envoyRouteMatcher.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Cluster } from '../../../src/generated/envoy/config/cluster/v3/Cluster.js';
import type { UpstreamTlsContext } from '../../../src/generated/envoy/extensions/transport_sockets/tls/v3/UpstreamTlsContext.js';
import type { HttpProtocolOptions } from '../../../src/generated/envoy/extensions/upstreams/http/v3/HttpProtocolOptions.js';
import { translateSidecar, type EnvoyResources } from '../../../src/translator/translator.js';
import { selectRoute } from '../../support/envoyRouteMatcher.js';
import { NO_PEERS, REROUTES, apiserver, plan } from '../../support/sidecarPlans.js';
import { throwawaySettingsForTestFile, unpack } from '../../support/translatorFixtures.js';

const settings = throwawaySettingsForTestFile('mvproxy-translator-');

function cluster(resources: EnvoyResources, name: string): Cluster {
  const found = resources.clusters.find((c) => c.name === name);
  assert.ok(found, `cluster ${name}`);
  return found;
}

describe('translateSidecar', () => {
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
        assert.deepEqual(tls.common_tls_context?.combined_validation_context, {
          default_validation_context: { match_typed_subject_alt_names: [{ san_type: 'DNS', matcher: { exact: 'kubernetes.default.svc' } }] },
          validation_context_sds_secret_config: { name: 'peer-ca', sds_config: { ads: {}, resource_api_version: 'V3' } },
        });
      }
    });

    test('only the front-proxy flavours present the front-proxy certificate', () => {
      const clusters = translateSidecar(REROUTES, settings).clusters;
      for (const c of clusters) {
        const tls = unpack<UpstreamTlsContext>(c.transport_socket?.typed_config, 'envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext');
        const expected = (c.name ?? '').endsWith('-front-proxy')
          ? [{ name: 'front-proxy-client', sds_config: { ads: {}, resource_api_version: 'V3' } }]
          : undefined;
        assert.deepEqual(tls.common_tls_context?.tls_certificate_sds_secret_configs, expected, c.name);
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

    test('HTTP/2 to an apiserver opens at most 100 streams per connection, the default limit of kube-apiserver, even before its SETTINGS arrive', () => {
      for (const c of translateSidecar(REROUTES, settings).clusters.filter((c) => !c.name?.includes('-h1'))) {
        const options = unpack<HttpProtocolOptions>(
          c.typed_extension_protocol_options?.['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'],
          'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        );
        assert.deepEqual(options.auto_config?.http2_protocol_options?.max_concurrent_streams, { value: 100 }, c.name);
      }
    });

    test('apiserver connections use TCP keep-alive as a client-go client would (30 s, 9 probes): streams have no idle timeout', () => {
      for (const c of translateSidecar(REROUTES, settings).clusters) {
        assert.deepEqual(
          c.upstream_connection_options,
          { tcp_keepalive: { keepalive_time: { value: 30 }, keepalive_interval: { value: 30 }, keepalive_probes: { value: 9 } } },
          c.name,
        );
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
});
