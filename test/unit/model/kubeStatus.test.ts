// metav1.Status bodies: src/model/status.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { serviceUnavailableJson, statusMessageSuffix } from '../../../src/model/status.js';

describe('statusMessageSuffix', () => {
  test("a Status body's message, after a colon", () => {
    assert.equal(statusMessageSuffix('{"kind":"Status","message":"forbidden: no"}'), ': forbidden: no');
    assert.equal(statusMessageSuffix(serviceUnavailableJson('draining')), ': the server is currently unable to handle the request: draining');
  });

  test('at most 200 characters of it', () => {
    assert.equal(statusMessageSuffix(JSON.stringify({ message: 'x'.repeat(300) })), `: ${'x'.repeat(200)}`);
  });

  test('nothing for a body that is not JSON, not an object, or has no string message', () => {
    for (const body of ['', 'oops', '[]', '"message"', 'null', '{"message":42}', '{"reason":"NotFound"}']) assert.equal(statusMessageSuffix(body), '', body);
  });
});
