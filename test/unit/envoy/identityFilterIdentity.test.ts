// The identity filter: what kube-apiserver's x509 authenticator would derive from a verified client certificate
// (user, groups, UID, credential-id), as front-proxy request headers. One behaviour per test.
// helpers: test/support/identityFilterHarness.ts (the filter in a proxy-wasm host shim), derBuilder.ts (hand-built certificates).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';

import { certificateDer, credentialId } from '../../support/clientCerts.js';
import { CN, O, UID, derCert, eku, name } from '../../support/derBuilder.js';
import { BEARER, CREDENTIAL_ID, leaf, newHost, outcome, outcomeOf, outcomeOfDer, values, withCert } from '../../support/identityFilterHarness.js';

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
