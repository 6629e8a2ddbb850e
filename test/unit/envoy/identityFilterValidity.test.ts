// The identity filter: a certificate authenticates only within its validity period, read as Go reads it.
// helpers: test/support/identityFilterHarness.ts (the filter in a proxy-wasm host shim), derBuilder.ts (hand-built certificates).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { derCert, generalizedTime, tlv, utcTime } from '../../support/derBuilder.js';
import { leaf, newHost, outcome, outcomeOfDer, withCert } from '../../support/identityFilterHarness.js';

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
