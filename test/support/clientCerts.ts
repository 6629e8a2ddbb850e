// Throwaway certificates for identity tests: a CA and leaves with arbitrary
// subjects (several O, multi-valued RDNs, special characters) and usages.
import { KeyObject, X509Certificate, randomBytes, webcrypto } from 'node:crypto';
import type * as X509Types from '@peculiar/x509';

type X509Module = typeof X509Types;

let loading: Promise<X509Module> | undefined;

/** @peculiar/x509 needs the Reflect metadata polyfill loaded first. */
export function loadX509(): Promise<X509Module> {
  loading ??= (async () => {
    await import('reflect-metadata');
    const mod: X509Module = await import('@peculiar/x509');
    mod.cryptoProvider.set(webcrypto as unknown as Crypto);
    return mod;
  })();
  return loading;
}

const ALG = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGN = { name: 'ECDSA', hash: 'SHA-256' } as const;

export interface TestCert {
  certPem: string;
  keyPem: string;
  cert: X509Types.X509Certificate;
  keys: CryptoKeyPair;
}

function serial(): string {
  const b = randomBytes(12);
  b[0] = ((b[0] ?? 0) & 0x7f) | 0x40;
  return b.toString('hex');
}

function validity(): { notBefore: Date; notAfter: Date } {
  return { notBefore: new Date(Date.now() - 3600_000), notAfter: new Date(Date.now() + 24 * 3600_000) };
}

function pem(cert: X509Types.X509Certificate, keys: CryptoKeyPair): { certPem: string; keyPem: string } {
  return {
    certPem: new X509Certificate(Buffer.from(cert.rawData)).toString(),
    keyPem: KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

export async function testCa(commonName: string): Promise<TestCert> {
  const x509 = await loadX509();
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: [{ CN: [commonName] }],
    ...validity(),
    keys,
    signingAlgorithm: SIGN,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature, true),
    ],
  });
  return { ...pem(cert, keys), cert, keys };
}

export interface LeafOptions {
  /** The subject, RDN by RDN: `[{O: ['a']}, {CN: ['x'], O: ['b']}]` (the second is multi-valued). Or a DN string. */
  name: X509Types.JsonNameParams | string;
  /** Extended key usages; none: no EKU extension. */
  usages?: Array<'client' | 'server'>;
  dnsNames?: string[];
  ips?: string[];
}

export async function testLeaf(issuer: TestCert, opts: LeafOptions): Promise<TestCert> {
  const x509 = await loadX509();
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
  const extensions: X509Types.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
  ];
  if (opts.usages !== undefined && opts.usages.length > 0) {
    extensions.push(
      new x509.ExtendedKeyUsageExtension(
        opts.usages.map((u) => (u === 'client' ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth)),
        false,
      ),
    );
  }
  const sans = [...(opts.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })), ...(opts.ips ?? []).map((value) => ({ type: 'ip' as const, value }))];
  if (sans.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(sans, false));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: new x509.Name(opts.name),
    issuer: issuer.cert.subjectName,
    ...validity(),
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: SIGN,
    extensions,
  });
  return { ...pem(cert, keys), cert, keys };
}

/** The XFCC value Envoy writes for a certificate (SANITIZE_SET, cert: true). */
export { formatXfcc as xfccFor } from '../../src/identity/xfcc.js';
