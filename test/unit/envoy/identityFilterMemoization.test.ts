// The identity filter: a certificate seen before is not parsed again.
// helpers: test/support/identityFilterHarness.ts (the filter in a proxy-wasm host shim), derBuilder.ts (hand-built certificates).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { formatXfcc } from '../../support/clientCerts.js';
import { leaf, newHost, outcome, withCert, withXfcc } from '../../support/identityFilterHarness.js';

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
