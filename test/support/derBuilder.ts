// Hand-built certificate DER, for encodings @peculiar/x509 does not write
// (string types, times, duplicated extensions, trailing bytes). The identity
// filter never checks signatures (Envoy did), so any bytes sign.

function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function tlv(tag: number, ...content: Array<Buffer | string>): Buffer {
  const body = Buffer.concat(content.map((c) => (typeof c === 'string' ? Buffer.from(c, 'latin1') : c)));
  return Buffer.concat([Buffer.from([tag]), derLength(body.length), body]);
}

function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const out = [40 * (arcs[0] ?? 0) + (arcs[1] ?? 0)];
  for (const arc of arcs.slice(2)) {
    const groups: number[] = [];
    let v = arc;
    do {
      groups.unshift(v & 0x7f);
      v = Math.floor(v / 128);
    } while (v > 0);
    out.push(...groups.map((g, i) => (i < groups.length - 1 ? g | 0x80 : g)));
  }
  return tlv(0x06, Buffer.from(out));
}

export const CN = '2.5.4.3';
export const O = '2.5.4.10';
export const UID = '1.3.6.1.4.1.57683.2';

/** An attribute: [oid, tag, raw value bytes]. */
export type Attr = [string, number, Buffer | string];

/** A Name: one SET per RDN, in order. */
export function name(...rdns: Attr[][]): Buffer {
  return tlv(0x30, ...rdns.map((rdn) => tlv(0x31, ...rdn.map(([type, tag, value]) => tlv(0x30, oid(type), tlv(tag, value))))));
}

export interface DerOptions {
  subject?: Buffer;
  issuer?: Buffer;
  notBefore?: Buffer;
  notAfter?: Buffer;
  extensions?: Buffer[];
  trailing?: Buffer;
}

export function utcTime(text: string): Buffer {
  return tlv(0x17, text);
}

export function generalizedTime(text: string): Buffer {
  return tlv(0x18, text);
}

const EC_SPKI = tlv(0x30, tlv(0x30, oid('1.2.840.10045.2.1'), oid('1.2.840.10045.3.1.7')), tlv(0x03, Buffer.alloc(66, 4)));
const SIG_ALG = tlv(0x30, oid('1.2.840.10045.4.3.2'));

function extension(id: string, value: Buffer, critical = false): Buffer {
  return tlv(0x30, oid(id), ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []), tlv(0x04, value));
}

export function eku(...usages: string[]): Buffer {
  return extension('2.5.29.37', tlv(0x30, ...usages.map(oid)));
}

/** A certificate: by default issued by CN=client-ca to CN=alice, valid 2020-2099, without extensions. */
export function derCert(opts: DerOptions = {}): Buffer {
  const tbs = tlv(
    0x30,
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, Buffer.from([0x42, 0x01])),
    SIG_ALG,
    opts.issuer ?? name([[CN, 0x0c, 'client-ca']]),
    tlv(0x30, opts.notBefore ?? utcTime('200101000000Z'), opts.notAfter ?? generalizedTime('20990101000000Z')),
    opts.subject ?? name([[CN, 0x0c, 'alice']]),
    EC_SPKI,
    ...(opts.extensions !== undefined ? [tlv(0xa3, tlv(0x30, ...opts.extensions))] : []),
  );
  return Buffer.concat([tlv(0x30, tbs, SIG_ALG, tlv(0x03, Buffer.from([0, 1, 2, 3]))), opts.trailing ?? Buffer.alloc(0)]);
}

export function pemOf(der: Buffer): string {
  const b64 = der.toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
