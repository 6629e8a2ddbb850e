// A cache miss: the Cert of the XFCC just scanned, decoded and checked
// against its Hash, parsed, and judged as kube-apiserver's x509
// authenticator would (user, UID, groups, or why it is refused).
import { LOG_WARN, logString } from "./abi";
import { Entry, KIND_ANONYMOUS, KIND_IDENTITY, KIND_REJECTED } from "./cache";
import { Certificate, certificateError, parseCertificate } from "./certificate";
import { addDebt } from "./gc";
import { rejectUnreadable } from "./rejection";
import { sha256 } from "./sha256";
import { XFCC_DIGEST, certEnd, certStart, decodeCert, pemToDer } from "./xfcc";

// ---------------------------------------------------------------------------
// Scratch memory reused by every miss (unmanaged; grows to the largest
// certificate seen, bounded by MAX_XFCC).

/** Larger XFCC values are refused (Envoy's default request header limit is 60 KiB). */
export const MAX_XFCC: usize = 96 * 1024;
let scratch: usize = 0;
let scratchSize: usize = 0;

function scratchFor(size: usize): usize {
  if (size > scratchSize) {
    if (scratch != 0) heap.free(scratch);
    scratch = heap.alloc(size);
    scratchSize = size;
  }
  return scratch;
}

const DER_DIGEST: usize = memory.data(32, 8);
const HEX = "0123456789abcdef";

function digestHex(digest: usize): string {
  let s = "";
  for (let i: usize = 0; i < 32; i++) {
    const b = <i32>load<u8>(digest + i);
    s += HEX.charAt(b >> 4) + HEX.charAt(b & 15);
  }
  return s;
}

export function warnCertificate(entry: Entry, reason: string): void {
  logString(
    LOG_WARN,
    "mvproxy identity filter: client certificate " + String.UTF8.decode(entry.credentialId) + " rejected: " + reason,
  );
}

/**
 * A cache miss: decodes the Cert of the XFCC just scanned, checks it against
 * the Hash, and reads it. Returns the entry to memoize, or null when the
 * request was rejected without memoizing (the digest is not the certificate's).
 */
export function readCertificate(): Entry | null {
  addDebt(64);
  const encodedLen = certEnd - certStart;
  const buf = scratchFor(encodedLen);
  const pemLen = decodeCert(buf);
  if (pemLen < 0) {
    rejectUnreadable("unreadable x-forwarded-client-cert: Cert is not URL-encoded");
    return null;
  }
  const derLen = pemToDer(buf, <usize>pemLen, buf);
  if (derLen <= 0) {
    rejectUnreadable("unreadable x-forwarded-client-cert: Cert is not one PEM certificate");
    return null;
  }
  sha256(buf, <usize>derLen, DER_DIGEST);
  if (memory.compare(DER_DIGEST, XFCC_DIGEST, 32) != 0) {
    rejectUnreadable("the client certificate does not match its Hash");
    return null;
  }

  const entry = new Entry();
  entry.d0 = load<u64>(DER_DIGEST);
  entry.d1 = load<u64>(DER_DIGEST, 8);
  entry.d2 = load<u64>(DER_DIGEST, 16);
  entry.d3 = load<u64>(DER_DIGEST, 24);
  entry.credentialId = String.UTF8.encode("X509SHA256=" + digestHex(DER_DIGEST));

  const cert = parseCertificate(buf, <usize>derLen);
  const reason = cert === null ? "the certificate cannot be parsed: " + certificateError : judge(cert, entry);
  if (reason.length > 0) {
    entry.kind = KIND_REJECTED;
    warnCertificate(entry, reason);
  }
  return entry;
}

/** Fills `entry` from a parsed certificate; returns why it is refused, or "". */
function judge(cert: Certificate, entry: Entry): string {
  entry.notBefore = cert.notBefore;
  entry.notAfter = cert.notAfter;
  // Go verifies client certificates for ExtKeyUsageClientAuth.
  if (!cert.clientAuthAllowed) return apiserverRefuses(entry, "the certificate is not valid for client authentication (extended key usage)");
  const cn = cert.commonName;
  // Upstream's CommonNameUserConversion: no CN, no user (and nothing else is read).
  if (cn === null || cn.byteLength == 0) {
    entry.kind = KIND_ANONYMOUS;
    return "";
  }
  // Upstream's parseUIDFromCert.
  if (cert.uids.length > 1) return apiserverRefuses(entry, "the certificate has more than one UID");
  let uid: ArrayBuffer | null = null;
  if (cert.uids.length == 1) {
    uid = unchecked(cert.uids[0]);
    if (uid.byteLength == 0) return apiserverRefuses(entry, "the certificate has an empty UID");
    if (!sendable(uid)) return "the certificate's UID cannot be sent as a header value";
  }
  if (!sendable(cn)) return "the certificate's CN cannot be sent as a header value (control characters or surrounding whitespace)";
  const groups = new Array<ArrayBuffer>();
  for (let i = 0; i < cert.organizations.length; i++) {
    const o = unchecked(cert.organizations[i]);
    // An empty O grants nothing: the request-header authenticator ignores empty values.
    if (o.byteLength == 0) continue;
    if (!sendable(o)) return "the certificate names a group (O) that cannot be sent as a header value (control characters or surrounding whitespace)";
    groups.push(o);
  }
  entry.kind = KIND_IDENTITY;
  entry.user = cn;
  entry.uid = uid;
  entry.groups = groups;
  return "";
}

/** Marks a refusal the apiserver makes too (see Entry.apiserverRefuses) and returns its reason. */
function apiserverRefuses(entry: Entry, reason: string): string {
  entry.apiserverRefuses = true;
  return reason;
}

/**
 * Whether HTTP carries the value faithfully: no control characters (other
 * than tab, inside) and no leading or trailing space or tab, which HTTP
 * parsers trim.
 */
function sendable(value: ArrayBuffer): bool {
  const p = changetype<usize>(value);
  const n = <usize>value.byteLength;
  if (n == 0) return true;
  for (let i: usize = 0; i < n; i++) {
    const c = load<u8>(p + i);
    if ((c < 0x20 && c != 0x09) || c == 0x7f) return false;
  }
  const first = load<u8>(p);
  const last = load<u8>(p + n - 1);
  return !(first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09);
}
