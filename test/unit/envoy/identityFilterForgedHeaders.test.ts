// The identity filter: identity headers a client sends are never believed.
// helpers: test/support/identityFilterHarness.ts (the filter in a proxy-wasm host shim), derBuilder.ts (hand-built certificates).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { credentialId } from '../../support/clientCerts.js';
import { BASE, CREDENTIAL_ID, leaf, newHost, outcome, values, withCert } from '../../support/identityFilterHarness.js';
import type { HeaderList } from '../../support/proxyWasmHost.js';

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
