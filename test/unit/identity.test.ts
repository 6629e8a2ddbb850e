// Client certificate -> identity, as kube-apiserver's x509 authenticator
// would see it: user = CN, groups = every O. Anything unreadable fails closed.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, describe, test } from 'node:test';

import { identityFromXfcc, parseXfcc, subjectAttributes, type IdentityResult } from '../../src/identity/identity.js';
import { testCa, testLeaf, xfccFor, type LeafOptions, type TestCert } from '../support/clientCerts.js';

let ca: TestCert;

before(async () => {
  ca = await testCa('client-ca');
});

async function identityOf(opts: LeafOptions): Promise<IdentityResult> {
  const leaf = await testLeaf(ca, { usages: ['client'], ...opts });
  return identityFromXfcc(xfccFor(leaf.certPem));
}

describe('identity from the client certificate', () => {
  test('the CN is the user and every O is a group, in certificate order', async () => {
    const result = await identityOf({ name: [{ O: ['system:masters'] }, { O: ['team-a'] }, { CN: ['alice'] }] });
    assert.deepEqual(result, { kind: 'identity', identity: { user: 'alice', groups: ['system:masters', 'team-a'] } });
  });

  test('a subject without O gives a user without groups', async () => {
    assert.deepEqual(await identityOf({ name: [{ CN: ['bob'] }] }), { kind: 'identity', identity: { user: 'bob', groups: [] } });
  });

  test('escaped commas, plus signs, equals signs and quotes in DN values come through verbatim', async () => {
    const result = await identityOf({ name: 'O=team\\, a\\+b=c,O=\\"quoted\\",CN=x\\,y\\+z' });
    assert.deepEqual(result, { kind: 'identity', identity: { user: 'x,y+z', groups: ['team, a+b=c', '"quoted"'] } });
  });

  test('a multi-valued RDN contributes each of its values', async () => {
    const result = await identityOf({ name: [{ O: ['g1'] }, { CN: ['carol'], O: ['g2'] }] });
    assert.equal(result.kind, 'identity');
    assert.ok(result.kind === 'identity');
    assert.equal(result.identity.user, 'carol');
    assert.deepEqual([...result.identity.groups].sort(), ['g1', 'g2']);
  });

  test('with several CNs the last one is the user, as Go reads a subject', async () => {
    assert.deepEqual(await identityOf({ name: [{ CN: ['first'] }, { CN: ['last'] }] }), {
      kind: 'identity',
      identity: { user: 'last', groups: [] },
    });
  });

  test('non-ASCII UTF-8 names are kept', async () => {
    assert.deepEqual(await identityOf({ name: [{ O: ['équipe'] }, { CN: ['zoë'] }] }), {
      kind: 'identity',
      identity: { user: 'zoë', groups: ['équipe'] },
    });
  });

  test('PrintableString, IA5String and BMPString values are decoded', async () => {
    const result = await identityOf({
      name: [{ O: [{ printableString: 'printable' }] }, { O: [{ bmpString: 'bmp' }] }, { CN: [{ ia5String: 'ia5' }] }],
    });
    assert.deepEqual(result, { kind: 'identity', identity: { user: 'ia5', groups: ['printable', 'bmp'] } });
  });

  test('the subject is read from the DER even where Node\'s subject text is ambiguous', async () => {
    const leaf = await testLeaf(ca, { name: [{ O: ['a\nCN=evil'] }, { CN: ['dave'] }], usages: ['client'] });
    const attributes = subjectAttributes(new X509Certificate(leaf.certPem).raw);
    assert.deepEqual(attributes, [
      { oid: '2.5.4.10', value: 'a\nCN=evil' },
      { oid: '2.5.4.3', value: 'dave' },
    ]);
  });

  test('a user or group with control characters is rejected, never split or truncated', async () => {
    const result = await identityOf({ name: [{ O: ['a\nCN=evil'] }, { CN: ['dave'] }] });
    assert.equal(result.kind, 'rejected');
  });

  test('a user or group with surrounding whitespace is rejected (HTTP would trim it)', async () => {
    assert.equal((await identityOf({ name: [{ O: [' system:masters'] }, { CN: ['eve'] }] })).kind, 'rejected');
  });

  test('a certificate without a CN asserts no identity, as the apiserver would not authenticate it', async () => {
    assert.deepEqual(await identityOf({ name: [{ O: ['system:masters'] }] }), { kind: 'anonymous' });
  });

  test('a certificate whose extended key usage excludes client authentication is rejected', async () => {
    assert.equal((await identityOf({ name: [{ CN: ['server'] }], usages: ['server'] })).kind, 'rejected');
  });

  test('a certificate without an extended key usage extension may authenticate clients', async () => {
    assert.equal((await identityOf({ name: [{ CN: ['legacy'] }], usages: [] })).kind, 'identity');
  });

  test('no x-forwarded-client-cert means no identity', () => {
    assert.deepEqual(identityFromXfcc(undefined), { kind: 'none' });
  });

  test('a garbage x-forwarded-client-cert is rejected', () => {
    for (const garbage of ['', 'garbage', 'Cert="unterminated', 'Cert=', 'Hash=abc', 'Cert="%E0%A4%A"']) {
      assert.equal(identityFromXfcc(garbage).kind, 'rejected', JSON.stringify(garbage));
    }
  });

  test('a Cert that is not a certificate is rejected', () => {
    assert.equal(identityFromXfcc(`Cert="${encodeURIComponent('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')}"`).kind, 'rejected');
  });

  test('an XFCC with several elements is rejected: SANITIZE_SET writes exactly one', async () => {
    const leaf = await testLeaf(ca, { name: [{ CN: ['alice'] }], usages: ['client'] });
    assert.equal(identityFromXfcc(`${xfccFor(leaf.certPem)},${xfccFor(leaf.certPem)}`).kind, 'rejected');
  });

  test('a certificate that does not match its Hash is rejected', async () => {
    const leaf = await testLeaf(ca, { name: [{ CN: ['alice'] }], usages: ['client'] });
    const other = await testLeaf(ca, { name: [{ CN: ['mallory'] }], usages: ['client'] });
    const forged = xfccFor(leaf.certPem).replace(/^Hash=[0-9a-f]+/, xfccFor(other.certPem).split(';')[0] ?? '');
    assert.equal(identityFromXfcc(forged).kind, 'rejected');
  });
});

describe('parseXfcc', () => {
  test('quoted values keep separators and unescape quotes', () => {
    assert.deepEqual(parseXfcc('By=spiffe://x;Hash=ab;Subject="O=a\\"b,CN=c;d"'), [
      new Map([
        ['by', 'spiffe://x'],
        ['hash', 'ab'],
        ['subject', 'O=a"b,CN=c;d'],
      ]),
    ]);
  });

  test('elements are separated by commas outside quotes', () => {
    assert.equal(parseXfcc('Hash=a;Cert="x,y",Hash=b').length, 2);
  });
});
