// Throwaway certificates for identity tests: a CA and leaves with arbitrary
// subjects (several O, multi-valued RDNs, special characters) and usages.
import type * as X509Types from '@peculiar/x509';
import { EC_SIGN_ALG, issueCa, loadX509, newKeyPair, randomSerial, toPem, validity, type IssuedCert } from '../../src/sandbox/x509.js';

export type TestCert = IssuedCert;

/** A throwaway CA, issued as the sandbox issues its own. */
export const testCa: (commonName: string) => Promise<TestCert> = issueCa;

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
  const keys = await newKeyPair();
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
    serialNumber: randomSerial(),
    subject: new x509.Name(opts.name),
    issuer: issuer.cert.subjectName,
    ...validity(),
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: EC_SIGN_ALG,
    extensions,
  });
  return { ...toPem(cert, keys), cert, keys };
}

/** The XFCC value Envoy writes for a certificate (SANITIZE_SET, cert: true). */
export { formatXfcc as xfccFor } from '../../src/identity/xfcc.js';
