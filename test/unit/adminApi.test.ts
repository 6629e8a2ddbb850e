// The admin gRPC service against a real grpc-js client over a Unix socket, with
// a fake control plane: input checks, the mapping of answers and errors to
// gRPC, robustness, and server reflection.
import type { SidecarConfig__Output } from '../../src/generated/mvproxy/admin/v1/SidecarConfig.js';
import { TYPE_URL } from '../../src/xds/snapshot.js';
import { KubeApiError } from '../../src/model/status.js';
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { sendGarbage } from '../support/garbage.js';
import * as protoLoader from '@grpc/proto-loader';
import pino from 'pino';
import { addAdminService, adminGrpc, NotPlannedYetError, UnknownApiserverError, type AdminBackend, type AdminStatus } from '../../src/servers/admin.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../../src/servers/grpcListen.js';
import type { RequestExplanation } from '../../src/planner/explain.js';
import type { AdminClient } from '../../src/generated/mvproxy/admin/v1/Admin.js';
import type { Explanation__Output } from '../../src/generated/mvproxy/admin/v1/Explanation.js';
import { PUSH_ORDER } from '../../src/xds/snapshot.js';

const STATUS: AdminStatus = {
  apiservers: [
    {
      name: 'a',
      hostname: 'host-a',
      address: '10.0.0.1:6443',
      standing: 'available',
      reachable: true,
      lease_holder_identity: 'a-1',
      served_resources: 2,
      group_versions: ['batch/v1', 'v1'],
      draining: true,
      ready: 'yes',
      version: 'v1.37.2',
    },
  ],
  sidecars: [
    {
      node: 'a',
      connected: true,
      in_sync: false,
      rerouted_routes: 3,
      unavailable_routes: 1,
      xds: PUSH_ORDER.map((url) => ({ type_url: url, version_desired: 'v2', version_sent: 'v2', version_acked: 'v1', last_nack: 'bad' })),
      replica: '',
      reported_at: '',
      envoys: 2,
      envoys_behind: ['edge-1'],
    },
  ],
};

const EXPLANATION: RequestExplanation = {
  destination: { kind: 'local' },
  rule: 'served-locally',
  reason: 'because (rule served-locally)',
  request: {
    isResourceRequest: true,
    path: '/api/v1/namespaces/default/pods',
    apiPrefix: 'api',
    group: '',
    version: 'v1',
    namespace: 'default',
    resource: 'pods',
  },
};

interface Call {
  method: keyof AdminBackend;
  args: unknown[];
}

/** A control plane that records its calls; each method can be replaced per test. */
function fakeBackend(overrides: Partial<AdminBackend> = {}): AdminBackend & { calls: Call[] } {
  const calls: Call[] = [];
  const impl: AdminBackend = {
    status: () => STATUS,
    explain: () => EXPLANATION,
    drain: async (name) => [name],
    undrain: async () => [],
    recentEvents: () => [],
    followEvents: () => () => {},
    pushedConfig: (sidecar) => ({ sidecar, types: [] }),
    ...overrides,
  };
  return {
    calls,
    status: () => {
      calls.push({ method: 'status', args: [] });
      return impl.status();
    },
    explain: (...args) => {
      calls.push({ method: 'explain', args });
      return impl.explain(...args);
    },
    drain: (...args) => {
      calls.push({ method: 'drain', args });
      return impl.drain(...args);
    },
    undrain: (...args) => {
      calls.push({ method: 'undrain', args });
      return impl.undrain(...args);
    },
    recentEvents: (...args) => impl.recentEvents(...args),
    followEvents: (...args) => impl.followEvents(...args),
    pushedConfig: (...args) => {
      calls.push({ method: 'pushedConfig', args });
      return impl.pushedConfig(...args);
    },
  };
}

interface Harness {
  client: AdminClient;
  address: string;
  path: string;
}

async function harness(t: TestContext, backend: AdminBackend): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-admin-'));
  const server = createGrpcServer();
  addAdminService(server, backend, pino({ level: 'silent' }));
  const path = join(dir, 'admin.sock');
  const address = await listenUnix(server, path);
  const Admin = adminGrpc().mvproxy.admin.v1.Admin;
  const client = new Admin(address, grpc.credentials.createInsecure());
  t.after(async () => {
    client.close();
    await shutdownGrpcServer(server, 100);
    rmSync(dir, { recursive: true, force: true });
  });
  return { client, address, path };
}

const deadline = (): grpc.CallOptions => ({ deadline: Date.now() + 5000 });

/** A unary call as a promise. */
function unary<T>(invoke: (callback: grpc.requestCallback<T>) => unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    invoke((err, value) => (err ? reject(err) : resolve(value as T)));
  });
}

/** Asserts the call fails with this code and details matching `details`. */
async function assertFails(promise: Promise<unknown>, code: grpc.status, details: RegExp | string): Promise<void> {
  await assert.rejects(promise, (err: grpc.ServiceError) => {
    assert.equal(err.code, code, `code ${grpc.status[err.code]} (${err.details})`);
    if (typeof details === 'string') assert.equal(err.details, details);
    else assert.match(err.details, details);
    return true;
  });
}

describe('admin API', () => {
  it('GetStatus answers with the status the backend gives', async (t) => {
    const h = await harness(t, fakeBackend());
    const status = await unary<AdminStatus>((cb) => h.client.GetStatus({}, deadline(), cb));
    assert.deepEqual(status, STATUS);
  });

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

// ---- server reflection, as grpcurl uses it ----

interface ReflectionResponse {
  list_services_response?: { service: { name: string }[] };
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  error_response?: { error_code: number; error_message: string };
}

/** The reflection service client of one API version, from the proto @grpc/reflection ships. */
function reflectionClient(version: 'v1' | 'v1alpha', address: string): grpc.Client {
  const protoRoot = join(dirname(createRequire(import.meta.url).resolve('@grpc/reflection')), '..', 'proto');
  const definition = protoLoader.loadSync(`grpc/reflection/${version}/reflection.proto`, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    includeDirs: [protoRoot],
  });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { grpc: { reflection: Record<string, { ServerReflection: typeof grpc.Client }> } };
  const Client = pkg.grpc.reflection[version]?.ServerReflection;
  assert.ok(Client, `grpc.reflection.${version}.ServerReflection in the shipped proto`);
  return new Client(address, grpc.credentials.createInsecure());
}

/** One request, one response on a ServerReflectionInfo stream. */
function reflect(client: grpc.Client, request: Record<string, string>): Promise<ReflectionResponse> {
  const stream = (
    client as unknown as { ServerReflectionInfo(options: grpc.CallOptions): grpc.ClientDuplexStream<unknown, ReflectionResponse> }
  ).ServerReflectionInfo(deadline());
  return new Promise<ReflectionResponse>((resolve, reject) => {
    stream.once('data', (response: ReflectionResponse) => {
      resolve(response);
      stream.end();
    });
    stream.on('error', reject);
    stream.write(request);
  });
}

describe('admin API reflection', () => {
  for (const version of ['v1', 'v1alpha'] as const) {
    it(`grpc.reflection.${version}.ServerReflection lists mvproxy.admin.v1.Admin`, async (t) => {
      const h = await harness(t, fakeBackend());
      const client = reflectionClient(version, h.address);
      t.after(() => client.close());
      const response = await reflect(client, { list_services: '' });
      assert.equal(response.error_response, undefined);
      const names = (response.list_services_response?.service ?? []).map((s) => s.name);
      assert.ok(names.includes('mvproxy.admin.v1.Admin'), `listed: ${names.join(', ')}`);
    });
  }

  it('reflection answers the file declaring mvproxy.admin.v1.Admin, so clients need no proto', async (t) => {
    const h = await harness(t, fakeBackend());
    const client = reflectionClient('v1', h.address);
    t.after(() => client.close());
    const response = await reflect(client, { file_containing_symbol: 'mvproxy.admin.v1.Admin' });
    assert.equal(response.error_response, undefined);
    const files = response.file_descriptor_response?.file_descriptor_proto ?? [];
    assert.ok(files.length > 0, 'at least one file descriptor');
    // A serialized FileDescriptorProto holds its package and service names as plain strings.
    const bytes = Buffer.concat(files.map((f) => Buffer.from(f))).toString('latin1');
    assert.ok(bytes.includes('mvproxy.admin.v1'), 'the package name');
    assert.ok(bytes.includes('Admin') && bytes.includes('GetStatus') && bytes.includes('Explain'), 'the service and its methods');
  });
});
