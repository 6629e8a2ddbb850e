// Throwaway certificates for identity tests: a CA and leaves with arbitrary
// subjects (several O, multi-valued RDNs, special characters, UIDs), usages
// and validity periods, and the x-forwarded-client-cert value Envoy writes.
import { createHash, X509Certificate } from 'node:crypto';
import type * as X509Types from '@peculiar/x509';
import { EC_SIGN_ALG, issueCa, loadX509, newKeyPair, randomSerial, toPem, validity, type IssuedCert } from '../../src/tools/sandbox/x509.js';

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
  /**
   * UID attributes (OID 1.3.6.1.4.1.57683.2, what kube-apiserver reads as the
   * user's UID), appended to the subject as their own RDN after `name`.
   * Only with an array `name`.
   */
  uid?: string[];
  /** Validity; default: from 5 minutes ago for a year. */
  notBefore?: Date;
  notAfter?: Date;
}

/** kube-apiserver's UID attribute type (k8s.io/apiserver/pkg/authentication/request/x509). */
const UID_OID = '1.3.6.1.4.1.57683.2';

function subjectOf(opts: LeafOptions): X509Types.JsonNameParams | string {
  if (opts.uid === undefined || opts.uid.length === 0) return opts.name;
  if (typeof opts.name === 'string') throw new Error('uid needs the subject as RDN objects, not a DN string');
  return [...opts.name, { [UID_OID]: opts.uid }];
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
  const sans = [
    ...(opts.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(opts.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  if (sans.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(sans, false));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: new x509.Name(subjectOf(opts)),
    issuer: issuer.cert.subjectName,
    ...validity(),
    ...(opts.notBefore !== undefined ? { notBefore: opts.notBefore } : {}),
    ...(opts.notAfter !== undefined ? { notAfter: opts.notAfter } : {}),
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: EC_SIGN_ALG,
    extensions,
  });
  return { ...toPem(cert, keys), cert, keys };
}

/** The DER of a PEM certificate. */
export function certificateDer(certPem: string): Buffer {
  return new X509Certificate(certPem).raw;
}

/** "X509SHA256=<hex>": the credential id kube-apiserver's x509 authenticator records. */
export function credentialId(certPem: string): string {
  return `X509SHA256=${createHash('sha256').update(certificateDer(certPem)).digest('hex')}`;
}

/**
 * The x-forwarded-client-cert value Envoy writes for a verified client
 * certificate with forward_client_cert_details SANITIZE_SET and
 * set_current_client_cert_details {cert: true}: one element,
 * `Hash=<hex sha256 of DER>;Cert="<URL-encoded PEM>"`.
 */
export function formatXfcc(certPem: string): string {
  const hash = createHash('sha256').update(certificateDer(certPem)).digest('hex');
  return `Hash=${hash};Cert="${encodeURIComponent(certPem)}"`;
}
