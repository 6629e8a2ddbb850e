// The parts of an X.509 certificate (DER) that kube-apiserver's x509
// authenticator uses, read the way Go's crypto/x509 reads them:
//
//   Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signature }
//   TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber,
//     signature, issuer Name, validity, subject Name, subjectPublicKeyInfo,
//     [1] issuerUniqueID OPTIONAL, [2] subjectUniqueID OPTIONAL,
//     [3] extensions OPTIONAL }
//   Name ::= SEQUENCE OF SET OF SEQUENCE { type OID, value ANY }
//
// Values are decoded as Go's parseASN1String does (asn1String.ts); any other
// string type, in the subject or the issuer, makes Go refuse the whole
// certificate, so it is an error here too. Everything is bounds-checked (the
// DER reader: der.ts): a malformed certificate is an error, never a trap (a
// trap would take the VM down in Envoy).
//
// Runs only on a cache miss; allocates the result (managed objects).
import { decodeString, stringError } from "./asn1String";
import {
  TAG_BIT_STRING,
  TAG_BOOLEAN,
  TAG_GENERALIZED_TIME,
  TAG_INTEGER,
  TAG_OCTET_STRING,
  TAG_OID,
  TAG_SEQUENCE,
  TAG_SET,
  TAG_UTC_TIME,
  expectTlv,
  oidIs,
  readTlv,
  tlvEnd,
  tlvStart,
  tlvTag,
  validOid,
} from "./der";

export class Certificate {
  /** Validity, in seconds since the Unix epoch. */
  notBefore: i64 = 0;
  notAfter: i64 = 0;
  /** The last CN (Go's pkix.Name keeps the last), UTF-8; null: none. */
  commonName: ArrayBuffer | null = null;
  /** Every O in certificate order, UTF-8 (empty ones included). */
  organizations: Array<ArrayBuffer> = [];
  /** Every UID attribute (1.3.6.1.4.1.57683.2), UTF-8. */
  uids: Array<ArrayBuffer> = [];
  /** False when an extendedKeyUsage extension lists neither clientAuth nor anyExtendedKeyUsage. */
  clientAuthAllowed: bool = true;
}

/** Why the last parseCertificate returned null. */
export let certificateError: string = "";

const OID_COMMON_NAME: StaticArray<u8> = [0x55, 0x04, 0x03]; // 2.5.4.3
const OID_ORGANIZATION: StaticArray<u8> = [0x55, 0x04, 0x0a]; // 2.5.4.10
const OID_UID: StaticArray<u8> = [0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xc2, 0x53, 0x02]; // 1.3.6.1.4.1.57683.2
const OID_EXT_KEY_USAGE: StaticArray<u8> = [0x55, 0x1d, 0x25]; // 2.5.29.37
const OID_EKU_ANY: StaticArray<u8> = [0x55, 0x1d, 0x25, 0x00]; // 2.5.29.37.0
const OID_EKU_CLIENT_AUTH: StaticArray<u8> = [0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02]; // 1.3.6.1.5.5.7.3.2

// ---- Names ----

/**
 * Reads the Name whose content is [start, end). With `into` set (the
 * subject), keeps CN, O and UID attributes; otherwise (the issuer) only
 * checks that Go could read it.
 */
function readName(start: usize, end: usize, into: Certificate | null): bool {
  let at = start;
  while (at < end) {
    if (!expectTlv(at, end, TAG_SET)) {
      certificateError = "malformed RelativeDistinguishedName";
      return false;
    }
    const setEnd = tlvEnd;
    let atvAt = tlvStart;
    at = setEnd;
    while (atvAt < setEnd) {
      if (!expectTlv(atvAt, setEnd, TAG_SEQUENCE)) {
        certificateError = "malformed AttributeTypeAndValue";
        return false;
      }
      const atvEnd = tlvEnd;
      atvAt = atvEnd;
      if (!expectTlv(tlvStart, atvEnd, TAG_OID) || !validOid(tlvStart, tlvEnd)) {
        certificateError = "malformed attribute type";
        return false;
      }
      const oidStart = tlvStart;
      const oidEnd = tlvEnd;
      if (!readTlv(oidEnd, atvEnd) || tlvEnd != atvEnd) {
        certificateError = "malformed attribute value";
        return false;
      }
      const value = decodeString(tlvTag, tlvStart, tlvEnd);
      if (value === null) {
        certificateError = stringError;
        return false;
      }
      if (into !== null) {
        if (oidIs(oidStart, oidEnd, OID_COMMON_NAME)) into.commonName = value;
        else if (oidIs(oidStart, oidEnd, OID_ORGANIZATION)) into.organizations.push(value);
        else if (oidIs(oidStart, oidEnd, OID_UID)) into.uids.push(value);
      }
    }
  }
  return true;
}

// ---- Time ----

function digits(p: usize, n: usize): i32 {
  let v: i32 = 0;
  for (let i: usize = 0; i < n; i++) {
    const c = <i32>load<u8>(p + i) - 0x30;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/** Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil(y: i64, m: i64, d: i64): i64 {
  y -= m <= 2 ? 1 : 0;
  const era = (y >= 0 ? y : y - 399) / 400;
  const yoe = y - era * 400;
  const doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

function daysInMonth(y: i32, m: i32): i32 {
  if (m == 2) return (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) ? 29 : 28;
  return m == 4 || m == 6 || m == 9 || m == 11 ? 30 : 31;
}

let parsedTime: i64 = 0;

/**
 * UTCTime (YYMMDDHHMM[SS]) or GeneralizedTime (YYYYMMDDHHMMSS), then `Z` or
 * a non-zero `+hhmm`/`-hhmm`, exactly as Go's cryptobyte accepts them
 * (its parse-then-reformat check refuses `+0000` and fractions). Sets parsedTime.
 */
function readTime(tag: i32, start: usize, end: usize): bool {
  const n = end - start;
  let p = start;
  let year: i32;
  if (tag == TAG_UTC_TIME) {
    if (n < 11) return false;
    const yy = digits(p, 2);
    if (yy < 0) return false;
    year = yy < 50 ? 2000 + yy : 1900 + yy;
    p += 2;
  } else if (tag == TAG_GENERALIZED_TIME) {
    if (n < 15) return false;
    year = digits(p, 4);
    if (year < 0) return false;
    p += 4;
  } else return false;
  const month = digits(p, 2);
  const day = digits(p + 2, 2);
  const hour = digits(p + 4, 2);
  const minute = digits(p + 6, 2);
  p += 8;
  let second: i32 = 0;
  // UTCTime may omit the seconds (Go falls back to minute precision).
  const zoneAt = tag == TAG_UTC_TIME && end - p >= 1 && (load<u8>(p) == 0x5a || load<u8>(p) == 0x2b || load<u8>(p) == 0x2d);
  if (!zoneAt) {
    if (end - p < 2) return false;
    second = digits(p, 2);
    p += 2;
  }
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return false;
  if (end - p < 1) return false;
  let offset: i64 = 0;
  const zone = load<u8>(p);
  if (zone == 0x5a) {
    if (end - p != 1) return false;
  } else if (zone == 0x2b || zone == 0x2d) {
    if (end - p != 5) return false;
    const oh = digits(p + 1, 2);
    const om = digits(p + 3, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59 || (oh == 0 && om == 0)) return false;
    offset = <i64>(oh * 3600 + om * 60);
    if (zone == 0x2d) offset = -offset;
  } else return false;
  parsedTime = daysFromCivil(year, month, day) * 86400 + <i64>(hour * 3600 + minute * 60 + second) - offset;
  return true;
}

// ---- Extensions ----

/** Reads [3] extensions' SEQUENCE content [start, end); sets clientAuthAllowed. */
function readExtensions(start: usize, end: usize, cert: Certificate): bool {
  // Extension OIDs seen, to refuse duplicates as Go does (few extensions: linear scan).
  const seenStarts = new Array<usize>();
  const seenEnds = new Array<usize>();
  let at = start;
  while (at < end) {
    if (!expectTlv(at, end, TAG_SEQUENCE)) {
      certificateError = "malformed extension";
      return false;
    }
    const extEnd = tlvEnd;
    at = extEnd;
    if (!expectTlv(tlvStart, extEnd, TAG_OID) || !validOid(tlvStart, tlvEnd)) {
      certificateError = "malformed extension id";
      return false;
    }
    const oidStart = tlvStart;
    const oidEnd = tlvEnd;
    for (let i = 0; i < seenStarts.length; i++) {
      const s = unchecked(seenStarts[i]);
      const e = unchecked(seenEnds[i]);
      if (e - s == oidEnd - oidStart && memory.compare(s, oidStart, e - s) == 0) {
        certificateError = "duplicate extension";
        return false;
      }
    }
    seenStarts.push(oidStart);
    seenEnds.push(oidEnd);
    let next = oidEnd;
    if (!readTlv(next, extEnd)) {
      certificateError = "malformed extension";
      return false;
    }
    if (tlvTag == TAG_BOOLEAN) {
      next = tlvEnd;
      if (!readTlv(next, extEnd)) {
        certificateError = "malformed extension";
        return false;
      }
    }
    if (tlvTag != TAG_OCTET_STRING || tlvEnd != extEnd) {
      certificateError = "malformed extension value";
      return false;
    }
    if (oidIs(oidStart, oidEnd, OID_EXT_KEY_USAGE)) {
      const valueEnd = tlvEnd;
      if (!expectTlv(tlvStart, valueEnd, TAG_SEQUENCE) || tlvEnd != valueEnd) {
        certificateError = "malformed extended key usage";
        return false;
      }
      const listEnd = tlvEnd;
      let usageAt = tlvStart;
      let any = false;
      let client = false;
      let count = 0;
      while (usageAt < listEnd) {
        if (!expectTlv(usageAt, listEnd, TAG_OID) || !validOid(tlvStart, tlvEnd)) {
          certificateError = "malformed extended key usage";
          return false;
        }
        count++;
        if (oidIs(tlvStart, tlvEnd, OID_EKU_ANY)) any = true;
        else if (oidIs(tlvStart, tlvEnd, OID_EKU_CLIENT_AUTH)) client = true;
        usageAt = tlvEnd;
      }
      // Go: a certificate listing no usage at all is unconstrained.
      cert.clientAuthAllowed = count == 0 || any || client;
    }
  }
  return true;
}

// ---- Certificate ----

/** Parses the DER certificate at [der, der + len). Null: malformed (certificateError says why). */
export function parseCertificate(der: usize, len: usize): Certificate | null {
  certificateError = "";
  const end = der + len;
  if (!expectTlv(der, end, TAG_SEQUENCE) || tlvEnd != end) return fail("malformed Certificate");
  const certEnd = tlvEnd;
  if (!expectTlv(tlvStart, certEnd, TAG_SEQUENCE)) return fail("malformed TBSCertificate");
  const tbsEnd = tlvEnd;
  const afterTbs = tlvEnd;
  let at = tlvStart;
  if (!readTlv(at, tbsEnd)) return fail("malformed TBSCertificate");
  if (tlvTag == 0xa0) {
    // [0] EXPLICIT Version INTEGER: v1..v3.
    const versionEnd = tlvEnd;
    if (!expectTlv(tlvStart, versionEnd, TAG_INTEGER) || tlvEnd != versionEnd || tlvEnd - tlvStart != 1 || load<u8>(tlvStart) > 2) {
      return fail("malformed version");
    }
    at = versionEnd;
    if (!readTlv(at, tbsEnd)) return fail("malformed TBSCertificate");
  }
  if (tlvTag != TAG_INTEGER) return fail("malformed serial number");
  at = tlvEnd;
  if (!expectTlv(at, tbsEnd, TAG_SEQUENCE)) return fail("malformed signature algorithm");
  at = tlvEnd;
  if (!expectTlv(at, tbsEnd, TAG_SEQUENCE)) return fail("malformed issuer");
  at = tlvEnd;
  if (!readName(tlvStart, tlvEnd, null)) return null;
  if (!expectTlv(at, tbsEnd, TAG_SEQUENCE)) return fail("malformed validity");
  const validityEnd = tlvEnd;
  at = validityEnd;
  const cert = new Certificate();
  if (!readTlv(tlvStart, validityEnd) || !readTime(tlvTag, tlvStart, tlvEnd)) return fail("malformed notBefore");
  cert.notBefore = parsedTime;
  if (!readTlv(tlvEnd, validityEnd) || tlvEnd != validityEnd || !readTime(tlvTag, tlvStart, tlvEnd)) return fail("malformed notAfter");
  cert.notAfter = parsedTime;
  if (!expectTlv(at, tbsEnd, TAG_SEQUENCE)) return fail("malformed subject");
  at = tlvEnd;
  if (!readName(tlvStart, tlvEnd, cert)) return null;
  if (!expectTlv(at, tbsEnd, TAG_SEQUENCE)) return fail("malformed subject public key info");
  at = tlvEnd;
  // [1] issuerUniqueID, [2] subjectUniqueID (IMPLICIT BIT STRING, primitive), [3] extensions.
  let lastTag: i32 = 0;
  while (at < tbsEnd) {
    if (!readTlv(at, tbsEnd)) return fail("malformed TBSCertificate");
    const tag = tlvTag;
    if (tag != 0x81 && tag != 0x82 && tag != 0xa3) return fail("unexpected field in TBSCertificate");
    if ((tag & 0x1f) <= (lastTag & 0x1f)) return fail("misordered TBSCertificate fields");
    lastTag = tag;
    at = tlvEnd;
    if (tag == 0xa3) {
      const extWrapperEnd = tlvEnd;
      if (!expectTlv(tlvStart, extWrapperEnd, TAG_SEQUENCE) || tlvEnd != extWrapperEnd) return fail("malformed extensions");
      if (!readExtensions(tlvStart, tlvEnd, cert)) return null;
    }
  }
  if (!expectTlv(afterTbs, certEnd, TAG_SEQUENCE)) return fail("malformed signature algorithm");
  if (!expectTlv(tlvEnd, certEnd, TAG_BIT_STRING) || tlvEnd != certEnd) return fail("malformed signature");
  return cert;
}

function fail(reason: string): Certificate | null {
  certificateError = reason;
  return null;
}
