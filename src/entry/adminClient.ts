// Entry module (docs/architecture.md, "The tools' way in"): a client of the
// control plane's admin gRPC API (proto/mvproxy/admin/v1/admin.proto) on its
// Unix socket, what `mvproxy admin` (src/cli/admin.ts), the bench and the
// upgrade test call it with; and where a local sandbox's control plane is.
import * as grpc from '@grpc/grpc-js';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AdminClient } from '../generated/mvproxy/admin/v1/Admin.js';
import type { Explanation__Output } from '../generated/mvproxy/admin/v1/Explanation.js';
import type { SidecarConfig__Output } from '../generated/mvproxy/admin/v1/SidecarConfig.js';
import type { Status__Output } from '../generated/mvproxy/admin/v1/Status.js';
import { adminGrpc } from '../servers/admin.js';
import { isRecord } from '../util/json.js';
import { setTimeout as sleep } from 'node:timers/promises';

const CALL_DEADLINE_MS = 10_000;

/** The checkout (or image) this module runs from: it is dist/src/entry/adminClient.js. */
const checkout = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/**
 * The folder of the local sandbox (`mvproxy-dev sandbox up --dir`): `dir`,
 * else $MVPROXY_SANDBOX_DIR, else `.sandbox` at the top of the checkout. The
 * sandbox puts itself there, and `mvproxy admin` looks there for a control
 * plane when given no socket.
 */
export function localSandboxDir(dir?: string): string {
  return resolve(dir ?? process.env['MVPROXY_SANDBOX_DIR'] ?? join(checkout, '.sandbox'));
}

/** The admin socket of the local sandbox's (first) control plane, as its state file names it; undefined when no sandbox is there. */
export function localAdminSocket(): string | undefined {
  const statePath = join(localSandboxDir(), 'state.json');
  if (!existsSync(statePath)) return undefined;
  // The sandbox's state (src/tools/sandbox/state.ts): only the one field read here.
  const state: unknown = JSON.parse(readFileSync(statePath, 'utf8'));
  const controlPlane = isRecord(state) ? state['controlPlane'] : undefined;
  const socket = isRecord(controlPlane) ? controlPlane['adminSocket'] : undefined;
  return typeof socket === 'string' ? socket : undefined;
}

/** Calls `use` with a client of the admin API on the Unix socket `socket`, closed afterwards. */
export async function withAdminClient<T>(socket: string, use: (client: AdminClient) => Promise<T>): Promise<T> {
  if (!existsSync(socket)) throw new Error(`cannot reach the control plane: ${socket} does not exist (is mvproxy serve running with admin.socket set?)`);
  const Admin = adminGrpc().mvproxy.admin.v1.Admin;
  const client = new Admin(`unix://${socket}`, grpc.credentials.createInsecure());
  try {
    return await use(client);
  } finally {
    client.close();
  }
}

interface Calls {
  GetStatus: [Record<string, never>, Status__Output];
  Explain: [{ sidecar: string; path: string; peer_proxied: boolean }, Explanation__Output];
  Drain: [{ apiserver: string }, { draining: string[] }];
  Undrain: [{ apiserver: string }, { draining: string[] }];
  GetConfig: [{ sidecar: string; type_url: string }, SidecarConfig__Output];
}

/** One unary call with a deadline; gRPC errors become plain errors carrying the server's words. */
export function call<M extends keyof Calls>(client: AdminClient, method: M, request: Calls[M][0]): Promise<Calls[M][1]> {
  const deadline = new Date(Date.now() + CALL_DEADLINE_MS);
  return new Promise((resolve, reject) => {
    const callback = (err: grpc.ServiceError | null, response?: unknown): void => {
      if (err) reject(new Error(`${method}: ${grpc.status[err.code] ?? err.code}: ${err.details || err.message}`));
      else resolve(response as Calls[M][1]);
    };
    // The generated client's overloads do not narrow over a union of methods.
    (client[method] as unknown as (req: Calls[M][0], options: grpc.CallOptions, cb: typeof callback) => void).call(client, request, { deadline }, callback);
  });
}

/** Polls GetStatus until every sidecar is connected and has ACKed its current routes. */
export async function waitInSync(client: AdminClient, timeoutMs: number): Promise<Status__Output> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await call(client, 'GetStatus', {});
    // Sidecars streaming from other replicas count too, as those replicas report them (the sync record).
    const behind = status.sidecars.filter((s) => s.connected && !s.in_sync);
    if (behind.length === 0 && status.sidecars.some((s) => s.connected)) return status;
    if (Date.now() > deadline) {
      const why = behind.map(
        (s) =>
          `${s.node} (${s.connected ? `has not ACKed yet${s.replica ? `, as ${s.replica} reported at ${s.reported_at}` : ''}${behindText(s.envoys_behind)}` : 'not connected'}${s.xds.some((t) => t.last_nack) ? `, last NACK: ${s.xds.find((t) => t.last_nack)?.last_nack}` : ''})`,
      );
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for sidecars: ${why.join('; ')}`);
    }
    await sleep(200);
  }
}

/** The Envoys of a sidecar that lag, named (the first few) when there are any. */
function behindText(behind: readonly string[]): string {
  if (behind.length === 0) return '';
  const named = behind.slice(0, 5).join(', ');
  return `: Envoys ${named}${behind.length > 5 ? ` and ${behind.length - 5} more` : ''}`;
}
