// `mvproxy serve` configuration: a JSON file written by the operator, plus a
// few flags that override it. Every missing, contradictory or out-of-range
// setting is reported at once, with the field it concerns; every number has a
// range (LIMITS), so no value can make the control plane spin, starve or hold
// an apiserver forever.
//
// Peer addresses come only from here (the operator's file), never from the
// Kubernetes API: anything an ordinary user can write must not be able to
// point a sidecar's privileged front-proxy connection somewhere (SSRF).
import { readFileSync, existsSync } from 'node:fs';
import { isAbsolute, resolve, dirname } from 'node:path';
import { DEFAULT_DRAIN_RECORD } from '../sources/drainRecord.js';
import { DEFAULT_SYNC_RECORD } from '../sources/syncRecord.js';
import { hostname } from 'node:os';
import { BlockList, isIP } from 'node:net';
import type { ApiserverEndpoint, NetworkAddress } from '../model/cluster.js';
import { DEFAULT_LIVENESS_RECORD } from '../sources/livenessRecord.js';
import { publishPlan, type KubernetesServiceConfig } from './configPublish.js';

export interface SidecarListener {
  host: string;
  port: number;
  /** The certificate clients see: the apiserver's own serving certificate. */
  servingCert: string;
  servingKey: string;
  /** Where pods reach this sidecar, for the `kubernetes` Service (configPublish.ts); default `listen`. */
  publish?: NetworkAddress;
}

export interface ServedApiserver extends ApiserverEndpoint {
  sidecar: SidecarListener;
  /** Where pods reach the apiserver itself while its sidecar is not live (configPublish.ts); default `address`. */
  publish?: NetworkAddress;
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
    /** Its file mode, set before anyone can connect: 0o600 (default) or 0o660 (for an Envoy running as another user of our group). */
    unixSocketMode: number;
    /** TCP with mutual TLS for sidecars elsewhere. */
    tcp?: { host: string; port: number; cert: string; key: string; clientCa: string };
  };
  /** Operator endpoints: metrics and status over plain HTTP (keep it on loopback), the admin gRPC API on a Unix socket. */
  admin?: {
    http?: { host: string; port: number };
    socket?: string;
  };
  /** The ConfigMap every replica reads drains from and writes them to (sources/drainRecord.ts); default kube-system/mvproxy-drains. */
  drainRecord: { namespace: string; name: string };
  /** The ConfigMap where each replica says which config its sidecars ACKed (sources/syncRecord.ts); default kube-system/mvproxy-sidecars. */
  syncRecord: { namespace: string; name: string };
  /** This replica's name in the sync record and in status; default the host name (one replica per node). */
  replicaName: string;
  /** HTTP CONNECT proxy for sidecar-to-peer connections (never for the local apiserver). */
  peerEgressProxy?: { host: string; port: number };
  /** Where the model behind the last pushed snapshots is kept, to serve them again at once after a restart (warmStart.ts). */
  warmStartFile?: string;
  departedGraceSeconds: number;
  localOnlyGraceSeconds: number;
  discoveryPollMillis: number;
  /** A discovery, OpenAPI index or /readyz body larger than this is refused (that document only; the apiserver did answer). */
  discoveryMaxBodyBytes: number;
  /** The apiservers' --request-timeout: sidecars answer 504 to a request that is not long-running 5 s after it (README, "Limits"). */
  requestTimeoutSeconds: number;
  /** How often the certificate files are read for in-place rewrites and client CA changes (certificateFiles.ts); default 5000. */
  certificatePollMillis?: number;
  /** Set when this replica publishes the `kubernetes` Service's endpoints (`kubernetesService.publish`, off by default). */
  kubernetesService?: KubernetesServiceConfig;
}

/** The range and default of every number in the file: [min, max, default]. Integers only. */
export const LIMITS = {
  departedGraceSeconds: [10, 3600, 300],
  localOnlyGraceSeconds: [10, 3600, 300],
  discoveryPollMillis: [100, 60_000, 1000],
  discoveryMaxBodyBytes: [1024 * 1024, 256 * 1024 * 1024, 32 * 1024 * 1024],
  requestTimeoutSeconds: [1, 86_400, 60],
  certificatePollMillis: [100, 60_000, 5000],
} as const satisfies Record<string, readonly [number, number, number]>;

/** Modes the xDS socket may have: owner only, or owner and group (never others: xDS hands out every sidecar's configuration). */
const XDS_SOCKET_MODES: ReadonlyMap<string, number> = new Map([
  ['0600', 0o600],
  ['0660', 0o660],
]);

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
      const served: ServedApiserver = {
        name: a.name('name'),
        hostname: a.string('hostname'),
        address,
        sidecar: { ...sidecar.hostPort('listen'), servingCert: sidecar.file('servingCert'), servingKey: sidecar.file('servingKey') },
      };
      if (a.has('publish')) served.publish = a.hostPort('publish');
      if (sidecar.has('publish')) served.sidecar.publish = sidecar.hostPort('publish');
      return served;
    }),
    tls: {
      clientCa: tls.file('clientCa'),
      frontProxyClientCert: tls.file('frontProxyClientCert'),
      frontProxyClientKey: tls.file('frontProxyClientKey'),
      peerCa: tls.file('peerCa'),
      peerServerName: tls.optionalString('peerServerName') ?? 'kubernetes.default.svc',
    },
    xds: { unixSocketMode: 0o600 },
    departedGraceSeconds: r.integer('departedGraceSeconds', ...LIMITS.departedGraceSeconds),
    localOnlyGraceSeconds: r.integer('localOnlyGraceSeconds', ...LIMITS.localOnlyGraceSeconds),
    discoveryPollMillis: r.integer('discoveryPollMillis', ...LIMITS.discoveryPollMillis),
    discoveryMaxBodyBytes: r.integer('discoveryMaxBodyBytes', ...LIMITS.discoveryMaxBodyBytes),
    requestTimeoutSeconds: r.integer('requestTimeoutSeconds', ...LIMITS.requestTimeoutSeconds),
    certificatePollMillis: r.integer('certificatePollMillis', ...LIMITS.certificatePollMillis),
    drainRecord: { ...DEFAULT_DRAIN_RECORD },
    syncRecord: { ...DEFAULT_SYNC_RECORD },
    replicaName: r.optionalString('replicaName') ?? hostname(),
  };
  for (const field of ['drainRecord', 'syncRecord'] as const) {
    const ref = configMapRef(field, r.optionalString(field), problems);
    if (ref) config[field] = ref;
  }
  if (config.replicaName === '' || config.replicaName.length > 253) problems.push('replicaName: must be 1 to 253 characters');
  const sameRef = (a: { namespace: string; name: string }, b: { namespace: string; name: string }): boolean => a.namespace === b.namespace && a.name === b.name;
  if (sameRef(config.drainRecord, config.syncRecord)) problems.push('syncRecord: must not be the drainRecord ConfigMap (its keys would read as drains)');
  if (r.has('kubernetesService')) {
    const section = r.object('kubernetesService');
    const livenessRecord = configMapRef('kubernetesService.livenessRecord', section.optionalString('livenessRecord'), problems) ?? {
      ...DEFAULT_LIVENESS_RECORD,
    };
    if (section.optionalBoolean('publish') === true) {
      if (sameRef(livenessRecord, config.drainRecord) || sameRef(livenessRecord, config.syncRecord))
        problems.push('kubernetesService.livenessRecord: must be a ConfigMap of its own (not the drainRecord or syncRecord)');
      if (!/^[-._a-zA-Z0-9]+$/.test(config.replicaName)) problems.push('replicaName: must be a ConfigMap key (letters, digits, -, _ and .) to publish');
      const plan = publishPlan(config.apiservers, problems);
      if (plan) config.kubernetesService = { livenessRecord, plan };
    }
  }
  const unixSocket = xds.optionalString('unixSocket');
  if (unixSocket !== undefined) config.xds.unixSocket = resolve(baseDir, unixSocket);
  const unixSocketMode = xds.optionalString('unixSocketMode');
  if (unixSocketMode !== undefined) {
    const mode = XDS_SOCKET_MODES.get(unixSocketMode);
    if (mode === undefined) problems.push(`xds.unixSocketMode: ${JSON.stringify(unixSocketMode)} is not one of ${[...XDS_SOCKET_MODES.keys()].join(', ')}`);
    else config.xds.unixSocketMode = mode;
  }
  if (xds.has('tcp')) {
    const tcp = xds.object('tcp');
    config.xds.tcp = { ...tcp.hostPort('listen'), cert: tcp.file('cert'), key: tcp.file('key'), clientCa: tcp.file('clientCa') };
  }
  if (!config.xds.unixSocket && !config.xds.tcp) problems.push('xds: set unixSocket, tcp, or both (sidecars need a way to reach the control plane)');
  if (r.has('admin')) {
    const admin = r.object('admin');
    config.admin = {};
    const allowRemote = admin.optionalBoolean('allowRemote') ?? false;
    if (admin.has('listen')) {
      config.admin.http = admin.hostPort('listen');
      const { host } = config.admin.http;
      if (host !== '' && !allowRemote && !isLoopback(host)) {
        problems.push(
          `admin.listen: ${JSON.stringify(host)} is not a loopback address; /status and /metrics have no authentication (set admin.allowRemote: true to serve them beyond this machine anyway)`,
        );
      }
    }
    const socket = admin.optionalString('socket');
    if (socket !== undefined) config.admin.socket = resolve(baseDir, socket);
    if (admin.has('drainFile'))
      problems.push('admin.drainFile: drains now live in the Kubernetes API, shared by every replica (drainRecord); remove this field');
    if (!admin.has('listen') && socket === undefined) problems.push('admin: set listen (metrics and status over HTTP), socket (the admin gRPC API), or both');
  }
  if (r.has('peerEgressProxy')) config.peerEgressProxy = r.hostPort('peerEgressProxy');
  const warmStartFile = r.optionalString('warmStartFile');
  if (warmStartFile !== undefined) config.warmStartFile = resolve(baseDir, warmStartFile);

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

/** `NAMESPACE/NAME` of a ConfigMap; undefined (and a problem when it was given) otherwise. */
function configMapRef(field: string, value: string | undefined, problems: string[]): { namespace: string; name: string } | undefined {
  if (value === undefined) return undefined;
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(value);
  if (m && value.length <= 317) return { namespace: m[1] ?? '', name: m[3] ?? '' };
  problems.push(`${field}: ${JSON.stringify(value)} is not NAMESPACE/NAME of a ConfigMap`);
  return undefined;
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** 127.0.0.0/8, ::1 (also IPv4-mapped) or `localhost`; any other name is not known to be loopback. */
export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  const family = isIP(host);
  return family !== 0 && LOOPBACK.check(host, family === 6 ? 'ipv6' : 'ipv4');
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

  /** An integer from min to max; `fallback` when absent (and after a problem, so the rest can still be checked). */
  integer(key: string, min: number, max: number, fallback: number): number {
    const v = this.fields[key];
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      this.problems.push(`${this.at(key)}: must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
      return fallback;
    }
    return v;
  }

  optionalBoolean(key: string): boolean | undefined {
    const v = this.fields[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') {
      this.problems.push(`${this.at(key)}: must be true or false, got ${JSON.stringify(v)}`);
      return undefined;
    }
    return v;
  }

  /** `host:port` (IPv6 in brackets). */
  hostPort(key: string): { host: string; port: number } {
    const v = this.string(key);
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(v);
    const port = m ? Number(m[2]) : NaN;
    if (!m || port < 1 || port > 65535) {
      if (v) this.problems.push(`${this.at(key)}: ${JSON.stringify(v)} is not host:port (port from 1 to 65535)`);
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
