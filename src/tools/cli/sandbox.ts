// `mvproxy-dev sandbox ...`: the local mixed-version control plane.
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { localSandboxDir } from '../../entry/adminClient.js';
import { ensureComponents, DEFAULT_KUBERNETES_VERSIONS } from '../install/index.js';
import { defaultApiserverName, type ApiserverSpec } from '../sandbox/apiservers.js';
import { SANDBOX_MODES, type SandboxMode } from '../sandbox/options.js';
import { DEFAULT_SANDBOX_NETWORK, SANDBOX_NETWORKS, type SandboxNetworkMode } from '../sandbox/netns.js';
import { Sandbox } from '../sandbox/sandbox.js';
import type { ControlPlaneReplicas } from '../sandbox/controlPlanes.js';
import { readState } from '../sandbox/state.js';
import { serveControl, callControl } from '../sandbox/control.js';
import { tailOfFile } from '../sandbox/processes.js';
import { processAlive } from '../../util/process.js';
import { nextSteps } from '../sandbox/nextSteps.js';

/** Set in the environment of the background `sandbox up` that --detach starts. */
const DETACHED_ENV = 'MVPROXY_SANDBOX_DETACHED';
const detachedChild = (): boolean => process.env[DETACHED_ENV] === '1';

/** `v1.37.2` or `v1.37.2:batch/v1=false`. */
export function parseApiserverFlag(value: string, index: number): ApiserverSpec {
  const [version, runtimeConfig] = value.split(/:(.*)/s, 2) as [string, string | undefined];
  return { name: defaultApiserverName(index), version, ...(runtimeConfig ? { runtimeConfig } : {}) };
}

export async function runSandbox(args: string[]): Promise<number> {
  const [verb, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      apiserver: { type: 'string', multiple: true },
      detach: { type: 'boolean', default: false },
      dir: { type: 'string' },
      'base-port': { type: 'string' },
      mode: { type: 'string', default: 'mvproxy' },
      'control-plane-replicas': { type: 'string', default: 'one' },
      version: { type: 'string' },
      'runtime-config': { type: 'string' },
      'controller-manager': { type: 'string', default: 'on' },
      network: { type: 'string', default: DEFAULT_SANDBOX_NETWORK },
    },
    allowPositionals: true,
    strict: true,
  });
  const dir = localSandboxDir(values.dir);
  const statePath = join(dir, 'state.json');
  switch (verb) {
    case 'up': {
      const specs = (values.apiserver ?? [...DEFAULT_KUBERNETES_VERSIONS]).map(parseApiserverFlag);
      const basePort = values['base-port'] === undefined ? undefined : parsePort(values['base-port']);
      const mode = parseMode(values.mode);
      const replicas = values['control-plane-replicas'];
      if (replicas !== 'one' && replicas !== 'per-apiserver') throw new Error('--control-plane-replicas must be one or per-apiserver');
      const controllerManager = values['controller-manager'];
      if (controllerManager !== 'on' && controllerManager !== 'off') throw new Error('--controller-manager must be on or off');
      const network = SANDBOX_NETWORKS.find((n) => n === values.network);
      if (!network) throw new Error(`--network must be one of ${SANDBOX_NETWORKS.join(', ')}, got ${JSON.stringify(values.network)}`);
      if (values.detach) return upDetached(rest, dir, statePath);
      return upForeground(specs, dir, basePort, mode, replicas, controllerManager === 'on', network);
    }
    case 'down': {
      if (!existsSync(statePath)) {
        process.stderr.write(`no sandbox running in ${dir}\n`);
        return 0;
      }
      const state = readState(statePath);
      await callControl(state.controlSocket, '/down');
      await waitForExit(state.pid, 60_000);
      process.stderr.write('sandbox stopped\n');
      return 0;
    }
    case 'stop':
    case 'start': {
      const name = positionals[0];
      if (!name) throw new Error(`usage: mvproxy-dev sandbox ${verb} NAME`);
      const state = readState(statePath);
      const body =
        verb === 'start'
          ? { ...(values.version ? { version: values.version } : {}), ...(values['runtime-config'] ? { runtimeConfig: values['runtime-config'] } : {}) }
          : {};
      process.stderr.write(`${await callControl(state.controlSocket, `/apiservers/${name}/${verb}`, body)}\n`);
      return 0;
    }
    default:
      throw new Error(`unknown sandbox verb ${JSON.stringify(verb)}: use up, down, stop or start`);
  }
}

function parseMode(text: string | undefined): SandboxMode {
  const mode = SANDBOX_MODES.find((m) => m === text);
  if (!mode) throw new Error(`--mode must be one of ${SANDBOX_MODES.join(', ')}, got ${JSON.stringify(text)}`);
  return mode;
}

function parsePort(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1024 || n > 65000) throw new Error(`--base-port must be an integer between 1024 and 65000, got ${JSON.stringify(text)}`);
  return n;
}

async function upForeground(
  specs: ApiserverSpec[],
  dir: string,
  basePort: number | undefined,
  mode: SandboxMode,
  controlPlaneReplicas: ControlPlaneReplicas,
  controllerManager: boolean,
  network: SandboxNetworkMode,
): Promise<number> {
  if (existsSync(join(dir, 'state.json'))) {
    const state = readState(join(dir, 'state.json'));
    if (processAlive(state.pid)) throw new Error(`a sandbox is already running in ${dir} (pid ${state.pid}); run: npx mvproxy-dev sandbox down`);
  }
  const progress = (line: string): void => void process.stderr.write(`[sandbox] ${line}\n`);
  const versions = [...new Set(specs.map((s) => s.version))];
  const components = await ensureComponents({ kubernetesVersions: versions, log: progress });
  const started = Date.now();
  const sandbox = await Sandbox.up({
    dir,
    apiservers: specs,
    components,
    progress,
    mode,
    controlPlaneReplicas,
    controllerManager,
    network,
    ...(basePort !== undefined ? { basePort } : {}),
  });
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    progress('stopping ...');
    void control.then((s) => s.close());
    sandbox.down().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  const control = serveControl(sandbox, sandbox.state().controlSocket, stop);
  await control;
  progress(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s (mode ${mode}, network ${network}); logs in ${sandbox.logsDir}`);
  process.stdout.write(`${sandbox.statePath}\n`);
  // A detached child's output goes to its log; its parent prints the next steps.
  if (!detachedChild()) process.stderr.write(nextSteps(sandbox.state(), { detached: false }));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return 0;
}

/** Re-runs `sandbox up` in the background and returns once it is ready (or failed). */
async function upDetached(args: string[], dir: string, statePath: string): Promise<number> {
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const logFile = join(dir, 'logs', 'sandbox.log');
  const fd = openSync(logFile, 'w');
  const child = spawn(process.execPath, [fileURLToPath(new URL('./main.js', import.meta.url)), 'sandbox', 'up', ...args.filter((a) => a !== '--detach')], {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: { ...process.env, [DETACHED_ENV]: '1' },
  });
  closeSync(fd);
  child.unref();
  let exited = false;
  child.on('exit', () => (exited = true));
  process.stderr.write(`starting sandbox in the background (log: ${logFile}) ...\n`);
  for (;;) {
    if (existsSync(statePath) && readState(statePath).pid === child.pid) {
      process.stdout.write(`${statePath}\n`);
      process.stderr.write(nextSteps(readState(statePath), { detached: true }));
      return 0;
    }
    if (exited) throw new Error(`sandbox failed to start:\n${tailOfFile(logFile, 30)}`);
    await sleep(500);
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (processAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`sandbox process ${pid} did not exit within ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}
