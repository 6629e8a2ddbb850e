// The identity table (test/support/identityCases.ts) against the compiled
// filter in Node, through the proxy-wasm host shim: the same cases a real
// Envoy runs in test/e2e/identity-envoy.test.ts. Where Envoy refuses a
// certificate at the handshake already, the filter must refuse it too.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IDENTITY_CASES } from '../../support/identityCases.js';
import { outcomeOf } from '../../support/identityFilterHarness.js';

describe('the identity table, in Node', () => {
  for (const identityCase of IDENTITY_CASES) {
    test(identityCase.name, async () => {
      assert.deepEqual(await outcomeOf(identityCase.leaf), identityCase.expected);
    });
  }
});
