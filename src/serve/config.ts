// `mvproxy serve` configuration: a JSON file written by the operator, plus a
// few flags that override it. Every missing or contradictory setting is
// reported at once, with the field it concerns.
//
// Peer addresses come only from here (the operator's file), never from the
// Kubernetes API: anything an ordinary user can write must not be able to
// point a sidecar's privileged front-proxy connection somewhere (SSRF).
import { readFileSync, existsSync } from 'node:fs';
import { isAbsolute, resolve, dirname } from 'node:path';
import type { ApiserverEndpoint } from '../model/cluster.js';

export interface SidecarListener {
  host: string;
  port: number;
  /** The certificate clients see: the apiserver's own serving certificate. */
  servingCert: string;
  servingKey: string;
}

export interface ServedApiserver extends ApiserverEndpoint {
  sidecar: SidecarListener;
}

export interface ServeConfig {
  /** Credentials for watching leases, CRDs and APIServices and reading each apiserver's discovery. */
  kubeconfig: string;
  apiservers: ServedApiserver[];
  tls: {
    /** Cluster client CA: verifies client certificates presented to the sidecars. */
    clientCa: string;
    /** Front-proxy client certificate the sidecars present to every apiserver. */
    frontProxyClientCert: string;
    frontProxyClientKey: string;
    /** Verifies apiserver serving certificates. */
    peerCa: string;
    /** SNI and expected SAN for apiserver connections. */
    peerServerName: string;
  };
  xds: {
    /** Unix socket for sidecars on this machine. */
    unixSocket?: string;
    /** TCP with mutual TLS for sidecars elsewhere. */
    tcp?: { host: string; port: number; cert: string; key: string; clientCa: string };
  };
  /** Operator endpoints: metrics and status over plain HTTP (keep it on loopback), the admin gRPC API on a Unix socket. */
  admin?: {
    http?: { host: string; port: number };
    socket?: string;
    /** Where drains are kept across control-plane restarts (in memory only when unset). */
    drainFile?: string;
  };
  /** HTTP CONNECT proxy for sidecar-to-peer connections (never for the local apiserver). */
  peerEgressProxy?: { host: string; port: number };
  departedGraceSeconds: number;
  localOnlyGraceSeconds: number;
  discoveryPollMillis: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid mvproxy configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Reads and validates a config file; relative paths are relative to the file. */
export function loadServeConfig(path: string): ServeConfig {
  let raw: Json;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8')) as Json;
  } catch (err) {
    throw new ConfigError([`${path}: ${(err as Error).message}`]);
  }
  return parseServeConfig(raw, dirname(resolve(path)), true);
}

/** Validates a parsed config object. `checkFiles` also requires every referenced file to exist. */
export function parseServeConfig(raw: Json, baseDir: string, checkFiles: boolean): ServeConfig {
  const problems: string[] = [];
  const r = new Reader(raw, '', problems, baseDir, checkFiles);
  const tls = r.object('tls');
  const xds = r.object('xds');
  const config: ServeConfig = {
    kubeconfig: r.file('kubeconfig'),
    apiservers: r.array('apiservers').map((a) => {
      const sidecar = a.object('sidecar');
      const address = a.hostPort('address');
      return {
        name: a.name('name'),
        hostname: a.string('hostname'),
        address,
        sidecar: { ...sidecar.hostPort('listen'), servingCert: sidecar.file('servingCert'), servingKey: sidecar.file('servingKey') },
      };
    }),
    tls: {
      clientCa: tls.file('clientCa'),
      frontProxyClientCert: tls.file('frontProxyClientCert'),
      frontProxyClientKey: tls.file('frontProxyClientKey'),
      peerCa: tls.file('peerCa'),
      peerServerName: tls.optionalString('peerServerName') ?? 'kubernetes.default.svc',
    },
    xds: {},
    departedGraceSeconds: r.optionalNumber('departedGraceSeconds') ?? 300,
    localOnlyGraceSeconds: r.optionalNumber('localOnlyGraceSeconds') ?? 300,
    discoveryPollMillis: r.optionalNumber('discoveryPollMillis') ?? 1000,
  };
  const unixSocket = xds.optionalString('unixSocket');
  if (unixSocket !== undefined) config.xds.unixSocket = resolve(baseDir, unixSocket);
  if (xds.has('tcp')) {
    const tcp = xds.object('tcp');
    config.xds.tcp = { ...tcp.hostPort('listen'), cert: tcp.file('cert'), key: tcp.file('key'), clientCa: tcp.file('clientCa') };
  }
  if (!config.xds.unixSocket && !config.xds.tcp) problems.push('xds: set unixSocket, tcp, or both (sidecars need a way to reach the control plane)');
  if (r.has('admin')) {
    const admin = r.object('admin');
    config.admin = {};
    if (admin.has('listen')) config.admin.http = admin.hostPort('listen');
    const socket = admin.optionalString('socket');
    if (socket !== undefined) config.admin.socket = resolve(baseDir, socket);
    const drainFile = admin.optionalString('drainFile');
    if (drainFile !== undefined) config.admin.drainFile = resolve(baseDir, drainFile);
    if (!admin.has('listen') && socket === undefined) problems.push('admin: set listen (metrics and status over HTTP), socket (the admin gRPC API), or both');
  }
  if (r.has('peerEgressProxy')) config.peerEgressProxy = r.hostPort('peerEgressProxy');

  if (config.apiservers.length === 0) problems.push('apiservers: list at least one apiserver');
  const seen = (what: string, values: string[]): void => {
    const dup = values.find((v, i) => values.indexOf(v) !== i);
    if (dup !== undefined) problems.push(`apiservers: ${what} ${dup} is used twice`);
  };
  seen(
    'name',
    config.apiservers.map((a) => a.name),
  );
  seen(
    'hostname',
    config.apiservers.map((a) => a.hostname),
  );
  seen(
    'sidecar listen address',
    config.apiservers.map((a) => `${a.sidecar.host}:${a.sidecar.port}`),
  );
  for (const a of config.apiservers) {
    if (a.sidecar.host === a.address.host && a.sidecar.port === a.address.port) {
      problems.push(`apiservers.${a.name}: sidecar.listen and address are the same ${a.address.host}:${a.address.port}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Walks a JSON value, collecting every problem instead of stopping at the first. */
class Reader {
  constructor(
    private readonly value: Json,
    private readonly path: string,
    private readonly problems: string[],
    private readonly baseDir: string,
    private readonly checkFiles: boolean,
  ) {}

  private get fields(): Record<string, Json> {
    return this.value !== null && typeof this.value === 'object' && !Array.isArray(this.value) ? this.value : {};
  }

  private at(key: string): string {
    return this.path ? `${this.path}.${key}` : key;
  }

  has(key: string): boolean {
    return this.fields[key] !== undefined;
  }

  object(key: string): Reader {
    const v = this.fields[key];
    if (v === undefined || v === null || typeof v !== 'object' || Array.isArray(v)) this.problems.push(`${this.at(key)}: required object`);
    return new Reader(v ?? {}, this.at(key), this.problems, this.baseDir, this.checkFiles);
  }

  array(key: string): Reader[] {
    const v = this.fields[key];
    if (!Array.isArray(v)) {
      this.problems.push(`${this.at(key)}: required list`);
      return [];
    }
    return v.map((item, i) => new Reader(item, `${this.at(key)}[${i}]`, this.problems, this.baseDir, this.checkFiles));
  }

  optionalString(key: string): string | undefined {
    const v = this.fields[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v === '') {
      this.problems.push(`${this.at(key)}: must be a non-empty string`);
      return undefined;
    }
    return v;
  }

  string(key: string): string {
    const v = this.optionalString(key);
    if (v === undefined && this.fields[key] === undefined) this.problems.push(`${this.at(key)}: required`);
    return v ?? '';
  }

  name(key: string): string {
    const v = this.string(key);
    if (v && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v)) this.problems.push(`${this.at(key)}: ${JSON.stringify(v)} is not a DNS label`);
    return v;
  }

  optionalNumber(key: string): number | undefined {
    const v = this.fields[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      this.problems.push(`${this.at(key)}: must be a non-negative number`);
      return undefined;
    }
    return v;
  }

  /** `host:port` (IPv6 in brackets). */
  hostPort(key: string): { host: string; port: number } {
    const v = this.string(key);
    const m = /^(\[[0-9a-fA-F:]+\]|[^:\s]+):(\d{1,5})$/.exec(v);
    const port = m ? Number(m[2]) : NaN;
    if (!m || port < 1 || port > 65535) {
      if (v) this.problems.push(`${this.at(key)}: ${JSON.stringify(v)} is not host:port`);
      return { host: '', port: 0 };
    }
    return { host: (m[1] ?? '').replace(/^\[|\]$/g, ''), port };
  }

  file(key: string): string {
    const v = this.string(key);
    if (!v) return '';
    const abs = isAbsolute(v) ? v : resolve(this.baseDir, v);
    if (this.checkFiles && !existsSync(abs)) this.problems.push(`${this.at(key)}: file ${abs} does not exist`);
    return abs;
  }
}
