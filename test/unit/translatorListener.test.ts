// The translator's listener: header stripping, connection manager settings and client certificates.
// Plans: test/support/sidecarPlans.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { HeaderMutation } from '../../src/generated/envoy/extensions/filters/http/header_mutation/v3/HeaderMutation.js';
import type { DownstreamTlsContext } from '../../src/generated/envoy/extensions/transport_sockets/tls/v3/DownstreamTlsContext.js';
import { translateSidecar } from '../../src/translator/translator.js';
import { NO_PEERS } from '../support/sidecarPlans.js';
import { connectionManager } from '../support/translatedFilters.js';
import { throwawaySettingsForTestFile, unpack } from '../support/translatorFixtures.js';

const settings = throwawaySettingsForTestFile('mvproxy-translator-');

describe('translateSidecar', () => {
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
      assert.deepEqual(tls.common_tls_context?.validation_context, { trusted_ca: { filename: settings.listener.clientCaPath } });
      assert.deepEqual(tls.common_tls_context?.tls_certificates, [
        { certificate_chain: { filename: settings.listener.servingCertPath }, private_key: { filename: settings.listener.servingKeyPath } },
      ]);
    });
  });
});
