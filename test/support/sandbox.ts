// Starts a real sandbox (etcd + kube-apiservers, sidecars, control plane) for
// one test file; the file stops it in an `after` hook. Children die with the
// test process even if it is killed (see src/tools/sandbox/processes.ts).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { ensureComponents } from '../../src/tools/install/index.js';
import type { ApiserverSpec } from '../../src/tools/sandbox/apiservers.js';
import type { SandboxMode } from '../../src/tools/sandbox/options.js';
import type { SandboxNetworkMode } from '../../src/tools/sandbox/netns.js';
import { Sandbox } from '../../src/tools/sandbox/sandbox.js';
import type { ControlPlaneReplicas } from '../../src/tools/sandbox/controlPlanes.js';
import type { SandboxState } from '../../src/tools/sandbox/state.js';
import { httpsRequest } from '../../src/util/https.js';
import { serviceAccountToken as createServiceAccountToken } from '../../src/tools/sandbox/serviceAccount.js';
import { AGGREGATED_DISCOVERY_ACCEPT } from '../../src/model/discovery.js';

const execFileAsync = promisify(execFile);

/** The built `mvproxy` command line (dist/src/cli/main.js). */
export const MVPROXY_CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export interface TestSandbox {
  sandbox: Sandbox;
  state: () => SandboxState;
  kubectl: (
    kubeconfig: string,
    args: string[],
    opts?: { user?: 'admin' | 'user'; env?: Record<string, string> },
  ) => Promise<{ stdout: string; stderr: string; code: number }>;
}

/** Far beyond the slowest sandbox start (a minute with the controller-manager and the kubernetes Service published). */
const SANDBOX_UP_LIMIT_MS = 6 * 60_000;

/** `auditLogs`: every apiserver writes an audit log (Sandbox.auditLogPath), for tests that ask how an apiserver read a request. */
export async function startTestSandbox(
  specs: ApiserverSpec[],
  options: {
    peerEgressProxy?: string;
    auditLogs?: boolean;
    mode?: SandboxMode;
    controlPlaneReplicas?: ControlPlaneReplicas;
    controllerManager?: boolean;
    network?: SandboxNetworkMode;
    publishKubernetesService?: boolean;
  } = {},
): Promise<TestSandbox> {
  const components = await ensureComponents({ kubernetesVersions: [...new Set(specs.map((s) => s.version))], log: () => undefined });
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-sandbox-'));
  // A sandbox that never comes up fails its file with its last steps, instead of holding the suite until CI's limit.
  const steps: string[] = [];
  const progress = (line: string): void => void steps.push(`${new Date().toISOString()} ${line}`);
  let watchdog: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_resolve, reject) => {
    watchdog = setTimeout(
      () => reject(new Error(`the sandbox in ${dir} is not up after ${SANDBOX_UP_LIMIT_MS / 1000} s; its last steps:\n${steps.slice(-10).join('\n')}`)),
      SANDBOX_UP_LIMIT_MS,
    );
  });
  const sandbox = await Promise.race([Sandbox.up({ dir, apiservers: specs, components, progress, ...options }), stuck]).finally(() => clearTimeout(watchdog));
  const state = (): SandboxState => sandbox.state();
  const kubectl: TestSandbox['kubectl'] = async (kubeconfig, args, opts = {}) => {
    const s = state();
    const identity = opts.user === 'user' ? [`--client-certificate=${s.clientCerts.user.cert}`, `--client-key=${s.clientCerts.user.key}`] : [];
    try {
      const { stdout, stderr } = await execFileAsync(s.kubectl, [`--kubeconfig=${kubeconfig}`, ...identity, ...args], {
        timeout: 60_000,
        env: { ...process.env, ...opts.env },
      });
      return { stdout, stderr, code: 0 };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; code?: number };
      return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : 1 };
    }
  };
  return { sandbox, state, kubectl };
}

/** A new, empty kubectl discovery cache folder (`--cache-dir`), so kubectl discovers afresh. */
export function freshKubectlCacheDir(): string {
  return mkdtempSync(join(tmpdir(), 'kubectl-cache-'));
}

/** Retries `check` until it returns without throwing, for eventually-true cluster facts. */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 60_000, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

export const AGGREGATED_DISCOVERY_NOPEER_ACCEPT = AGGREGATED_DISCOVERY_ACCEPT;

/** A service-account token, optionally bound to a ClusterRole (created through the admin certificate). */
export async function serviceAccountToken(state: SandboxState, name: string, clusterRole?: string): Promise<string> {
  const first = state.apiservers.find((a) => a.running);
  if (!first) throw new Error('no running apiserver');
  return createServiceAccountToken(first.kubeconfig.direct, { namespace: 'default', name, expirationSeconds: 3600, ...(clusterRole ? { clusterRole } : {}) });
}

/** A bearer-token API client for one base URL (a sidecar or an apiserver). */
export function tokenClient(state: SandboxState, baseUrl: string, token: string) {
  return (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    httpsRequest(
      baseUrl + path,
      { ca: state.ca },
      {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        timeoutMs: 15_000,
      },
    );
}

export function apiserverNamed(state: SandboxState, name: string): SandboxState['apiservers'][number] {
  const a = state.apiservers.find((x) => x.name === name);
  if (!a) throw new Error(`no apiserver ${name}`);
  return a;
}

/** `mvproxy admin ARGS` against the sandbox's control plane (its first replica), as an operator runs it; resolves with what it prints. */
export async function adminCli(tb: TestSandbox, ...args: string[]): Promise<string> {
  const socket = tb.state().controlPlane?.adminSocket;
  if (!socket) throw new Error('sandbox has no control plane');
  return (await execFileAsync(process.execPath, [MVPROXY_CLI, 'admin', '--socket', socket, ...args], { timeout: 60_000 })).stdout;
}

/** Until the control plane's /status shows every named sidecar connected with every xDS type ACKed at the version sent. */
export async function controlPlaneInSync(tb: TestSandbox, nodes: readonly string[], timeoutMs = 60_000): Promise<void> {
  const adminUrl = tb.state().controlPlane?.admin ?? '';
  await eventually(async () => {
    const status = (await (await fetch(`${adminUrl}/status`)).json()) as {
      xds: Record<string, { connected: boolean; types: Record<string, { versionSent?: string; versionAcked?: string }> }>;
    };
    for (const node of nodes) {
      const n = status.xds[node];
      if (!n?.connected) throw new Error(`${node} is not connected to the control plane`);
      for (const [type, t] of Object.entries(n.types)) {
        if (t.versionAcked !== t.versionSent) throw new Error(`${node} has not ACKed ${type} ${t.versionSent ?? ''}`);
      }
    }
  }, timeoutMs);
}
