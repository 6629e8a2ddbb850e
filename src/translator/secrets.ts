// The sidecar's certificates as SDS secrets (docs/identity.md, "Rotation").
// Each secret names files on the sidecar's own host (never their content: keys
// stay on the node, and in kubeadm each node has its own apiserver.crt under
// the same path), and Envoy watches those files itself: a file renamed into
// place (how Kubernetes secret volumes and most tools rotate) is re-read at
// once, whether or not the control plane is reachable. A file rewritten in
// place is not seen by Envoy (checked with Envoy 1.40); the local replica
// notices it and renames a marker into the watched directory
// (src/sources/certificateFiles.ts), which makes Envoy re-read.
import { dirname } from 'node:path';
import type { ConfigSource } from '../generated/envoy/config/core/v3/ConfigSource.js';
import type { SdsSecretConfig } from '../generated/envoy/extensions/transport_sockets/tls/v3/SdsSecretConfig.js';
import type { Secret } from '../generated/envoy/extensions/transport_sockets/tls/v3/Secret.js';
import type { TranslatorSettings } from './settings.js';

/** The serving certificate and key the sidecar presents to clients. */
export const SERVING_SECRET = 'apiserver-serving';
/** The cluster client CA bundle client certificates are verified against. */
export const CLIENT_CA_SECRET = 'client-ca';
/** The front-proxy client certificate and key presented to apiservers. */
export const FRONT_PROXY_SECRET = 'front-proxy-client';
/** The CA apiserver serving certificates are verified against. */
export const PEER_CA_SECRET = 'peer-ca';

const ADS: ConfigSource = { ads: {}, resource_api_version: 'V3' };

/** A reference to a secret that comes over the ADS stream. */
export function sdsSecret(name: string): SdsSecretConfig {
  return { name, sds_config: ADS };
}

/**
 * The directory Envoy watches for a certificate and key: theirs when they
 * share one (any rename in it, a Kubernetes volume's `..data` swap included,
 * makes Envoy re-read the pair), else none (Envoy then watches each file's
 * directory for a rename onto that file).
 */
function watchedDirectory(...files: string[]): { watched_directory?: { path: string } } {
  const dirs = new Set(files.map((file) => dirname(file)));
  const [only] = dirs;
  return dirs.size === 1 && only !== undefined ? { watched_directory: { path: only } } : {};
}

function certificate(name: string, certPath: string, keyPath: string): Secret {
  return {
    name,
    tls_certificate: { certificate_chain: { filename: certPath }, private_key: { filename: keyPath }, ...watchedDirectory(certPath, keyPath) },
  };
}

function authority(name: string, caPath: string): Secret {
  return { name, validation_context: { trusted_ca: { filename: caPath }, ...watchedDirectory(caPath) } };
}

/** Every secret the listener and the clusters of a sidecar name, in name order. */
export function sidecarSecrets(settings: TranslatorSettings): Secret[] {
  const { listener, upstream } = settings;
  return [
    certificate(SERVING_SECRET, listener.servingCertPath, listener.servingKeyPath),
    authority(CLIENT_CA_SECRET, listener.clientCaPath),
    certificate(FRONT_PROXY_SECRET, upstream.frontProxyCertPath, upstream.frontProxyKeyPath),
    authority(PEER_CA_SECRET, upstream.peerCaPath),
  ];
}
