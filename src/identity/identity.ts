// Client certificate -> the identity kube-apiserver's x509 authenticator
// would have derived from it: user = subject CN, groups = subject O values
// (Go's pkix.Name: the last CN wins, every O in certificate order).
// Pure: no I/O, no logging; the caller decides what to log (never the PEM).
import { X509Certificate, createHash } from 'node:crypto';
import { OID_COMMON_NAME, OID_ORGANIZATION, X509NameError, subjectAttributes } from './x509Name.js';
import { XfccError, xfccCertificate } from './xfcc.js';

export { parseXfcc, xfccCertificate, XfccError } from './xfcc.js';
export { subjectAttributes, X509NameError, OID_COMMON_NAME, OID_ORGANIZATION } from './x509Name.js';

export interface Identity {
  user: string;
  /** In certificate order; may be empty. */
  groups: string[];
}

/**
 * - `none`: no client certificate (no XFCC): nothing to assert;
 * - `anonymous`: a valid client certificate without a CN. kube-apiserver's
 *   x509 authenticator does not authenticate such a certificate, so no
 *   identity is asserted and the request goes on unauthenticated;
 * - `identity`: assert these headers;
 * - `rejected`: a certificate was presented but cannot be read, is not meant
 *   for client authentication, or names a user or group that cannot be sent
 *   as a header value. The request must fail closed (never go on without
 *   the identity its certificate claims).
 */
export type IdentityResult =
  | { kind: 'none' }
  | { kind: 'anonymous' }
  | { kind: 'identity'; identity: Identity }
  | { kind: 'rejected'; reason: string };

const EKU_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const EKU_ANY = '2.5.29.37.0';

/** Characters an HTTP field value cannot carry (RFC 9110): controls other than tab, and DEL. */
// eslint-disable-next-line no-control-regex
const UNSENDABLE = /[\x00-\x08\x0a-\x1f\x7f]/;

/** The identity of the client certificate in an XFCC header value (undefined: no header). */
export function identityFromXfcc(xfcc: string | undefined): IdentityResult {
  if (xfcc === undefined) return { kind: 'none' };
  let pem: string;
  let hash: string | undefined;
  try {
    ({ pem, hash } = xfccCertificate(xfcc));
  } catch (err) {
    return { kind: 'rejected', reason: `unreadable x-forwarded-client-cert: ${err instanceof XfccError ? err.message : 'parse error'}` };
  }
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch {
    return { kind: 'rejected', reason: 'the client certificate cannot be parsed' };
  }
  if (hash !== undefined && hash.toLowerCase() !== createHash('sha256').update(certificate.raw).digest('hex')) {
    return { kind: 'rejected', reason: 'the client certificate does not match its hash' };
  }
  return identityFromCertificate(certificate);
}

/** The identity of a certificate Envoy already verified against the client CA. */
export function identityFromCertificate(certificate: X509Certificate): IdentityResult {
  // Go verifies client certificates for ExtKeyUsageClientAuth: a certificate
  // listing usages must list client auth (or any). Envoy does not check this.
  const usages = certificate.keyUsage;
  if (usages !== undefined && usages.length > 0 && !usages.includes(EKU_CLIENT_AUTH) && !usages.includes(EKU_ANY)) {
    return { kind: 'rejected', reason: 'the client certificate is not valid for client authentication (extended key usage)' };
  }
  let attributes;
  try {
    attributes = subjectAttributes(certificate.raw);
  } catch (err) {
    return { kind: 'rejected', reason: `the client certificate subject cannot be read: ${err instanceof X509NameError ? err.message : 'parse error'}` };
  }
  let user = '';
  const groups: string[] = [];
  for (const { oid, value } of attributes) {
    if (oid === OID_COMMON_NAME) user = value;
    // An empty O grants nothing and cannot be sent as a header value.
    else if (oid === OID_ORGANIZATION && value !== '') groups.push(value);
  }
  if (user === '') return { kind: 'anonymous' };
  for (const value of [user, ...groups]) {
    if (UNSENDABLE.test(value)) return { kind: 'rejected', reason: 'the client certificate names a user or group with control characters' };
    // HTTP strips leading and trailing whitespace from field values: the
    // apiserver would see another name than the certificate's.
    if (value !== value.trim()) return { kind: 'rejected', reason: 'the client certificate names a user or group with surrounding whitespace' };
  }
  return { kind: 'identity', identity: { user, groups } };
}
