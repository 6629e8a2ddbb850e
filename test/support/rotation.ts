// Rotating the sandbox's certificates the ways operators do: new serving,
// front-proxy and client certificates from the sandbox's own CAs or from new
// ones, written atomically (a file renamed into place, as Kubernetes secret
// volumes and most tools do) or in place (truncated and rewritten, as
// `kubeadm certs renew` does).
import { X509Certificate, createPrivateKey, webcrypto } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { writeFileAtomicSync } from '../../src/util/atomicWrite.js';
import { issueLeaf, SERVING_DNS_NAMES, type CertKeyPaths, type LeafSpec } from '../../src/tools/sandbox/pki.js';
import { issueCa, loadX509, type IssuedCert } from '../../src/tools/sandbox/x509.js';

export type WriteMode = 'atomic' | 'in-place';

/** A CA (or any pair) of the sandbox, loaded from its files so it can sign. */
export async function loadIssued(paths: CertKeyPaths): Promise<IssuedCert> {
  const x509 = await loadX509();
  const [certPem, keyPem] = await Promise.all([readFile(paths.cert, 'utf8'), readFile(paths.key, 'utf8')]);
  const der = createPrivateKey(keyPem).export({ type: 'pkcs8', format: 'der' });
  const privateKey = await webcrypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']);
  const cert = new x509.X509Certificate(certPem);
  const publicKey = await cert.publicKey.export({ name: 'ECDSA', namedCurve: 'P-256' }, ['verify']);
  return { certPem, keyPem, cert, keys: { privateKey, publicKey } as CryptoKeyPair };
}

/** A new self-signed CA. */
export function newCa(commonName: string): Promise<IssuedCert> {
  return issueCa(commonName);
}

/** A new certificate signed by `issuer`. */
export async function newLeaf(issuer: IssuedCert, spec: LeafSpec): Promise<IssuedCert> {
  return issueLeaf(await loadX509(), issuer, spec);
}

/** A new serving certificate for apiserver `name`, with the SANs the sandbox's carry. */
export function newServingCert(ca: IssuedCert, name: string): Promise<IssuedCert> {
  return newLeaf(ca, { commonName: name, usage: 'server', sans: [...SERVING_DNS_NAMES, name, '127.0.0.1', '10.0.0.1'] });
}

/** The serial (upper-case hex, as Node reports it) of a PEM certificate. */
export function serialOf(certPem: string): string {
  return new X509Certificate(certPem).serialNumber;
}

/** Writes `content` to `path` atomically (renamed into place) or in place (truncated and rewritten). */
export async function writeCertFile(path: string, content: string, mode: WriteMode, fileMode = 0o644): Promise<void> {
  if (mode === 'atomic') writeFileAtomicSync(path, content, { mode: fileMode });
  else await writeFile(path, content, { mode: fileMode });
}

/** Writes a certificate and its key, key first (a reader between the two sees a mismatched pair and keeps the old one). */
export async function writePairFiles(paths: CertKeyPaths, issued: IssuedCert, mode: WriteMode): Promise<void> {
  await writeCertFile(paths.key, issued.keyPem, mode, 0o600);
  await writeCertFile(paths.cert, issued.certPem, mode);
}
