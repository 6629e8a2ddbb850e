// Runs a real Envoy for tests: find the binary, start it with a bootstrap,
// wait until it is ready, read its admin API, and make sure it dies with the
// test (t.after) or, failing that, with this process (exit hook, and a
// watchdog shell that kills Envoy when our stdin pipe to it closes).
import type { AnyExtension } from '@grpc/proto-loader';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import type { TestContext } from 'node:test';
import type { Listener } from '../../src/generated/envoy/config/listener/v3/Listener.js';
import type { Router } from '../../src/generated/envoy/extensions/filters/http/router/v3/Router.js';
import type { HeaderMutation } from '../../src/generated/envoy/extensions/filters/http/header_mutation/v3/HeaderMutation.js';
import type { HttpConnectionManager } from '../../src/generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpConnectionManager.js';
import { componentPaths } from '../../src/tools/install/index.js';

/** The Envoy binary: $MVPROXY_ENVOY, else the installer's (its cache, its default version). */
export function envoyBinary(): string {
  const fromEnv = process.env['MVPROXY_ENVOY'];
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`MVPROXY_ENVOY=${fromEnv} does not exist`);
    return fromEnv;
  }
  const installed = componentPaths({ kubernetesVersions: [] }).envoy;
  if (existsSync(installed)) return installed;
  throw new Error(`no Envoy binary at ${installed}: install it with \`npx mvproxy install --only envoy\` (npm run test:unit does) or set MVPROXY_ENVOY`);
}

/** Every Envoy still running, killed on process exit as a last resort. */
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
});

export interface EnvoyOptions {
  /** Bootstrap object (written as JSON). Its admin must be TCP on 127.0.0.1; port 0 is fine. */
  bootstrap: object;
  /** Working folder for the config, logs and admin address; a new tmp dir by default. */
  dir?: string;
  logLevel?: string;
  /** How long to wait for /ready (LIVE); 0 skips the wait. */
  readyTimeoutMs?: number;
}

export interface EnvoyInstance {
  readonly pid: number;
  readonly dir: string;
  readonly configFile: string;
  readonly logFile: string;
  /** http://127.0.0.1:PORT of the admin interface. */
  readonly adminUrl: string;
  admin(path: string): Promise<{ status: number; body: string }>;
  configDump(): Promise<ConfigDump>;
  clusters(): Promise<string>;
  waitReady(timeoutMs: number): Promise<void>;
  logs(): string;
  /** True while the process runs. */
  running(): boolean;
  stop(): Promise<void>;
}

export interface ConfigDump {
  configs: Array<{ '@type': string; [key: string]: unknown }>;
}

function httpGet(url: string, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until check returns a value other than undefined, or throws on timeout with the last error. */
export async function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await sleep(100);
  }
}

/**
 * Starts Envoy. With a TestContext it is stopped in t.after; without, the
 * caller must stop() it (the exit hook and watchdog still apply).
 */
export async function startEnvoy(t: TestContext | undefined, opts: EnvoyOptions): Promise<EnvoyInstance> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'mvproxy-envoy-'));
  const configFile = join(dir, 'envoy.json');
  const logFile = join(dir, 'envoy.log');
  const adminAddressFile = join(dir, 'admin-address');
  writeFileSync(configFile, JSON.stringify(opts.bootstrap, null, 2));
  const args = [
    '-c',
    configFile,
    '-l',
    opts.logLevel ?? 'warning',
    '--log-path',
    logFile,
    // Several Envoys run at once in tests: no shared-memory clashes.
    '--use-dynamic-base-id',
    '--admin-address-path',
    adminAddressFile,
  ];
  const child = spawn(envoyBinary(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', () => live.delete(child));
  const pid = child.pid;
  if (pid === undefined) throw new Error('Envoy did not start');
  // If this process dies without running exit hooks (SIGKILL), our end of the
  // pipe closes, `read` returns and the watchdog kills Envoy.
  const watchdog = spawn('/bin/sh', ['-c', `read _ ; kill -9 ${pid} 2>/dev/null`], { stdio: ['pipe', 'ignore', 'ignore'] });
  watchdog.unref();
  watchdog.stdin?.on('error', () => undefined);
  (watchdog.stdin as Socket | null)?.unref();

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    // Watchdog first, so it can never kill a recycled pid later.
    watchdog.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    // Keep the logs of a folder the caller gave us; ours goes.
    if (ownDir && !process.env['MVPROXY_KEEP_ENVOY_DIR']) rmSync(dir, { recursive: true, force: true });
  };
  t?.after(stop);

  const logs = (): string => {
    const file = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
    return file + stderr;
  };
  let adminUrl = '';
  try {
    const address = await eventually('Envoy admin address', 15_000, () => {
      if (child.exitCode !== null) throw new Error(`Envoy exited with ${child.exitCode}: ${logs()}`);
      if (!existsSync(adminAddressFile)) return undefined;
      const text = readFileSync(adminAddressFile, 'utf8').trim();
      return text === '' ? undefined : text;
    });
    adminUrl = `http://${address}`;
  } catch (err) {
    await stop();
    throw err;
  }

  const admin = (path: string): Promise<{ status: number; body: string }> => httpGet(adminUrl + path);
  const instance: EnvoyInstance = {
    pid,
    dir,
    configFile,
    logFile,
    adminUrl,
    admin,
    async configDump(): Promise<ConfigDump> {
      const res = await admin('/config_dump');
      if (res.status !== 200) throw new Error(`/config_dump: ${res.status} ${res.body}`);
      return JSON.parse(res.body) as ConfigDump;
    },
    async clusters(): Promise<string> {
      return (await admin('/clusters')).body;
    },
    async waitReady(timeoutMs: number): Promise<void> {
      await eventually('Envoy /ready', timeoutMs, async () => {
        if (child.exitCode !== null) throw new Error(`Envoy exited with ${child.exitCode}: ${logs()}`);
        const res = await admin('/ready');
        return res.status === 200 ? true : undefined;
      });
    },
    logs,
    running: () => child.exitCode === null && child.signalCode === null,
    stop,
  };
  if ((opts.readyTimeoutMs ?? 30_000) > 0) {
    try {
      await instance.waitReady(opts.readyTimeoutMs ?? 30_000);
    } catch (err) {
      await stop();
      throw err;
    }
  }
  return instance;
}

/** Runs `envoy --mode validate` on a config object. */
export async function validateEnvoyConfig(config: object): Promise<{ ok: boolean; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-validate-'));
  const file = join(dir, 'envoy.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return new Promise((resolve) => {
    execFile(envoyBinary(), ['--mode', 'validate', '-c', file, '-l', 'warning', '--use-dynamic-base-id'], { timeout: 60_000 }, (err, stdout, stderr) => {
      rmSync(dir, { recursive: true, force: true });
      resolve({ ok: !err, output: `${stdout}${stderr}` });
    });
  });
}

/** The dynamic resources of one kind in a config dump, e.g. 'ClustersConfigDump'. */
export function dumpSection(dump: ConfigDump, kind: string): Record<string, unknown> | undefined {
  return dump.configs.find((c) => c['@type'] === `type.googleapis.com/envoy.admin.v3.${kind}`);
}

/** The smallest HTTP listener that takes its routes over ADS (RDS config `name`): a fixture for xDS tests. */
export function rdsListener(name: string, port: number): Listener {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: anyOf<HttpConnectionManager>('envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager', {
              stat_prefix: name,
              rds: { route_config_name: name, config_source: { ads: {}, resource_api_version: 'V3' } },
              http_filters: [
                // Configured over ECDS, as mvproxy's document filters are (snapshotFixtures.ts: `document`).
                {
                  name: 'document',
                  config_discovery: {
                    config_source: { ads: {}, resource_api_version: 'V3' },
                    type_urls: ['type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation'],
                    default_config: anyOf<HeaderMutation>('envoy.extensions.filters.http.header_mutation.v3.HeaderMutation', {}),
                    apply_default_config_without_warming: true,
                  },
                },
                { name: 'envoy.filters.http.router', typed_config: anyOf<Router>('envoy.extensions.filters.http.router.v3.Router', {}) },
              ],
            }),
          },
        ],
      },
    ],
  };
}

/**
 * A typed_config (google.protobuf.Any) from a message name and its fields,
 * type-checked against the generated type T:
 * `anyOf<HttpConnectionManager>('envoy.extensions...HttpConnectionManager', {...})`.
 */
function anyOf<T extends object>(message: string, fields: T): AnyExtension & T {
  return { ...fields, '@type': `type.googleapis.com/${message}` };
}
