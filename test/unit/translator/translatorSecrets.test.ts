// The sidecar's certificates as SDS secrets naming files on its own host (src/translator/secrets.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { translateSidecar } from '../../../src/translator/translator.js';
import { FRONT_PROXY_MAX_CONNECTION_SECONDS } from '../../../src/translator/clusters.js';
import type { HttpProtocolOptions } from '../../../src/generated/envoy/extensions/upstreams/http/v3/HttpProtocolOptions.js';
import { NO_PEERS } from '../../support/sidecarPlans.js';
import { throwawaySettingsForTestFile, unpack } from '../../support/translatorFixtures.js';

const settings = throwawaySettingsForTestFile('mvproxy-translator-secrets-');

describe('translateSidecar', () => {
  describe('secrets', () => {
    test('the four certificate files become secrets that name the files, never their content', () => {
      const secrets = translateSidecar(NO_PEERS, settings).secrets;
      const byName = new Map(secrets.map((s) => [s.name, s]));
      assert.deepEqual([...byName.keys()].sort(), ['apiserver-serving', 'client-ca', 'front-proxy-client', 'peer-ca']);
      assert.deepEqual(byName.get('apiserver-serving')?.tls_certificate?.certificate_chain, { filename: settings.listener.servingCertPath });
      assert.deepEqual(byName.get('apiserver-serving')?.tls_certificate?.private_key, { filename: settings.listener.servingKeyPath });
      assert.deepEqual(byName.get('front-proxy-client')?.tls_certificate?.certificate_chain, { filename: settings.upstream.frontProxyCertPath });
      assert.deepEqual(byName.get('client-ca')?.validation_context?.trusted_ca, { filename: settings.listener.clientCaPath });
      assert.deepEqual(byName.get('peer-ca')?.validation_context?.trusted_ca, { filename: settings.upstream.peerCaPath });
    });

    test('a certificate and key in one directory have that directory watched (any rename there re-reads them)', () => {
      const serving = translateSidecar(NO_PEERS, {
        ...settings,
        listener: { ...settings.listener, servingCertPath: '/etc/kubernetes/pki/apiserver.crt', servingKeyPath: '/etc/kubernetes/pki/apiserver.key' },
      }).secrets.find((s) => s.name === 'apiserver-serving');
      assert.deepEqual(serving?.tls_certificate?.watched_directory, { path: '/etc/kubernetes/pki' });
    });

    test('a certificate and key in different directories have none watched explicitly (Envoy watches each file for a rename)', () => {
      const serving = translateSidecar(NO_PEERS, {
        ...settings,
        listener: { ...settings.listener, servingCertPath: '/a/tls.crt', servingKeyPath: '/b/tls.key' },
      }).secrets.find((s) => s.name === 'apiserver-serving');
      assert.equal(serving?.tls_certificate?.watched_directory, undefined);
    });

    test('front-proxy connections are renewed after a bounded time, others are not', () => {
      for (const c of translateSidecar(NO_PEERS, settings).clusters) {
        const options = unpack<HttpProtocolOptions>(
          c.typed_extension_protocol_options?.['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'],
          'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        );
        const expected = (c.name ?? '').endsWith('-front-proxy') ? { seconds: FRONT_PROXY_MAX_CONNECTION_SECONDS } : undefined;
        assert.deepEqual(options.common_http_protocol_options?.max_connection_duration, expected, c.name);
      }
    });
  });
});
