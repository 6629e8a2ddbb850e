// The subject of an X.509 certificate, read from its DER encoding.
//
// Node's X509Certificate.subject is a newline-separated `K=V` text whose
// escaping is OpenSSL's display format: a value may itself contain a newline
// or an `=`, so it cannot be split back into attributes reliably. The DER is
// unambiguous: Certificate -> TBSCertificate -> subject Name, a SEQUENCE OF
// RelativeDistinguishedName (SET OF AttributeTypeAndValue {OID, string}).
//
// Values are decoded the way Go's crypto/x509 does (what kube-apiserver's
// x509 authenticator sees): the string types Go accepts, and an error for
// any other type or for invalid content, because Go then refuses the whole
// certificate.

/** One attribute of the subject, in certificate order (multi-valued RDNs flattened in order). */
export interface NameAttribute {
  /** Dotted OID, e.g. 2.5.4.3 for CN. */
  oid: string;
  value: string;
}

export const OID_COMMON_NAME = '2.5.4.3';
export const OID_ORGANIZATION = '2.5.4.10';

export class X509NameError extends Error {}

interface Tlv {
  tag: number;
  /** Content octets. */
  start: number;
  end: number;
}

const TAG_SEQUENCE = 0x30;
const TAG_SET = 0x31;
const TAG_OID = 0x06;
const TAG_INTEGER = 0x02;
const TAG_VERSION = 0xa0; // [0] EXPLICIT

function readTlv(der: Uint8Array, offset: number, limit: number): Tlv {
  if (offset + 2 > limit) throw new X509NameError('truncated DER');
  const tag = der[offset] ?? 0;
  if ((tag & 0x1f) === 0x1f) throw new X509NameError('multi-byte DER tags are not used in certificate names');
  let length = der[offset + 1] ?? 0;
  let start = offset + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0 || octets > 4) throw new X509NameError('unsupported DER length');
    length = 0;
    for (let i = 0; i < octets; i++) {
      if (start >= limit) throw new X509NameError('truncated DER length');
      length = length * 256 + (der[start] ?? 0);
      start++;
    }
  }
  const end = start + length;
  if (end > limit) throw new X509NameError('DER element overruns its container');
  return { tag, start, end };
}

function expect(der: Uint8Array, offset: number, limit: number, tag: number, what: string): Tlv {
  const tlv = readTlv(der, offset, limit);
  if (tlv.tag !== tag) throw new X509NameError(`expected ${what} (tag 0x${tag.toString(16)}), found tag 0x${tlv.tag.toString(16)}`);
  return tlv;
}

function decodeOid(der: Uint8Array, start: number, end: number): string {
  if (start >= end) throw new X509NameError('empty OID');
  const arcs: number[] = [];
  let value = 0;
  for (let i = start; i < end; i++) {
    const byte = der[i] ?? 0;
    value = value * 128 + (byte & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER / 128) throw new X509NameError('OID arc too large');
    if ((byte & 0x80) === 0) {
      arcs.push(value);
      value = 0;
    } else if (i === end - 1) {
      throw new X509NameError('truncated OID');
    }
  }
  const first = arcs[0] ?? 0;
  const head = first < 40 ? [0, first] : first < 80 ? [1, first - 40] : [2, first - 80];
  return [...head, ...arcs.slice(1)].join('.');
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The string types Go's parseASN1String accepts, decoded as Go does. */
function decodeString(tag: number, bytes: Uint8Array): string {
  switch (tag) {
    case 0x0c: // UTF8String
      try {
        return utf8.decode(bytes);
      } catch {
        throw new X509NameError('invalid UTF8String');
      }
    case 0x13: // PrintableString
      for (const b of bytes) {
        // Go also tolerates '*' and '&' here (seen in the wild).
        if (!/[A-Za-z0-9 '()+,\-./:=?*&]/.test(String.fromCharCode(b))) throw new X509NameError('invalid PrintableString');
      }
      return Buffer.from(bytes).toString('latin1');
    case 0x16: // IA5String
      for (const b of bytes) if (b > 0x7f) throw new X509NameError('invalid IA5String');
      return Buffer.from(bytes).toString('latin1');
    case 0x12: // NumericString
      for (const b of bytes) if (!(b === 0x20 || (b >= 0x30 && b <= 0x39))) throw new X509NameError('invalid NumericString');
      return Buffer.from(bytes).toString('latin1');
    case 0x14: // T61String: Go reads it as ISO 8859-1
      return Buffer.from(bytes).toString('latin1');
    case 0x1e: {
      // BMPString: UTF-16BE, an optional trailing NUL removed (as Go does).
      if (bytes.length % 2 !== 0) throw new X509NameError('invalid BMPString');
      let units = bytes;
      if (units.length >= 2 && units[units.length - 1] === 0 && units[units.length - 2] === 0) units = units.subarray(0, units.length - 2);
      const swapped = Buffer.from(units);
      swapped.swap16();
      return swapped.toString('utf16le');
    }
    default:
      throw new X509NameError(`unsupported string type 0x${tag.toString(16)} in the subject`);
  }
}

/** The subject attributes of a DER certificate, in order. Throws X509NameError on malformed input. */
export function subjectAttributes(certificateDer: Uint8Array): NameAttribute[] {
  const der = certificateDer;
  const certificate = expect(der, 0, der.length, TAG_SEQUENCE, 'Certificate');
  const tbs = expect(der, certificate.start, certificate.end, TAG_SEQUENCE, 'TBSCertificate');
  let at = tbs.start;
  let field = readTlv(der, at, tbs.end);
  if (field.tag === TAG_VERSION) {
    at = field.end;
    field = readTlv(der, at, tbs.end);
  }
  if (field.tag !== TAG_INTEGER) throw new X509NameError('expected the serial number');
  at = field.end;
  at = expect(der, at, tbs.end, TAG_SEQUENCE, 'signature algorithm').end;
  at = expect(der, at, tbs.end, TAG_SEQUENCE, 'issuer').end;
  at = expect(der, at, tbs.end, TAG_SEQUENCE, 'validity').end;
  const subject = expect(der, at, tbs.end, TAG_SEQUENCE, 'subject');

  const attributes: NameAttribute[] = [];
  for (let rdnAt = subject.start; rdnAt < subject.end; ) {
    const rdn = expect(der, rdnAt, subject.end, TAG_SET, 'RelativeDistinguishedName');
    for (let atvAt = rdn.start; atvAt < rdn.end; ) {
      const atv = expect(der, atvAt, rdn.end, TAG_SEQUENCE, 'AttributeTypeAndValue');
      const oid = expect(der, atv.start, atv.end, TAG_OID, 'attribute type');
      const value = readTlv(der, oid.end, atv.end);
      if (value.end !== atv.end) throw new X509NameError('trailing data in AttributeTypeAndValue');
      attributes.push({ oid: decodeOid(der, oid.start, oid.end), value: decodeString(value.tag, der.subarray(value.start, value.end)) });
      atvAt = atv.end;
    }
    rdnAt = rdn.end;
  }
  return attributes;
}
