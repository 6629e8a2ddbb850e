// Issuing certificates with @peculiar/x509: loading it, ECDSA P-256 keys,
// serials, validity and PEM output. Shared by the sandbox PKI and the tests'
// throwaway certificates.
import { KeyObject, X509Certificate, randomBytes, webcrypto } from 'node:crypto';
import type * as X509Types from '@peculiar/x509';

export type X509Module = typeof X509Types;

const VALIDITY_MS = 365 * 24 * 60 * 60 * 1000;
// Backdate a little so a just-issued cert is valid on a host whose clock is slightly behind.
const BACKDATE_MS = 5 * 60 * 1000;

const EC_KEY_ALG = { name: 'ECDSA', namedCurve: 'P-256' } as const;
export const EC_SIGN_ALG = { name: 'ECDSA', hash: 'SHA-256' } as const;

/** A certificate with its key pair, as objects and as PEM. */
export interface IssuedCert {
  certPem: string;
  keyPem: string;
  cert: X509Types.X509Certificate;
  keys: CryptoKeyPair;
}

let x509Loading: Promise<X509Module> | undefined;

/**
 * @peculiar/x509 depends on tsyringe, which throws at import time unless the
 * Reflect metadata polyfill is loaded first; static imports would run before
 * it, so load x509 dynamically after it.
 */
export function loadX509(): Promise<X509Module> {
  x509Loading ??= (async () => {
    await import('reflect-metadata');
    const mod: X509Module = await import('@peculiar/x509');
    mod.cryptoProvider.set(webcrypto as unknown as Crypto);
    return mod;
  })();
  return x509Loading;
}

/** A positive, 16-byte serial with a non-zero leading byte (strict DER parsers reject padding). */
export function randomSerial(): string {
  const b = randomBytes(16);
  b[0] = ((b[0] ?? 0) & 0x7f) | 0x40;
  return b.toString('hex');
}

export async function newKeyPair(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(EC_KEY_ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
}

export function toPem(cert: X509Types.X509Certificate, keys: CryptoKeyPair): Omit<IssuedCert, 'cert' | 'keys'> {
  // Node's own encoders give canonical PEM: "CERTIFICATE" and PKCS#8 "PRIVATE KEY".
  const certPem = new X509Certificate(Buffer.from(cert.rawData)).toString();
  const keyPem = KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }).toString();
  return { certPem, keyPem };
}

export function validity(): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return { notBefore: new Date(now - BACKDATE_MS), notAfter: new Date(now + VALIDITY_MS) };
}

/** A self-signed ECDSA CA (key usages for signing certificates and CRLs, with a subject key identifier). */
export async function issueCa(commonName: string): Promise<IssuedCert> {
  const x509 = await loadX509();
  const keys = await newKeyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: [{ CN: [commonName] }],
    ...validity(),
    keys,
    signingAlgorithm: EC_SIGN_ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { ...toPem(cert, keys), cert, keys };
}
