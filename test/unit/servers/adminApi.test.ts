// The admin gRPC service against a real grpc-js client over a Unix socket, with
// a fake control plane: status, drains, pushed config, the mapping of backend
// errors to gRPC, and robustness (Explain: adminApiExplain.test.ts; server
// reflection: adminApiReflection.test.ts).
import type { SidecarConfig__Output } from '../../../src/generated/mvproxy/admin/v1/SidecarConfig.js';
import { TYPE_URL } from '../../../src/xds/snapshot.js';
import { KubeApiError } from '../../../src/model/status.js';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { sendGarbage } from '../../support/garbage.js';
import { UnknownApiserverError, type AdminStatus } from '../../../src/servers/admin.js';
import { assertFails, deadline, fakeBackend, harness, STATUS, unary } from '../../support/adminApiHarness.js';

describe('admin API', () => {
  it('GetStatus answers with the status the backend gives', async (t) => {
    const h = await harness(t, fakeBackend());
    const status = await unary<AdminStatus>((cb) => h.client.GetStatus({}, deadline(), cb));
    assert.deepEqual(status, STATUS);
  });

  it('Drain passes the apiserver to the backend and answers with every apiserver being drained', async (t) => {
    const backend = fakeBackend({ drain: async () => ['a', 'b'] });
    const h = await harness(t, backend);
    const answer = await unary((cb) => h.client.Drain({ apiserver: 'b' }, deadline(), cb));
    assert.deepEqual(answer, { draining: ['a', 'b'] });
    assert.deepEqual(backend.calls, [{ method: 'drain', args: ['b'] }]);
  });

  it('Undrain passes the apiserver to the backend and answers with the apiservers still drained', async (t) => {
    const backend = fakeBackend({ undrain: async () => ['c'] });
    const h = await harness(t, backend);
    const answer = await unary((cb) => h.client.Undrain({ apiserver: 'b' }, deadline(), cb));
    assert.deepEqual(answer, { draining: ['c'] });
    assert.deepEqual(backend.calls, [{ method: 'undrain', args: ['b'] }]);
  });

  for (const method of ['Drain', 'Undrain'] as const) {
    it(`${method} without an apiserver fails with INVALID_ARGUMENT without asking the backend`, async (t) => {
      const backend = fakeBackend();
      const h = await harness(t, backend);
      await assertFails(
        unary((cb) => h.client[method]({ apiserver: '' }, deadline(), cb)),
        grpc.status.INVALID_ARGUMENT,
        'apiserver: required',
      );
      assert.deepEqual(backend.calls, []);
    });
  }

  it('a drain the Kubernetes API refuses to record fails with UNAVAILABLE and the API error', async (t) => {
    const h = await harness(
      t,
      fakeBackend({
        drain: async () => {
          throw new KubeApiError(403, 'PATCH /api/v1/namespaces/kube-system/configmaps/mvproxy-drains: HTTP 403: forbidden');
        },
      }),
    );
    await assertFails(
      unary((cb) => h.client.Drain({ apiserver: 'a' }, deadline(), cb)),
      grpc.status.UNAVAILABLE,
      /the drain record could not be written: PATCH .*HTTP 403: forbidden/,
    );
  });

  it('an unknown apiserver fails with NOT_FOUND and the backend error message', async (t) => {
    const error = new UnknownApiserverError('x', ['a', 'b']);
    const h = await harness(
      t,
      fakeBackend({
        drain: () => {
          throw error;
        },
      }),
    );
    await assertFails(
      unary((cb) => h.client.Drain({ apiserver: 'x' }, deadline(), cb)),
      grpc.status.NOT_FOUND,
      error.message,
    );
    assert.equal(error.message, 'no apiserver named "x" (declared: a, b)');
  });

  it('GetConfig passes the sidecar and the one type asked for to the backend, and answers with its config', async (t) => {
    const config = { sidecar: 'a', types: [{ type_url: TYPE_URL.route, version: 'v1', version_acked: 'v1', resources_json: ['{"name":"r"}'] }] };
    const backend = fakeBackend({ pushedConfig: () => config });
    const h = await harness(t, backend);
    const answer = await unary<SidecarConfig__Output>((cb) => h.client.GetConfig({ sidecar: 'a', type_url: TYPE_URL.route }, deadline(), cb));
    assert.deepEqual(answer, config);
    assert.deepEqual(backend.calls, [{ method: 'pushedConfig', args: ['a', TYPE_URL.route] }]);
  });

  it('GetConfig with no type asks the backend for every type', async (t) => {
    const backend = fakeBackend();
    const h = await harness(t, backend);
    await unary((cb) => h.client.GetConfig({ sidecar: 'a' }, deadline(), cb));
    assert.deepEqual(backend.calls, [{ method: 'pushedConfig', args: ['a', undefined] }]);
  });

  it('GetConfig refuses an unknown type URL and a missing sidecar with INVALID_ARGUMENT, before the backend', async (t) => {
    const backend = fakeBackend();
    const h = await harness(t, backend);
    await assertFails(
      unary((cb) => h.client.GetConfig({ sidecar: 'a', type_url: 'type.googleapis.com/nope' }, deadline(), cb)),
      grpc.status.INVALID_ARGUMENT,
      /^type_url: one of /,
    );
    await assertFails(
      unary((cb) => h.client.GetConfig({}, deadline(), cb)),
      grpc.status.INVALID_ARGUMENT,
      'sidecar: required',
    );
    assert.deepEqual(backend.calls, []);
  });

  it('any other backend error fails with INTERNAL, and the server answers the next call', async (t) => {
    let failures = 1;
    const status = (): AdminStatus => {
      if (failures-- > 0) throw new Error('boom');
      return STATUS;
    };
    const h = await harness(t, fakeBackend({ status }));
    await assertFails(
      unary((cb) => h.client.GetStatus({}, deadline(), cb)),
      grpc.status.INTERNAL,
      'internal error: boom',
    );
    assert.deepEqual(await unary((cb) => h.client.GetStatus({}, deadline(), cb)), STATUS);
  });

  it('garbage bytes on its socket do not stop the server', async (t) => {
    const h = await harness(t, fakeBackend());
    await sendGarbage(h.path);
    assert.deepEqual(await unary((cb) => h.client.GetStatus({}, deadline(), cb)), STATUS);
  });
});
