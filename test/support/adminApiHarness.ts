// The admin gRPC service with a fake control plane behind it, served on a
// Unix socket to a real grpc-js client: what the admin API tests share.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { addAdminService, adminGrpc, type AdminBackend, type AdminStatus } from '../../src/servers/admin.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../../src/servers/grpcListen.js';
import type { RequestExplanation } from '../../src/planner/explain.js';
import type { AdminClient } from '../../src/generated/mvproxy/admin/v1/Admin.js';
import { PUSH_ORDER } from '../../src/xds/snapshot.js';

export const STATUS: AdminStatus = {
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
  kubernetes_service: {
    enabled: true,
    state: 'publishing',
    message: 'lists a through its sidecar',
    nodes: [{ apiserver: 'a', published: 'sidecar', sidecar_live: true, apiserver_ready: true, sidecar_seen_by: ['mvproxy-a', 'mvproxy-b'] }],
    other_addresses: ['10.0.0.9:6443'],
    foreign_writes: 1,
    confirmed_at: '2026-11-30T22:00:00.000Z',
    slices: [{ name: 'kubernetes', address_type: 'IPv4', addresses: ['10.0.0.1:6443'], written_by_mvproxy: true, managed_by: 'control-plane.mvproxy.dev' }],
    endpoints_mismatch: '',
    plan_digest: '0123456789ab',
    config_mismatches: [],
    lease_apiservers: [],
    ready: true,
  },
};

export const EXPLANATION: RequestExplanation = {
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

export interface Call {
  method: keyof AdminBackend;
  args: unknown[];
}

/** A control plane that records its calls; each method can be replaced per test. */
export function fakeBackend(overrides: Partial<AdminBackend> = {}): AdminBackend & { calls: Call[] } {
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

export interface Harness {
  client: AdminClient;
  address: string;
  path: string;
}

export async function harness(t: TestContext, backend: AdminBackend): Promise<Harness> {
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

export const deadline = (): grpc.CallOptions => ({ deadline: Date.now() + 5000 });

/** A unary call as a promise. */
export function unary<T>(invoke: (callback: grpc.requestCallback<T>) => unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    invoke((err, value) => (err ? reject(err) : resolve(value as T)));
  });
}

/** Asserts the call fails with this code and details matching `details`. */
export async function assertFails(promise: Promise<unknown>, code: grpc.status, details: RegExp | string): Promise<void> {
  await assert.rejects(promise, (err: grpc.ServiceError) => {
    assert.equal(err.code, code, `code ${grpc.status[err.code]} (${err.details})`);
    if (typeof details === 'string') assert.equal(err.details, details);
    else assert.match(err.details, details);
    return true;
  });
}
