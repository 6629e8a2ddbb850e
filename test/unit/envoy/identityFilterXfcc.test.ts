// The identity filter: reading the x-forwarded-client-cert header Envoy writes; anything else is refused.
// helpers: test/support/identityFilterHarness.ts (the filter in a proxy-wasm host shim), derBuilder.ts (hand-built certificates).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';

import { certificateDer, formatXfcc } from '../../support/clientCerts.js';
import { derCert } from '../../support/derBuilder.js';
import { leaf, newHost, outcome, outcomeOfDer, values, withCert, withXfcc, xfccOfDer } from '../../support/identityFilterHarness.js';
import type { HeaderList } from '../../support/proxyWasmHost.js';

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
