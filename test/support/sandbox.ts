// Starts a real sandbox (etcd + kube-apiservers) for one test file and stops
// it when the file's tests end. Children die with the test process even if
// it is killed (see src/sandbox/processes.ts).
import { after } from 'node:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ensureComponents } from '../../src/install/index.js';
import { Sandbox, type ApiserverSpec } from '../../src/sandbox/sandbox.js';
import type { SandboxState } from '../../src/sandbox/state.js';

const execFileAsync = promisify(execFile);

export interface TestSandbox {
  sandbox: Sandbox;
  state: () => SandboxState;
  kubectl: (kubeconfig: string, args: string[], opts?: { user?: 'admin' | 'user' }) => Promise<{ stdout: string; stderr: string; code: number }>;
}

export async function startTestSandbox(specs: ApiserverSpec[]): Promise<TestSandbox> {
  const components = await ensureComponents({ kubernetesVersions: [...new Set(specs.map((s) => s.version))], log: () => undefined });
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-sandbox-'));
  const sandbox = await Sandbox.up({ dir, apiservers: specs, components });
  after(() => sandbox.down());
  const state = (): SandboxState => sandbox.state();
  const kubectl: TestSandbox['kubectl'] = async (kubeconfig, args, opts = {}) => {
    const s = state();
    const identity = opts.user === 'user' ? [`--client-certificate=${s.clientCerts.user.cert}`, `--client-key=${s.clientCerts.user.key}`] : [];
    try {
      const { stdout, stderr } = await execFileAsync(s.kubectl, [`--kubeconfig=${kubeconfig}`, ...identity, ...args], { timeout: 60_000 });
      return { stdout, stderr, code: 0 };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; code?: number };
      return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : 1 };
    }
  };
  return { sandbox, state, kubectl };
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

export const AGGREGATED_DISCOVERY_NOPEER_ACCEPT =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';
