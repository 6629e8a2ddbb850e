// The translator's listener: header stripping, connection manager settings and client certificates.
// Plans: test/support/sidecarPlans.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { HeaderMutation } from '../../../src/generated/envoy/extensions/filters/http/header_mutation/v3/HeaderMutation.js';
import type { DownstreamTlsContext } from '../../../src/generated/envoy/extensions/transport_sockets/tls/v3/DownstreamTlsContext.js';
import { translateSidecar } from '../../../src/translator/translator.js';
import { NO_PEERS } from '../../support/sidecarPlans.js';
import { connectionManager } from '../../support/translatedFilters.js';
import { throwawaySettingsForTestFile, unpack } from '../../support/translatorFixtures.js';

const settings = throwawaySettingsForTestFile('mvproxy-translator-');

describe('translateSidecar', () => {
  describe('listener', () => {
    test('client-sent X-Remote-* headers are stripped before routing, by prefix and in any case', () => {
      const filters = connectionManager(translateSidecar(NO_PEERS, settings)).http_filters ?? [];
      assert.deepEqual(
        filters.map((f) => f.name),
        [
          'envoy.filters.http.header_mutation',
          'mvproxy.identity',
          'mvproxy.discovery.core',
          'mvproxy.discovery.groups',
          'mvproxy.discovery.openapi',
          'envoy.filters.http.ext_proc',
          'envoy.filters.http.router',
        ],
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
      // Only encoded slashes are decoded (sidecarPath, docs/request-rules.md "Reading a request").
      assert.deepEqual(hcm.normalize_path, { value: false });
      assert.equal(hcm.merge_slashes, false);
      assert.equal(hcm.path_with_escaped_slashes_action, 'UNESCAPE_AND_FORWARD');
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
      assert.deepEqual(tls.common_tls_context?.validation_context_sds_secret_config, {
        name: 'client-ca',
        sds_config: { ads: {}, resource_api_version: 'V3' },
      });
      assert.deepEqual(tls.common_tls_context?.tls_certificate_sds_secret_configs, [
        { name: 'apiserver-serving', sds_config: { ads: {}, resource_api_version: 'V3' } },
      ]);
    });

    test("the filter chain carries the client CA bundle's digest, so a new bundle drains the connections made under the old one", () => {
      const chain = (digest?: string) =>
        translateSidecar(NO_PEERS, { ...settings, listener: { ...settings.listener, ...(digest ? { clientCaSha256: digest } : {}) } }).listeners[0]
          ?.filter_chains?.[0];
      assert.deepEqual(chain('ab12')?.metadata, { filter_metadata: { mvproxy: { fields: { client_ca_sha256: { stringValue: 'ab12' } } } } });
      assert.notDeepEqual(chain('ab12'), chain('cd34'));
      assert.equal(chain()?.metadata, undefined, 'no digest known: no metadata');
    });

    test("client connections get kube-apiserver's limits: header timeout, header size and count, idle timeout, HTTP/2 streams and windows", () => {
      const resources = translateSidecar(NO_PEERS, settings);
      const hcm = connectionManager(resources);
      assert.deepEqual(hcm.request_headers_timeout, { seconds: 32 });
      assert.deepEqual(resources.listeners[0]?.filter_chains?.[0]?.transport_socket_connect_timeout, { seconds: 32 });
      // Go: MaxHeaderBytes 1 MiB plus 4 KiB of read slack; the sidecar refuses nothing below that.
      assert.ok((hcm.max_request_headers_kb?.value ?? 0) * 1024 >= (1 << 20) + 4096);
      assert.ok((hcm.common_http_protocol_options?.max_headers_count?.value ?? 0) >= Math.floor(((1 << 20) + 4096) / 3), 'as many 3-byte headers as fit');
      assert.deepEqual(hcm.common_http_protocol_options?.idle_timeout, { seconds: 90 });
      assert.equal(hcm.common_http_protocol_options?.max_connection_duration, undefined, 'kube-apiserver has no maximum connection duration');
      assert.equal(hcm.common_http_protocol_options?.max_requests_per_connection, undefined);
      assert.deepEqual(hcm.http2_protocol_options, {
        max_concurrent_streams: { value: 100 },
        initial_stream_window_size: { value: 256 * 1024 },
        initial_connection_window_size: { value: 100 * 256 * 1024 },
      });
    });

    test('the configurable limits come from settings.limits', () => {
      const limited = { ...settings, limits: { readHeaderTimeoutSeconds: 3, http2MaxStreamsPerConnection: 2000, requestTimeoutSeconds: 10 } };
      const resources = translateSidecar(NO_PEERS, limited);
      const hcm = connectionManager(resources);
      assert.deepEqual(hcm.request_headers_timeout, { seconds: 3 });
      assert.deepEqual(resources.listeners[0]?.filter_chains?.[0]?.transport_socket_connect_timeout, { seconds: 3 });
      assert.deepEqual(hcm.http2_protocol_options?.max_concurrent_streams, { value: 2000 });
      assert.deepEqual(hcm.http2_protocol_options?.initial_connection_window_size, { value: 2000 * 256 * 1024 });
    });

    test("client connections get TCP keep-alive with kube-apiserver's 3-minute period", () => {
      const options = translateSidecar(NO_PEERS, settings).listeners[0]?.socket_options ?? [];
      assert.deepEqual(
        options.map((o) => [o.description, o.level, o.name, o.int_value, o.state]),
        [
          ['SO_KEEPALIVE', 1, 9, 1, 'STATE_PREBIND'],
          ['TCP_KEEPIDLE', 6, 4, 180, 'STATE_PREBIND'],
          ['TCP_KEEPINTVL', 6, 5, 180, 'STATE_PREBIND'],
        ],
      );
    });

    test('a request the apiserver never answered in time gets the 504 Timeout Status kube-apiserver writes, with Retry-After for reads only', () => {
      const mappers = connectionManager(translateSidecar(NO_PEERS, settings)).local_reply_config?.mappers ?? [];
      const timeouts = mappers.filter((m) => JSON.stringify(m.filter).includes('"UT"'));
      assert.equal(timeouts.length, 2);
      const [read, write] = timeouts;
      assert.deepEqual(read?.filter?.and_filter?.filters?.[0]?.response_flag_filter?.flags, ['UT', 'SI']);
      assert.deepEqual(read?.filter?.and_filter?.filters?.[1], {
        header_filter: { header: { name: ':method', string_match: { safe_regex: { regex: 'GET|HEAD' } } } },
      });
      assert.deepEqual(write?.filter?.response_flag_filter?.flags, ['UT', 'SI']);
      const status = (body: string | undefined): unknown => JSON.parse(body ?? '');
      const expected = {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Timeout: request did not complete within the allotted timeout',
        reason: 'Timeout',
        code: 504,
      };
      for (const [mapper, details, retryAfter] of [
        [read, { retryAfterSeconds: 1 }, [{ header: { key: 'retry-after', value: '1' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }]],
        [write, {}, undefined],
      ] as const) {
        assert.deepEqual(mapper?.status_code, { value: 504 });
        assert.deepEqual(status(mapper?.body?.inline_string), { ...expected, details });
        assert.equal(mapper?.body_format_override?.content_type, 'application/json');
        assert.deepEqual(mapper?.headers_to_add, retryAfter);
      }
      assert.ok(mappers.indexOf(read as (typeof mappers)[number]) < mappers.indexOf(write as (typeof mappers)[number]), 'reads are matched first');
    });
  });
});
