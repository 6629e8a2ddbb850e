// Translator settings for tests: throwaway certificate files, and the one
// shape of TranslatorSettings every test builds.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { Any } from '../../src/generated/google/protobuf/Any.js';
import { PEER_SERVER_NAME, type TranslatorSettings } from '../../src/translator/translator.js';
import { CONTROL_PLANE_CLUSTER } from '../../src/xds/bootstrap.js';
import { readFilterModules } from '../../src/xds/filterModule.js';

export interface SidecarFiles {
  servingCert: string;
  servingKey: string;
  clientCa: string;
  frontProxyCert: string;
  frontProxyKey: string;
  peerCa: string;
}

export function sidecarSettings(port: number, files: SidecarFiles): TranslatorSettings {
  return {
    listener: { address: '127.0.0.1', port, servingCertPath: files.servingCert, servingKeyPath: files.servingKey, clientCaPath: files.clientCa },
    upstream: { frontProxyCertPath: files.frontProxyCert, frontProxyKeyPath: files.frontProxyKey, peerCaPath: files.peerCa, serverName: PEER_SERVER_NAME },
    controlPlaneCluster: CONTROL_PLANE_CLUSTER,
    // The real module: tests that hand the config to Envoy need one it loads.
    filterModule: readFilterModules().identity,
    documentModule: readFilterModules().documents,
  };
}

/** Self-signed throwaway certificates in `dir` (enough for `envoy --mode validate`), and settings using them. */
export function throwawaySettings(dir: string, port = 6443): TranslatorSettings {
  const file = (name: string): string => join(dir, name);
  for (const name of ['serving', 'client-ca', 'front-proxy', 'peer-ca']) {
    const result = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-subj',
        '/CN=x',
        '-keyout',
        file(`${name}.key`),
        '-out',
        file(`${name}.crt`),
        '-days',
        '1',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(result.status, 0, result.stderr);
  }
  return sidecarSettings(port, {
    servingCert: file('serving.crt'),
    servingKey: file('serving.key'),
    clientCa: file('client-ca.crt'),
    frontProxyCert: file('front-proxy.crt'),
    frontProxyKey: file('front-proxy.key'),
    peerCa: file('peer-ca.crt'),
  });
}

/**
 * throwawaySettings in a new temporary directory, made when called (at a test
 * file's top level) and removed after that file's tests.
 */
export function throwawaySettingsForTestFile(prefix: string): TranslatorSettings {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return throwawaySettings(dir);
}

/** The fields of an Any in `{'@type', ...}` form, as message T. */
export function unpack<T>(any: Any | null | undefined, typeName: string): T {
  assert.ok(any && '@type' in any, `an Any of ${typeName}`);
  assert.equal(any['@type'], `type.googleapis.com/${typeName}`);
  return any as unknown as T;
}

/** The certificate and key paths of settings, in a fixed order (to map one settings' files onto another's). */
export function settingsFilePaths(settings: TranslatorSettings): string[] {
  const { listener, upstream } = settings;
  return [
    listener.servingCertPath,
    listener.servingKeyPath,
    listener.clientCaPath,
    upstream.frontProxyCertPath,
    upstream.frontProxyKeyPath,
    upstream.peerCaPath,
  ];
}
