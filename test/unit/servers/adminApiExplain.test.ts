// The admin API's Explain: what it passes to the control plane, how it maps
// the explanation to the Explanation message, and which requests and
// backend errors it refuses, with which gRPC code.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { NotPlannedYetError, UnknownApiserverError } from '../../../src/servers/admin.js';
import type { RequestExplanation } from '../../../src/planner/explain.js';
import type { Explanation__Output } from '../../../src/generated/mvproxy/admin/v1/Explanation.js';
import { assertFails, deadline, fakeBackend, harness, unary } from '../../support/adminApiHarness.js';

describe('admin API Explain', () => {
  it('Explain passes sidecar, path and peer_proxied to the backend', async (t) => {
    const backend = fakeBackend();
    const h = await harness(t, backend);
    await unary((cb) => h.client.Explain({ sidecar: 'a', path: '/api/v1/pods?watch=1', peer_proxied: true }, deadline(), cb));
    assert.deepEqual(backend.calls, [{ method: 'explain', args: ['a', '/api/v1/pods?watch=1', true] }]);
  });

  it('Explain maps a local destination and the classified request to the Explanation message', async (t) => {
    const h = await harness(t, fakeBackend());
    const answer = await unary<Explanation__Output>((cb) => h.client.Explain({ sidecar: 'a', path: '/api/v1/namespaces/default/pods' }, deadline(), cb));
    assert.deepEqual(answer, {
      destination: 'local',
      apiservers: [],
      rule: 'served-locally',
      reason: 'because (rule served-locally)',
      request: { resource_request: true, group: '', version: 'v1', resource: 'pods', subresource: '', namespace: 'default', name: '', error: '' },
    });
  });

  it('Explain lists the peers of a rerouted request as its apiservers', async (t) => {
    const explanation: RequestExplanation = {
      destination: { kind: 'peers', peers: ['b', 'c'] },
      rule: 'reroute-to-peers',
      reason: 'peers (rules reroute-to-peers, retry-connect-only)',
      request: {
        isResourceRequest: true,
        path: '/apis/batch/v1/namespaces/ns/jobs/j/status',
        apiPrefix: 'apis',
        group: 'batch',
        version: 'v1',
        namespace: 'ns',
        resource: 'jobs',
        name: 'j',
        subresource: 'status',
      },
    };
    const h = await harness(t, fakeBackend({ explain: () => explanation }));
    const answer = await unary<Explanation__Output>((cb) =>
      h.client.Explain({ sidecar: 'a', path: '/apis/batch/v1/namespaces/ns/jobs/j/status' }, deadline(), cb),
    );
    assert.deepEqual(answer, {
      destination: 'peers',
      apiservers: ['b', 'c'],
      rule: 'reroute-to-peers',
      reason: 'peers (rules reroute-to-peers, retry-connect-only)',
      request: { resource_request: true, group: 'batch', version: 'v1', resource: 'jobs', subresource: 'status', namespace: 'ns', name: 'j', error: '' },
    });
  });

  it('Explain lists who serves an unavailable request as its apiservers', async (t) => {
    const explanation: RequestExplanation = {
      destination: { kind: 'unavailable', servedBy: ['c', 'd'] },
      rule: 'unavailable-503',
      reason: '503 (rule unavailable-503)',
      request: { isResourceRequest: true, path: '/apis/apps/v1/deployments', apiPrefix: 'apis', group: 'apps', version: 'v1', resource: 'deployments' },
    };
    const h = await harness(t, fakeBackend({ explain: () => explanation }));
    const answer = await unary<Explanation__Output>((cb) => h.client.Explain({ sidecar: 'a', path: '/apis/apps/v1/deployments' }, deadline(), cb));
    assert.equal(answer.destination, 'unavailable');
    assert.deepEqual(answer.apiservers, ['c', 'd']);
    assert.equal(answer.reason, '503 (rule unavailable-503)');
    assert.equal(answer.rule, 'unavailable-503');
  });

  it('Explain carries the classification error of a path that could not be classified', async (t) => {
    const explanation: RequestExplanation = {
      destination: { kind: 'local' },
      rule: 'not-a-resource',
      reason: 'unclassified',
      request: { isResourceRequest: false, path: '/api/v1/watch', group: '', version: '', error: 'unable to determine kind' },
    };
    const h = await harness(t, fakeBackend({ explain: () => explanation }));
    const answer = await unary<Explanation__Output>((cb) => h.client.Explain({ sidecar: 'a', path: '/api/v1/watch' }, deadline(), cb));
    assert.deepEqual(answer.request, {
      resource_request: false,
      group: '',
      version: '',
      resource: '',
      subresource: '',
      namespace: '',
      name: '',
      error: 'unable to determine kind',
    });
  });

  const invalidExplains: { label: string; request: { sidecar?: string; path?: string }; details: RegExp }[] = [
    { label: 'an empty sidecar', request: { sidecar: '', path: '/api/v1/pods' }, details: /^sidecar: required/ },
    { label: 'a missing path', request: { sidecar: 'a' }, details: /^path: must start with "\/"/ },
    { label: 'a path not starting with "/"', request: { sidecar: 'a', path: 'api/v1/pods' }, details: /^path: must start with "\/"/ },
    { label: 'a path with a space', request: { sidecar: 'a', path: '/api/v1/pods HTTP/1.1' }, details: /^path: contains whitespace or control characters/ },
    {
      label: 'a path with a control character',
      request: { sidecar: 'a', path: '/api/v1/pods\u0001' },
      details: /^path: contains whitespace or control characters/,
    },
    {
      label: 'a path with a line feed',
      request: { sidecar: 'a', path: '/api/v1/pods\r\nHost: x' },
      details: /^path: contains whitespace or control characters/,
    },
    { label: 'a path with DEL', request: { sidecar: 'a', path: '/api/v1/pods\u007f' }, details: /^path: contains whitespace or control characters/ },
    { label: 'a path over 8192 characters', request: { sidecar: 'a', path: `/${'a'.repeat(8192)}` }, details: /^path: longer than 8192 characters/ },
  ];

  for (const { label, request, details } of invalidExplains) {
    it(`Explain with ${label} fails with INVALID_ARGUMENT without asking the backend`, async (t) => {
      const backend = fakeBackend();
      const h = await harness(t, backend);
      await assertFails(
        unary((cb) => h.client.Explain(request, deadline(), cb)),
        grpc.status.INVALID_ARGUMENT,
        details,
      );
      assert.deepEqual(backend.calls, []);
    });
  }

  it('Explain accepts a path of exactly 8192 characters', async (t) => {
    const backend = fakeBackend();
    const h = await harness(t, backend);
    const path = `/${'a'.repeat(8191)}`;
    await unary((cb) => h.client.Explain({ sidecar: 'a', path }, deadline(), cb));
    assert.deepEqual(backend.calls, [{ method: 'explain', args: ['a', path, false] }]);
  });

  it('an unknown sidecar in Explain fails with NOT_FOUND', async (t) => {
    const h = await harness(
      t,
      fakeBackend({
        explain: () => {
          throw new UnknownApiserverError('z', ['a']);
        },
      }),
    );
    await assertFails(
      unary((cb) => h.client.Explain({ sidecar: 'z', path: '/api' }, deadline(), cb)),
      grpc.status.NOT_FOUND,
      'no apiserver named "z" (declared: a)',
    );
  });

  it('Explain before the control plane has a plan fails with UNAVAILABLE, saying to retry', async (t) => {
    const h = await harness(
      t,
      fakeBackend({
        explain: () => {
          throw new NotPlannedYetError();
        },
      }),
    );
    await assertFails(
      unary((cb) => h.client.Explain({ sidecar: 'a', path: '/api' }, deadline(), cb)),
      grpc.status.UNAVAILABLE,
      'the control plane has no plan yet (it is still reading the cluster); retry shortly',
    );
  });
});
