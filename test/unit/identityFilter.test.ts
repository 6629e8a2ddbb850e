// The certificate-identity filter (envoy/identity-filter, compiled to
// WebAssembly), run through a proxy-wasm host shim: what kube-apiserver's
// x509 authenticator would derive from the client certificate Envoy
// verified, as front-proxy request headers. One behaviour per test.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { before, describe, test } from 'node:test';

import { IDENTITY_FILTER_WASM_PATH, readIdentityFilterModule } from '../../src/xds/identityFilterModule.js';
import { certificateDer, credentialId, formatXfcc, testCa, testLeaf, type LeafOptions, type TestCert } from '../support/clientCerts.js';
import { ProxyWasmHost, type HeaderList, type HostOptions, type RequestResult } from '../support/proxyWasmHost.js';

const CREDENTIAL_ID = 'x-remote-extra-authentication.kubernetes.io%2fcredential-id';
const UNAUTHORIZED_BODY = '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}';
const BASE: HeaderList = [
  [':method', 'GET'],
  [':path', '/api/v1/pods'],
  [':authority', 'kas-a'],
];
/** A client that also sends a bearer token. */
const BEARER: HeaderList = [['authorization', 'Bearer token']];

let wasm: Buffer;
let ca: TestCert;

before(async () => {
  wasm = readIdentityFilterModule();
  ca = await testCa('client-ca');
});

function newHost(opts: HostOptions = {}): ProxyWasmHost {
  return ProxyWasmHost.load(wasm, opts);
}

async function leaf(opts: Partial<LeafOptions> & Pick<LeafOptions, 'name'>): Promise<TestCert> {
  return testLeaf(ca, { usages: ['client'], ...opts });
}

/** Headers of a request Envoy forwards with this certificate (and extra client headers). */
function withCert(certPem: string, extra: HeaderList = []): HeaderList {
  return [...BASE, ...extra, ['x-forwarded-client-cert', formatXfcc(certPem)]];
}

function withXfcc(xfcc: string, extra: HeaderList = []): HeaderList {
  return [...BASE, ...extra, ['x-forwarded-client-cert', xfcc]];
}

function values(result: RequestResult, name: string): string[] {
  return result.headers.filter(([k]) => k.toLowerCase() === name).map(([, v]) => v);
}

type Outcome = { kind: 'rejected' } | { kind: 'none' } | { kind: 'identity'; user: string; groups: string[]; uid?: string };

/** What the apiserver would receive: an identity, none, or a 401 from the filter. */
function outcome(result: RequestResult): Outcome {
  if (result.localResponse !== undefined) {
    assert.equal(result.action, 'pause', 'a rejected request stops');
    return { kind: 'rejected' };
  }
  assert.equal(result.action, 'continue');
  assert.deepEqual(values(result, 'x-forwarded-client-cert'), [], 'x-forwarded-client-cert never reaches the apiserver');
  const identityHeaders = result.headers.filter(([k]) => k.toLowerCase().startsWith('x-remote-'));
  const user = values(result, 'x-remote-user');
  if (user.length === 0) {
    assert.deepEqual(identityHeaders, [], 'no identity headers without a user');
    return { kind: 'none' };
  }
  assert.equal(user.length, 1);
  const uid = values(result, 'x-remote-uid');
  assert.ok(uid.length <= 1);
  for (const [k] of identityHeaders) assert.ok(['x-remote-user', 'x-remote-group', 'x-remote-uid', CREDENTIAL_ID].includes(k), k);
  const out: Outcome = { kind: 'identity', user: user[0] as string, groups: values(result, 'x-remote-group') };
  if (uid.length === 1) out.uid = uid[0] as string;
  return out;
}

async function outcomeOf(opts: Partial<LeafOptions> & Pick<LeafOptions, 'name'>): Promise<Outcome> {
  const cert = await leaf(opts);
  return outcome(newHost().request(withCert(cert.certPem)));
}

// ---- Hand-built DER, for encodings @peculiar/x509 does not write. The
// filter never checks signatures (Envoy did), so any bytes sign. ----

function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Array<Buffer | string>): Buffer {
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

const CN = '2.5.4.3';
const O = '2.5.4.10';
const UID = '1.3.6.1.4.1.57683.2';

/** An attribute: [oid, tag, raw value bytes]. */
type Attr = [string, number, Buffer | string];

function name(...rdns: Attr[][]): Buffer {
  return tlv(0x30, ...rdns.map((rdn) => tlv(0x31, ...rdn.map(([type, tag, value]) => tlv(0x30, oid(type), tlv(tag, value))))));
}

interface DerOptions {
  subject?: Buffer;
  issuer?: Buffer;
  notBefore?: Buffer;
  notAfter?: Buffer;
  extensions?: Buffer[];
  trailing?: Buffer;
}

function utcTime(text: string): Buffer {
  return tlv(0x17, text);
}

function generalizedTime(text: string): Buffer {
  return tlv(0x18, text);
}

const EC_SPKI = tlv(0x30, tlv(0x30, oid('1.2.840.10045.2.1'), oid('1.2.840.10045.3.1.7')), tlv(0x03, Buffer.alloc(66, 4)));
const SIG_ALG = tlv(0x30, oid('1.2.840.10045.4.3.2'));

function extension(id: string, value: Buffer, critical = false): Buffer {
  return tlv(0x30, oid(id), ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []), tlv(0x04, value));
}

function eku(...usages: string[]): Buffer {
  return extension('2.5.29.37', tlv(0x30, ...usages.map(oid)));
}

function derCert(opts: DerOptions = {}): Buffer {
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

function pemOf(der: Buffer): string {
  const b64 = der.toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

function xfccOfDer(der: Buffer): string {
  return `Hash=${createHash('sha256').update(der).digest('hex')};Cert="${encodeURIComponent(pemOf(der))}"`;
}

function outcomeOfDer(der: Buffer, host = newHost()): Outcome {
  return outcome(host.request(withXfcc(xfccOfDer(der))));
}

// ---------------------------------------------------------------------------

describe('identity from the client certificate', () => {
  test('the CN is the user and every O is a group, in certificate order', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ O: ['system:masters'] }, { O: ['team-a'] }, { CN: ['alice'] }] }), {
      kind: 'identity',
      user: 'alice',
      groups: ['system:masters', 'team-a'],
    });
  });

  test('a subject without O gives a user without groups', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ CN: ['bob'] }] }), { kind: 'identity', user: 'bob', groups: [] });
  });

  test('several O values keep their certificate order, duplicates included', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ O: ['z'] }, { O: ['a'] }, { CN: ['u'] }, { O: ['m'] }, { O: ['a'] }] }), {
      kind: 'identity',
      user: 'u',
      groups: ['z', 'a', 'm', 'a'],
    });
  });

  test('escaped commas, plus signs, equals signs and quotes in DN values come through verbatim', async () => {
    assert.deepEqual(await outcomeOf({ name: 'O=team\\, a\\+b=c,O=\\"quoted\\",CN=x\\,y\\+z' }), {
      kind: 'identity',
      user: 'x,y+z',
      groups: ['team, a+b=c', '"quoted"'],
    });
  });

  test('a multi-valued RDN contributes each of its values', async () => {
    const result = await outcomeOf({ name: [{ O: ['g1'] }, { CN: ['carol'], O: ['g2'] }] });
    assert.ok(result.kind === 'identity');
    assert.equal(result.user, 'carol');
    assert.deepEqual([...result.groups].sort(), ['g1', 'g2']);
  });

  test('a multi-valued RDN is flattened in its encoded order', () => {
    const der = derCert({
      subject: name([
        [O, 0x0c, 'first'],
        [CN, 0x0c, 'carol'],
        [O, 0x0c, 'second'],
      ]),
    });
    assert.deepEqual(outcomeOfDer(der), { kind: 'identity', user: 'carol', groups: ['first', 'second'] });
  });

  test('with several CNs the last one is the user, as Go reads a subject', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ CN: ['first'] }, { CN: ['last'] }] }), { kind: 'identity', user: 'last', groups: [] });
  });

  test('non-ASCII UTF-8 names are kept', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ O: ['équipe'] }, { O: ['チーム'] }, { CN: ['zoë 🙂'] }] }), {
      kind: 'identity',
      user: 'zoë 🙂',
      groups: ['équipe', 'チーム'],
    });
  });

  test('PrintableString, IA5String and BMPString values are decoded', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ O: [{ printableString: 'printable' }] }, { O: [{ bmpString: 'bmp é€' }] }, { CN: [{ ia5String: 'ia5' }] }] }), {
      kind: 'identity',
      user: 'ia5',
      groups: ['printable', 'bmp é€'],
    });
  });

  test('T61String is read as ISO 8859-1 and NumericString as digits, as Go does', () => {
    const der = derCert({ subject: name([[O, 0x14, Buffer.from([0x63, 0x61, 0x66, 0xe9])]], [[O, 0x12, '123 45']], [[CN, 0x14, 'dave']]) });
    assert.deepEqual(outcomeOfDer(der), { kind: 'identity', user: 'dave', groups: ['café', '123 45'] });
  });

  test('a BMPString loses one trailing NUL pair, as Go does', () => {
    const der = derCert({ subject: name([[CN, 0x1e, Buffer.from([0, 0x62, 0, 0x6f, 0, 0x62, 0, 0])]]) });
    assert.deepEqual(outcomeOfDer(der), { kind: 'identity', user: 'bob', groups: [] });
  });

  test('PrintableString tolerates * and & as Go does, and refuses other characters', () => {
    assert.deepEqual(outcomeOfDer(derCert({ subject: name([[CN, 0x13, 'a*b&c']]) })), { kind: 'identity', user: 'a*b&c', groups: [] });
    assert.deepEqual(outcomeOfDer(derCert({ subject: name([[CN, 0x13, 'a_b']]) })), { kind: 'rejected' });
  });

  test('a string type Go does not read (UniversalString, OCTET STRING) in the subject is rejected', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ O: [{ universalString: 'u' }] }, { CN: ['erin'] }] }), { kind: 'rejected' });
    assert.deepEqual(outcomeOfDer(derCert({ subject: name([[O, 0x04, 'x']], [[CN, 0x0c, 'erin']]) })), { kind: 'rejected' });
  });

  test('an unreadable string type in the issuer is rejected: Go refuses the whole certificate', () => {
    assert.deepEqual(outcomeOfDer(derCert({ issuer: name([[CN, 0x1c, Buffer.from([0, 0, 0, 0x61])]]) })), { kind: 'rejected' });
  });

  test('invalid UTF-8, invalid IA5String and odd-length or surrogate BMPString are rejected', () => {
    for (const [tag, bytes] of [
      [0x0c, Buffer.from([0x61, 0xc3])], // truncated
      [0x0c, Buffer.from([0xc0, 0x80])], // overlong
      [0x0c, Buffer.from([0xed, 0xa0, 0x80])], // surrogate
      [0x16, Buffer.from([0x61, 0xe9])],
      [0x1e, Buffer.from([0, 0x61, 0])],
      [0x1e, Buffer.from([0xd8, 0x00])],
      [0x12, Buffer.from('12a')],
    ] as const) {
      assert.deepEqual(outcomeOfDer(derCert({ subject: name([[CN, tag, bytes]]) })), { kind: 'rejected' }, `tag ${tag} ${bytes.toString('hex')}`);
    }
  });

  test('the subject is read from the DER, never from a printed form: a newline cannot inject a CN', async () => {
    // Printed, this subject reads "O=a\nCN=evil\nCN=dave"; its O contains a control character, so it is refused.
    assert.deepEqual(await outcomeOf({ name: [{ O: ['a\nCN=evil'] }, { CN: ['dave'] }] }), { kind: 'rejected' });
  });

  test('a user or group with control characters is rejected, never split or truncated', async () => {
    for (const bad of ['a\nb', 'a\rb', 'a\u0000b', 'a\u007fb', 'a\u001bb']) {
      assert.deepEqual(await outcomeOf({ name: [{ CN: [bad] }] }), { kind: 'rejected' }, JSON.stringify(bad));
      assert.deepEqual(await outcomeOf({ name: [{ O: [bad] }, { CN: ['x'] }] }), { kind: 'rejected' }, JSON.stringify(bad));
    }
  });

  test('a tab inside a name is carried (HTTP allows it)', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ CN: ['a\tb'] }] }), { kind: 'identity', user: 'a\tb', groups: [] });
  });

  test('a user or group with surrounding whitespace is rejected (HTTP would trim it)', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ O: [' system:masters'] }, { CN: ['eve'] }] }), { kind: 'rejected' });
    assert.deepEqual(await outcomeOf({ name: [{ CN: ['eve '] }] }), { kind: 'rejected' });
    assert.deepEqual(await outcomeOf({ name: [{ CN: ['\teve'] }] }), { kind: 'rejected' });
  });

  test('an empty O grants nothing and is skipped (the apiserver ignores empty header values)', () => {
    const der = derCert({ subject: name([[O, 0x0c, '']], [[O, 0x0c, 'real']], [[CN, 0x0c, 'frank']]) });
    assert.deepEqual(outcomeOfDer(der), { kind: 'identity', user: 'frank', groups: ['real'] });
  });

  test('a certificate without a CN asserts no identity and the request goes on unauthenticated', async () => {
    const cert = await leaf({ name: [{ O: ['system:masters'] }] });
    const result = newHost().request(withCert(cert.certPem, [['X-Remote-User', 'forged'], ...BEARER]));
    assert.deepEqual(outcome(result), { kind: 'none' });
    assert.deepEqual(values(result, 'authorization'), ['Bearer token']);
  });

  test('an empty last CN means no user, even after a non-empty one (Go keeps the last CN)', () => {
    assert.deepEqual(outcomeOfDer(derCert({ subject: name([[CN, 0x0c, 'first']], [[CN, 0x0c, '']]) })), { kind: 'none' });
  });

  test('a certificate whose extended key usage excludes client authentication is rejected', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ CN: ['server'] }], usages: ['server'] }), { kind: 'rejected' });
  });

  test('extended key usage with client authentication, or anyExtendedKeyUsage, may authenticate clients', async () => {
    assert.equal((await outcomeOf({ name: [{ CN: ['both'] }], usages: ['server', 'client'] })).kind, 'identity');
    assert.equal(outcomeOfDer(derCert({ extensions: [eku('1.3.6.1.5.5.7.3.1', '2.5.29.37.0')] })).kind, 'identity');
  });

  test('a certificate without an extended key usage extension may authenticate clients', async () => {
    assert.equal((await outcomeOf({ name: [{ CN: ['legacy'] }], usages: [] })).kind, 'identity');
  });

  test('a certificate with a duplicated extension is rejected, as Go refuses to parse it', () => {
    assert.deepEqual(outcomeOfDer(derCert({ extensions: [eku('1.3.6.1.5.5.7.3.2'), eku('1.3.6.1.5.5.7.3.2')] })), { kind: 'rejected' });
  });

  test('the credential-id extra is X509SHA256 of the DER, as upstream records it', async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const result = newHost().request(withCert(cert.certPem));
    const expected = `X509SHA256=${createHash('sha256').update(certificateDer(cert.certPem)).digest('hex')}`;
    assert.deepEqual(values(result, CREDENTIAL_ID), [expected]);
    assert.equal(credentialId(cert.certPem), expected);
  });

  test('a certificate without a CN sets no credential-id either', async () => {
    const cert = await leaf({ name: [{ O: ['x'] }] });
    assert.deepEqual(values(newHost().request(withCert(cert.certPem)), CREDENTIAL_ID), []);
  });
});

describe('UID', () => {
  test('the UID attribute becomes X-Remote-Uid', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ CN: ['carol'] }], uid: ['c-123'] }), { kind: 'identity', user: 'carol', groups: [], uid: 'c-123' });
  });

  test('without a UID attribute no X-Remote-Uid is set', async () => {
    const cert = await leaf({ name: [{ CN: ['carol'] }] });
    assert.deepEqual(values(newHost().request(withCert(cert.certPem)), 'x-remote-uid'), []);
  });

  test('two UID attributes are rejected, as upstream parseUIDFromCert does', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ CN: ['dave'] }], uid: ['1', '2'] }), { kind: 'rejected' });
  });

  test('two UID attributes in one multi-valued RDN are rejected too', () => {
    assert.deepEqual(
      outcomeOfDer(
        derCert({
          subject: name(
            [[CN, 0x0c, 'dave']],
            [
              [UID, 0x0c, '1'],
              [UID, 0x0c, '2'],
            ],
          ),
        }),
      ),
      { kind: 'rejected' },
    );
  });

  test('an empty UID is rejected', () => {
    assert.deepEqual(outcomeOfDer(derCert({ subject: name([[CN, 0x0c, 'dave']], [[UID, 0x0c, '']]) })), { kind: 'rejected' });
  });

  test('a UID with control characters or surrounding whitespace is rejected', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ CN: ['dave'] }], uid: ['a\nb'] }), { kind: 'rejected' });
    assert.deepEqual(await outcomeOf({ name: [{ CN: ['dave'] }], uid: [' a'] }), { kind: 'rejected' });
  });

  test('a UID without a CN asserts nothing (upstream reads no further)', async () => {
    assert.deepEqual(await outcomeOf({ name: [{ O: ['g'] }], uid: ['1', '2'] }), { kind: 'none' });
  });
});

describe('a refused certificate with a bearer token', () => {
  // kube-apiserver's x509 authenticator failing is not fatal there: the token authenticator runs next.
  test('expired: the request goes on without identity, for the apiserver to authenticate the token', async () => {
    const cert = await leaf({ name: [{ CN: ['old'] }], notBefore: new Date(Date.now() - 86_400_000), notAfter: new Date(Date.now() - 60_000) });
    const result = newHost().request(withCert(cert.certPem, [['X-Remote-User', 'forged'], ...BEARER]));
    assert.deepEqual(outcome(result), { kind: 'none' });
    assert.deepEqual(values(result, 'authorization'), ['Bearer token']);
  });

  test('two UIDs: the request goes on without identity', async () => {
    const cert = await leaf({ name: [{ CN: ['dave'] }], uid: ['1', '2'] });
    assert.deepEqual(outcome(newHost().request(withCert(cert.certPem, BEARER))), { kind: 'none' });
  });

  test('a name HTTP cannot carry is refused with 401 all the same: the apiserver would have authenticated the certificate, not the token', async () => {
    const cert = await leaf({ name: [{ O: ['a\nCN=evil'] }, { CN: ['eve'] }] });
    assert.deepEqual(outcome(newHost().request(withCert(cert.certPem, BEARER))), { kind: 'rejected' });
  });
});

describe('validity period', () => {
  const SECOND = 1_000_000_000n;
  const at =
    (date: Date): (() => bigint) =>
    () =>
      BigInt(date.getTime()) * 1_000_000n;

  test('an expired certificate is rejected', async () => {
    const cert = await leaf({ name: [{ CN: ['old'] }], notBefore: new Date(Date.now() - 86_400_000), notAfter: new Date(Date.now() - 60_000) });
    assert.deepEqual(outcome(newHost().request(withCert(cert.certPem))), { kind: 'rejected' });
  });

  test('a certificate not valid yet is rejected', async () => {
    const cert = await leaf({ name: [{ CN: ['early'] }], notBefore: new Date(Date.now() + 60_000), notAfter: new Date(Date.now() + 86_400_000) });
    assert.deepEqual(outcome(newHost().request(withCert(cert.certPem))), { kind: 'rejected' });
  });

  test('a certificate that expires between two requests of one connection stops authenticating', async () => {
    const notAfter = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
    const cert = await leaf({ name: [{ CN: ['brief'] }], notBefore: new Date(Date.now() - 60_000), notAfter });
    let now = BigInt(notAfter.getTime()) * 1_000_000n - 2n * SECOND;
    const host = newHost({ now: () => now });
    assert.equal(outcome(host.request(withCert(cert.certPem))).kind, 'identity');
    now += 2n * SECOND; // exactly notAfter: still valid (Go: now.After(notAfter) fails)
    assert.equal(outcome(host.request(withCert(cert.certPem))).kind, 'identity');
    now += 1n; // one nanosecond later
    assert.deepEqual(outcome(host.request(withCert(cert.certPem))), { kind: 'rejected' });
  });

  test('a certificate becomes valid at notBefore exactly', async () => {
    const notBefore = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
    const cert = await leaf({ name: [{ CN: ['soon'] }], notBefore, notAfter: new Date(notBefore.getTime() + 86_400_000) });
    let now = BigInt(notBefore.getTime()) * 1_000_000n - 1n;
    const host = newHost({ now: () => now });
    assert.deepEqual(outcome(host.request(withCert(cert.certPem))), { kind: 'rejected' });
    now += 1n;
    assert.equal(outcome(host.request(withCert(cert.certPem))).kind, 'identity');
  });

  test('an expired certificate without a CN is rejected too (the apiserver fails its verification)', async () => {
    const cert = await leaf({ name: [{ O: ['x'] }], notBefore: new Date(Date.now() - 86_400_000), notAfter: new Date(Date.now() - 60_000) });
    assert.deepEqual(outcome(newHost().request(withCert(cert.certPem))), { kind: 'rejected' });
  });

  test('UTCTime years 50-99 are 19xx and 00-49 are 20xx', () => {
    const host = newHost({ now: at(new Date('2049-06-01T00:00:00Z')) });
    assert.equal(outcomeOfDer(derCert({ notBefore: utcTime('500101000000Z'), notAfter: utcTime('491231235959Z') }), host).kind, 'identity');
    const later = newHost({ now: at(new Date('2050-01-01T00:00:00Z')) });
    assert.deepEqual(outcomeOfDer(derCert({ notBefore: utcTime('500101000000Z'), notAfter: utcTime('491231235959Z') }), later), { kind: 'rejected' });
  });

  test('GeneralizedTime, UTCTime without seconds and numeric zone offsets are read as Go reads them', () => {
    const host = newHost({ now: at(new Date('2030-06-15T12:00:00Z')) });
    // notAfter 2030-06-15 13:30 +0200 = 11:30Z: expired at 12:00Z.
    assert.deepEqual(outcomeOfDer(derCert({ notAfter: generalizedTime('20300615133000+0200') }), host), { kind: 'rejected' });
    // notAfter 2030-06-15 07:30 -0500 = 12:30Z: still valid.
    assert.equal(outcomeOfDer(derCert({ notAfter: generalizedTime('20300615073000-0500') }), host).kind, 'identity');
    // UTCTime minute precision: 2030-06-15 12:01Z.
    assert.equal(outcomeOfDer(derCert({ notAfter: utcTime('3006151201Z') }), host).kind, 'identity');
    // A leap day.
    assert.equal(outcomeOfDer(derCert({ notBefore: generalizedTime('20280229000000Z') }), host).kind, 'identity');
  });

  test('malformed times are rejected', () => {
    for (const bad of [
      generalizedTime('20300230000000Z'), // 30 February
      generalizedTime('20301301000000Z'),
      generalizedTime('20300101240000Z'),
      generalizedTime('20300101000000'), // no zone
      generalizedTime('20300101000000.5Z'), // fraction
      generalizedTime('20300101000000+0000'), // Go re-serializes +0000 as Z
      utcTime('30010100000Z'),
      tlv(0x04, '20300101000000Z'),
    ]) {
      assert.deepEqual(outcomeOfDer(derCert({ notAfter: bad })), { kind: 'rejected' }, bad.toString('latin1'));
    }
  });
});

describe('forged identity headers', () => {
  const FORGED: HeaderList = [
    ['X-Remote-User', 'system:admin'],
    ['x-remote-user', 'root'],
    ['X-REMOTE-GROUP', 'system:masters'],
    ['x-remote-group', 'system:masters'],
    ['X-Remote-Uid', '0'],
    ['X-Remote-Extra-Scopes', 'all'],
    ['x-remote-extra-authentication.kubernetes.io%2fcredential-id', 'X509SHA256=00'],
    ['X-Remote-Anything', 'x'],
  ];

  test('are removed, in every spelling, from a request without certificate', () => {
    const result = newHost().request([...BASE, ...FORGED]);
    assert.equal(result.action, 'continue');
    assert.deepEqual(result.headers, BASE);
  });

  test('are removed and replaced by the certificate identity', async () => {
    const cert = await leaf({ name: [{ O: ['team-a'] }, { CN: ['alice'] }] });
    const result = newHost().request(withCert(cert.certPem, FORGED));
    assert.deepEqual(outcome(result), { kind: 'identity', user: 'alice', groups: ['team-a'] });
    assert.deepEqual(values(result, CREDENTIAL_ID), [credentialId(cert.certPem)]);
    assert.deepEqual(values(result, 'x-remote-extra-scopes'), []);
  });

  test('are removed when the certificate asserts no identity', async () => {
    const cert = await leaf({ name: [{ O: ['team-a'] }] });
    const result = newHost().request(withCert(cert.certPem, FORGED));
    assert.deepEqual(outcome(result), { kind: 'none' });
  });

  test('other headers are left alone, in order', async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const extra: HeaderList = [
      ['x-remotely', 'keep'],
      ['x-forwarded-for', '10.0.0.1'],
      ['remote-user', 'keep'],
    ];
    const result = newHost().request(withCert(cert.certPem, extra));
    assert.deepEqual(result.headers.slice(0, BASE.length + extra.length), [...BASE, ...extra]);
  });

  test('nothing else changes for a request without certificate', () => {
    const result = newHost().request(BASE);
    assert.deepEqual(result, { action: 'continue', headers: BASE });
  });
});

describe('x-forwarded-client-cert', () => {
  test('a garbage x-forwarded-client-cert is rejected', () => {
    const host = newHost();
    const goodHash = 'ab'.repeat(32);
    for (const garbage of [
      '',
      'garbage',
      'Cert="unterminated',
      'Cert=',
      'Hash=abc',
      'Cert="%E0%A4%A"',
      `Hash=${goodHash}`,
      `Hash=${goodHash};Cert=`,
      `Hash=${goodHash};Cert=""`,
      `Hash=${goodHash};Cert="%ZZ"`,
      `Hash=${goodHash};Cert="x";`,
      `Hash=${'g'.repeat(64)};Cert="x"`,
      `Hash=${goodHash};Hash=${goodHash};Cert="x"`,
      `Hash="${goodHash}";Cert="x" `,
      `Hash=${goodHash};Cert="x"junk`,
      `Hash=${goodHash};Cert=a"b`,
      `=x;Hash=${goodHash};Cert="x"`,
    ]) {
      const result = host.request(withXfcc(garbage));
      assert.deepEqual(outcome(result), { kind: 'rejected' }, JSON.stringify(garbage));
      assert.deepEqual(values(result, 'x-forwarded-client-cert'), []);
    }
  });

  test('a Cert that is not a PEM certificate is rejected', () => {
    for (const pem of [
      '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
      '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
      '-----BEGIN CERTIFICATE-----\nAA=A\n-----END CERTIFICATE-----\n',
      '-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n',
      'junk-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
    ]) {
      const bytes = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
      const xfcc = `Hash=${createHash('sha256').update(bytes).digest('hex')};Cert="${encodeURIComponent(pem)}"`;
      assert.deepEqual(outcome(newHost().request(withXfcc(xfcc))), { kind: 'rejected' }, pem);
    }
  });

  test('a certificate with trailing bytes after its DER is rejected', () => {
    assert.deepEqual(outcomeOfDer(derCert({ trailing: Buffer.from([0]) })), { kind: 'rejected' });
  });

  test('an XFCC with several elements is rejected: SANITIZE_SET writes exactly one', async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    assert.deepEqual(outcome(newHost().request(withXfcc(`${formatXfcc(cert.certPem)},${formatXfcc(cert.certPem)}`))), { kind: 'rejected' });
  });

  test('two x-forwarded-client-cert headers are rejected', async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const headers: HeaderList = [...withCert(cert.certPem), ['x-forwarded-client-cert', formatXfcc(cert.certPem)]];
    assert.deepEqual(outcome(newHost().request(headers)), { kind: 'rejected' });
  });

  test('a certificate that does not match its Hash is rejected', async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const other = await leaf({ name: [{ CN: ['mallory'] }] });
    const forged = formatXfcc(cert.certPem).replace(/^Hash=[0-9a-f]+/, formatXfcc(other.certPem).split(';')[0] ?? '');
    assert.deepEqual(outcome(newHost().request(withXfcc(forged))), { kind: 'rejected' });
  });

  test('a mismatched Hash is not memoized: the real certificate with that digest still authenticates', async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const other = await leaf({ name: [{ CN: ['mallory'] }] });
    const host = newHost();
    const forged = formatXfcc(other.certPem).replace(/^Hash=[0-9a-f]+/, formatXfcc(cert.certPem).split(';')[0] ?? '');
    assert.deepEqual(outcome(host.request(withXfcc(forged))), { kind: 'rejected' });
    assert.deepEqual(outcome(host.request(withCert(cert.certPem))), { kind: 'identity', user: 'alice', groups: [] });
  });

  test('other keys (By, Subject, URI, DNS), quoted values with separators and escapes, and an uppercase Hash are accepted', async () => {
    const cert = await leaf({ name: [{ O: ['g'] }, { CN: ['alice'] }] });
    const [hash, certPart] = formatXfcc(cert.certPem).split(';') as [string, string];
    const xfcc = `By=spiffe://cluster/sidecar;${hash.toUpperCase().replace('HASH', 'Hash')};${certPart};Subject="O=a\\"b,CN=c;d";URI=;DNS=a.example;DNS=b.example`;
    assert.deepEqual(outcome(newHost().request(withXfcc(xfcc))), { kind: 'identity', user: 'alice', groups: ['g'] });
  });

  test('the Cert value may use quoted-string escapes', async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const xfcc = formatXfcc(cert.certPem).replace('Cert="-', 'Cert="\\-');
    assert.deepEqual(outcome(newHost().request(withXfcc(xfcc))), { kind: 'identity', user: 'alice', groups: [] });
  });

  test('corrupted certificates never crash the filter: every mutation is either read or rejected', async () => {
    const cert = await leaf({ name: [{ O: ['g'] }, { CN: ['alice'] }], uid: ['u'], usages: ['client', 'server'] });
    const der = certificateDer(cert.certPem);
    const host = newHost();
    let seed = 12345;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const kinds = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const mutated = Buffer.from(der);
      const edits = 1 + random(3);
      for (let e = 0; e < edits; e++) mutated[random(mutated.length)] = random(256);
      const cut = random(10) === 0 ? mutated.subarray(0, random(mutated.length)) : mutated;
      kinds.add(outcome(host.request(withXfcc(xfccOfDer(cut)))).kind);
    }
    assert.ok(kinds.has('rejected') && kinds.has('identity'), [...kinds].join());
  });
  test('corrupted XFCC values never crash the filter: every mutation is either read or rejected', async () => {
    const cert = await leaf({ name: [{ O: ['g'] }, { CN: ['alice'] }] });
    const good = formatXfcc(cert.certPem);
    const alphabet = ['"', '\\', ',', ';', '=', '%', '%2', '%ZZ', '%00', 'A', '-', ' ', '\n', 'Hash=', 'Cert="', '\u00e9'];
    const host = newHost();
    let seed = 99;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const kinds = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      let x = good;
      const edits = 1 + random(3);
      for (let e = 0; e < edits; e++) {
        const at = random(x.length);
        const op = random(3);
        if (op === 0) x = x.slice(0, at) + (alphabet[random(alphabet.length)] ?? '') + x.slice(at);
        else if (op === 1) x = x.slice(0, at) + x.slice(at + 1 + random(8));
        else x = x.slice(0, at);
      }
      kinds.add(outcome(host.request(withXfcc(x))).kind);
    }
    // A mutation of the Cert part keeps the (cached) Hash, so some are still read.
    assert.ok(kinds.has('rejected'), [...kinds].join());
  });
});

describe('rejection', () => {
  test('answers 401 with a metav1.Status JSON body and stops the request', async () => {
    const cert = await leaf({ name: [{ CN: ['server'] }], usages: ['server'] });
    const result = newHost().request(withCert(cert.certPem));
    assert.equal(result.action, 'pause');
    assert.deepEqual(result.localResponse, {
      status: 401,
      details: 'mvproxy_client_certificate_rejected',
      body: UNAUTHORIZED_BODY,
      headers: [['content-type', 'application/json']],
      grpcStatus: -1,
    });
    assert.deepEqual(JSON.parse(UNAUTHORIZED_BODY), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    });
  });

  test('logs the reason at warn once per distinct certificate, never the PEM', async () => {
    const cert = await leaf({ name: [{ CN: ['dave'] }], uid: ['1', '2'] });
    const other = await leaf({ name: [{ CN: ['erin'] }], usages: ['server'] });
    const host = newHost();
    for (let i = 0; i < 5; i++) {
      host.request(withCert(cert.certPem));
      host.request(withCert(other.certPem));
    }
    const warnings = host.warnings();
    assert.equal(warnings.length, 2, warnings.join('\n'));
    assert.match(warnings[0] ?? '', new RegExp(`${credentialId(cert.certPem)}.*UID`));
    assert.match(warnings[1] ?? '', /extended key usage/);
    const body = cert.certPem.split('\n')[1] ?? '';
    for (const w of warnings) assert.ok(!w.includes(body.slice(0, 20)) && !w.includes('BEGIN'), w);
  });

  test('logs an expiry once per certificate', async () => {
    const cert = await leaf({ name: [{ CN: ['old'] }], notBefore: new Date(Date.now() - 86_400_000), notAfter: new Date(Date.now() - 60_000) });
    const host = newHost();
    for (let i = 0; i < 5; i++) host.request(withCert(cert.certPem));
    assert.equal(host.warnings().length, 1);
    assert.match(host.warnings()[0] ?? '', /expired/);
  });

  test('unreadable XFCC values are logged sparingly (powers of two), never flooding', () => {
    const host = newHost();
    for (let i = 0; i < 100; i++) host.request(withXfcc('garbage'));
    assert.equal(host.warnings().length, 7); // 1, 2, 4, ..., 64
  });
});

describe('memoization', () => {
  test('a repeated certificate is not parsed again: the Hash is the key', async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const host = newHost();
    assert.equal(outcome(host.request(withCert(cert.certPem))).kind, 'identity');
    // Same Hash, unreadable Cert: Envoy never writes this; it shows the hit does not look at Cert.
    const hash = formatXfcc(cert.certPem).split(';')[0] ?? '';
    assert.deepEqual(outcome(host.request(withXfcc(`${hash};Cert="x"`))), { kind: 'identity', user: 'alice', groups: [] });
  });

  test('a cache hit costs a handful of host calls', async () => {
    const cert = await leaf({ name: [{ O: ['a'] }, { O: ['b'] }, { CN: ['alice'] }] });
    const host = newHost();
    host.request(withCert(cert.certPem));
    host.hostCalls.clear();
    host.request(withCert(cert.certPem));
    assert.deepEqual(Object.fromEntries(host.hostCalls), {
      proxy_get_header_map_pairs: 1,
      proxy_remove_header_map_value: 1,
      proxy_get_current_time_nanoseconds: 1,
      proxy_replace_header_map_value: 2,
      proxy_add_header_map_value: 2,
    });
  });
});

describe('plugin configuration', () => {
  test('empty configuration and {} mean the defaults', async () => {
    const cert = await leaf({ name: [{ O: ['g'] }, { CN: ['alice'] }] });
    for (const configuration of ['', '{}', ' { } ']) {
      const host = newHost({ configuration });
      assert.equal(host.configured, true, configuration);
      assert.deepEqual(outcome(host.request(withCert(cert.certPem))), { kind: 'identity', user: 'alice', groups: ['g'] });
    }
  });

  test('custom header names are honoured, and also stripped from client requests', async () => {
    const cert = await leaf({ name: [{ O: ['g1'] }, { O: ['g2'] }, { CN: ['alice'] }], uid: ['u-1'] });
    const host = newHost({
      configuration: '{"userHeader":"X-Auth-User","uidHeader":"x-auth-uid","groupHeader":"X-Auth-Group","extraHeaderPrefix":"X-Auth-Extra-"}',
    });
    assert.equal(host.configured, true);
    const forged: HeaderList = [
      ['X-Auth-User', 'root'],
      ['x-auth-group', 'system:masters'],
      ['X-AUTH-UID', '0'],
      ['X-Auth-Extra-Scopes', 'all'],
      ['X-Remote-User', 'root'],
    ];
    const result = host.request(withCert(cert.certPem, forged));
    assert.deepEqual(result.headers.slice(BASE.length), [
      ['x-auth-user', 'alice'],
      ['x-auth-uid', 'u-1'],
      ['x-auth-group', 'g1'],
      ['x-auth-group', 'g2'],
      ['x-auth-extra-authentication.kubernetes.io%2fcredential-id', credentialId(cert.certPem)],
    ]);
    const bare = host.request([...BASE, ...forged]);
    assert.deepEqual(bare.headers, BASE);
  });

  test('a partial configuration keeps the defaults for the other keys', async () => {
    const cert = await leaf({ name: [{ O: ['g'] }, { CN: ['alice'] }] });
    const host = newHost({ configuration: '{"userHeader":"x-user"}' });
    const result = host.request(withCert(cert.certPem));
    assert.deepEqual(values(result, 'x-user'), ['alice']);
    assert.deepEqual(values(result, 'x-remote-group'), ['g']);
  });

  test('malformed configuration is refused (Envoy then rejects the filter configuration)', () => {
    for (const configuration of [
      'garbage',
      ' ',
      '[]',
      '{',
      '{"userHeader":"x-user"',
      '{"userHeader":"x-user",}',
      '{"userHeader":"x-user"} x',
      '{"unknown":"x"}',
      '{"userHeader":1}',
      '{"userHeader":null}',
      '{"userHeader":["x"]}',
      '{"userHeader":"x-a","userHeader":"x-b"}',
      '{"userHeader":""}',
      '{"userHeader":"x user"}',
      '{"userHeader":"x:user"}',
      '{"groupHeader":"x-gr\\u00e9"}',
      "{'userHeader':'x'}",
      '{"userHeader":"x\n"}',
    ]) {
      assert.equal(newHost({ configuration }).configured, false, JSON.stringify(configuration));
    }
  });

  test('a refused configuration is logged with its reason', () => {
    const host = newHost({ configuration: '{"userHeadr":"x"}' });
    assert.match(host.warnings().join('\n'), /unknown key userHeadr/);
  });

  test('garbage configurations never crash the filter', () => {
    const pieces = ['{', '}', '"', ':', ',', '\\', '\\u', '00', 'userHeader', 'x-a', ' ', '[', '1', 'null', '\u00e9', '\u0000'];
    const host = newHost();
    let seed = 5;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    let accepted = 0;
    for (let i = 0; i < 3000; i++) {
      let config = '';
      for (let n = random(12); n >= 0; n--) config += pieces[random(pieces.length)];
      if (host.configure(config)) accepted++;
    }
    assert.ok(accepted < 3000);
    assert.equal(host.configure('{}'), true);
    assert.equal(host.request(BASE).action, 'continue');
  });

  test('JSON escapes in values are decoded', () => {
    assert.equal(newHost({ configuration: '{"userHeader":"x-\\u0075ser"}' }).configured, true);
  });
});

describe('plugin and stream contexts', () => {
  test("each stream uses its own plugin context's configuration, with thousands of streams open at once", async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const host = newHost({ configuration: '{"userHeader":"x-user-a"}' });
    const rootA = host.pluginContextId;
    const rootB = host.addPluginContext('{"userHeader":"x-user-b"}');
    const headers = withCert(cert.certPem);
    let seed = 7;
    const shuffle = <T>(items: T[]): T[] => {
      for (let i = items.length - 1; i > 0; i--) {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        const j = seed % (i + 1);
        [items[i], items[j]] = [items[j] as T, items[i] as T];
      }
      return items;
    };
    for (let wave = 0; wave < 3; wave++) {
      const streams: Array<[number, string]> = [];
      for (let i = 0; i < 3000; i++) {
        const a = (i + wave) % 3 !== 0;
        streams.push([host.openStream(a ? rootA : rootB), a ? 'x-user-a' : 'x-user-b']);
      }
      for (const [id, header] of shuffle([...streams])) {
        assert.deepEqual(values(host.sendRequestHeaders(id, headers), header), ['alice'], `stream ${id}`);
      }
      // Close half in random order, check the others still resolve, then close the rest.
      const order = shuffle([...streams]);
      for (const [id] of order.slice(0, 1500)) host.closeStream(id);
      for (const [id, header] of order.slice(1500)) {
        assert.deepEqual(values(host.sendRequestHeaders(id, headers), header), ['alice'], `stream ${id} after deletions`);
        host.closeStream(id);
      }
    }
  });

  test('a refused configuration update leaves the running plugin context as it was', async () => {
    const cert = await leaf({ name: [{ CN: ['alice'] }] });
    const host = newHost({ configuration: '{"userHeader":"x-user"}' });
    const stream = host.openStream();
    host.addPluginContext('{"userHeader":1}');
    assert.equal(host.configured, false);
    assert.deepEqual(values(host.sendRequestHeaders(stream, withCert(cert.certPem)), 'x-user'), ['alice']);
    assert.deepEqual(values(host.request(withCert(cert.certPem)), 'x-user'), ['alice']);
  });
});

describe('module', () => {
  test('imports only proxy-wasm host functions and exports the ABI 0.2.1 entry points', () => {
    const mod = new WebAssembly.Module(Uint8Array.from(wasm));
    for (const imp of WebAssembly.Module.imports(mod)) {
      assert.equal(imp.module, 'env');
      assert.match(imp.name, /^proxy_/);
    }
    const exports = WebAssembly.Module.exports(mod).map((e) => e.name);
    for (const name of ['proxy_abi_version_0_2_1', 'proxy_on_memory_allocate', 'malloc', '_initialize', 'proxy_on_request_headers']) {
      assert.ok(exports.includes(name), name);
    }
  });

  test('IDENTITY_FILTER_WASM_PATH is the compiled module', () => {
    assert.match(IDENTITY_FILTER_WASM_PATH, /dist\/envoy\/identity-filter\.wasm$/);
  });

  test('memory stops growing: misses over many distinct certificates and cache hits, with eviction', async () => {
    const template = certificateDer((await leaf({ name: [{ O: ['system:authenticated'] }, { O: ['team'] }, { CN: ['user'] }], uid: ['uid-1'] })).certPem);
    // Distinct certificates without signing each: rewrite the serial number
    // (the filter never checks signatures; Envoy did).
    const serialAt = template.indexOf(Buffer.from([0x02, 0x10]), 4) + 2;
    let serial = 0;
    const distinct = (count: number): string[] => {
      const out: string[] = [];
      for (let i = 0; i < count; i++) {
        const der = Buffer.from(template);
        der.writeUInt32BE(0x40000000 + serial++, serialAt);
        out.push(xfccOfDer(der));
      }
      return out;
    };
    const host = newHost();
    const round = (): number => {
      // 20k requests over 2k distinct certificates, then 50k hits on one.
      const xfccs = distinct(2000);
      for (let r = 0; r < 10; r++) for (const x of xfccs) assert.equal(host.request(withXfcc(x)).action, 'continue');
      const hot = withXfcc(xfccs[0] as string);
      for (let i = 0; i < 50_000; i++) host.request(hot);
      return host.memoryBytes();
    };
    // Rounds 1-2 fill the cache (4096 entries); from round 3 every round evicts 2000.
    const sizes = [round(), round(), round(), round(), round()];
    assert.equal(sizes[4], sizes[2], `memory grew: ${sizes.join(', ')}`);
    // 4096 cached certificates at well under 1 KiB each, plus the collector's
    // garbage between collections and the scratch buffers: a few MiB.
    assert.ok((sizes[4] ?? 0) <= 8 * 1024 * 1024, `memory ${sizes.join(', ')}`);
  });

  test('memory stays bounded with certificates whose subjects are huge (the cache has a byte budget)', async () => {
    // A 16 KiB CN: 1500 of them would hold 24 MiB of names if only the entry count bounded the cache.
    const template = certificateDer((await leaf({ name: [{ O: ['g'] }, { CN: ['u'.repeat(16 * 1024)] }] })).certPem);
    const serialAt = template.indexOf(Buffer.from([0x02, 0x10]), 4) + 2;
    const host = newHost();
    const xfccs: string[] = [];
    for (let i = 0; i < 1500; i++) {
      const der = Buffer.from(template);
      der.writeUInt32BE(0x40000000 + i, serialAt);
      xfccs.push(xfccOfDer(der));
    }
    for (let r = 0; r < 2; r++) {
      for (const x of xfccs) assert.equal(values(host.request(withXfcc(x)), 'x-remote-user')[0]?.length, 16 * 1024);
    }
    assert.ok(host.memoryBytes() <= 16 * 1024 * 1024, `memory ${host.memoryBytes()}`);
  });
});
