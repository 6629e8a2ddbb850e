// The identity filter: how a refused certificate is answered (401), logged, and when a bearer token lets the request go on.
// helpers: test/support/identityFilterHarness.ts (the filter in a proxy-wasm host shim), derBuilder.ts (hand-built certificates).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { UNAUTHORIZED_STATUS } from '../../support/apiserverStatus.js';
import { credentialId } from '../../support/clientCerts.js';
import { BEARER, leaf, newHost, outcome, values, withCert, withXfcc } from '../../support/identityFilterHarness.js';

const UNAUTHORIZED_BODY = '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}';

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
    assert.deepEqual(JSON.parse(UNAUTHORIZED_BODY), UNAUTHORIZED_STATUS, "kube-apiserver's own 401");
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
