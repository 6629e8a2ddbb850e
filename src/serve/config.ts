// `mvproxy serve` configuration: a JSON file written by the operator, read in
// one place, its schema (zod, below): every key's type, range and default,
// the checks between keys, and the settings the rest of the code reads
// (ServeConfig), made once in the schema's transform: defaults applied, paths
// absolute, durations in milliseconds. Each setting keeps its key's name,
// only the unit suffix changing where the unit does (departedGraceSeconds ->
// departedGraceMs, discoveryPollMillis -> discoveryPollMs). Every missing,
// contradictory or out-of-range key is reported at once, with its path; every
// number has a range (LIMITS), so no value can make the control plane spin,
// starve or hold an apiserver forever.
//
// Peer addresses come only from here (the operator's file), never from the
// Kubernetes API: anything an ordinary user can write must not be able to
// point a sidecar's privileged front-proxy connection somewhere (SSRF).
import { readFileSync } from 'node:fs';
import { resolve, dirname } from 'node:path';
import { hostname } from 'node:os';
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import type { ApiserverEndpoint, NetworkAddress } from '../model/cluster.js';
import type { ConfigMapRef } from '../sources/configMapRecord.js';
import { DEFAULT_DRAIN_RECORD } from '../sources/drainRecord.js';
import { DEFAULT_LIVENESS_RECORD } from '../sources/livenessRecord.js';
import { DEFAULT_SYNC_RECORD } from '../sources/syncRecord.js';
import { DEFAULT_SIDECAR_LIMITS, PEER_SERVER_NAME } from '../translator/settings.js';
import { publishPlan, type KubernetesServiceConfig } from './configPublish.js';
import {
  boolean,
  configMapRef,
  dnsLabel,
  existingFile,
  hostPort,
  integer,
  ipAddress,
  LIST,
  nonEmptyString,
  OBJECT,
  ownPath,
  type ConfigLocation,
} from './configFields.js';

export interface SidecarListener extends NetworkAddress {
  /** The certificate clients see: the apiserver's own serving certificate. */
  servingCert: string;
  servingKey: string;
  /** Where pods reach this sidecar, for the `kubernetes` Service (configPublish.ts); default `listen`. */
  publish?: NetworkAddress;
}

export interface ServedApiserver extends ApiserverEndpoint {
  /** `sidecar.listen` and the sidecar's certificate. */
  sidecar: SidecarListener;
  /** Where pods reach the apiserver itself while its sidecar is not live (configPublish.ts); default `address`. */
  publish?: NetworkAddress;
}

/** The settings a config file gives, each named after its key (durations in milliseconds, suffix `Ms`). */
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
    /** SNI and expected SAN for apiserver connections; default PEER_SERVER_NAME. */
    peerServerName: string;
  };
  xds: {
    /** Unix socket for sidecars on this machine. */
    unixSocket?: string;
    /** Its file mode, set before anyone can connect: 0o600 (default) or 0o660 (for an Envoy running as another user of our group). */
    unixSocketMode: number;
    /** TCP with mutual TLS for sidecars elsewhere (`tcp.listen`, flattened). */
    tcp?: NetworkAddress & { cert: string; key: string; clientCa: string };
  };
  /** Operator endpoints: metrics and status over plain HTTP on `listen` (loopback unless allowRemote), the admin gRPC API on a Unix socket. */
  admin?: {
    listen?: NetworkAddress;
    socket?: string;
  };
  /** The ConfigMap every replica reads drains from and writes them to (sources/drainRecord.ts); default DEFAULT_DRAIN_RECORD. */
  drainRecord: ConfigMapRef;
  /** The ConfigMap where each replica says which config its sidecars ACKed (sources/syncRecord.ts); default DEFAULT_SYNC_RECORD. */
  syncRecord: ConfigMapRef;
  /** This replica's name in the sync record and in status; default the host name (one replica per node). */
  replicaName: string;
  /** HTTP CONNECT proxy for sidecar-to-peer connections (never for the local apiserver). */
  peerEgressProxy?: NetworkAddress;
  /** Where the model behind the last pushed snapshots is kept, to serve them again at once after a restart (warmStart.ts). */
  warmStartFile?: string;
  /** `departedGraceSeconds`: how long an apiserver whose lease went still counts (model/liveness.ts). */
  departedGraceMs: number;
  /** `localOnlyGraceSeconds`: how long a deleted CRD or APIService group-version stays local-only (sources/localOnlyWatcher.ts). */
  localOnlyGraceMs: number;
  /** `discoveryPollMillis`: how often each apiserver's discovery is read (sources/discoveryFetcher.ts). */
  discoveryPollMs: number;
  /** A discovery, OpenAPI index or /readyz body larger than this is refused (that document only; the apiserver did answer). */
  discoveryMaxBodyBytes: number;
  /** The apiservers' --request-timeout: sidecars answer 504 to a request that is not long-running 5 s after it (docs/operating.md, "Limits"). */
  requestTimeoutSeconds: number;
  /** `certificatePollMillis`: how often the certificate files are read for in-place rewrites and client CA changes (certificateFiles.ts). */
  certificatePollMs: number;
  /** Set when this replica publishes the `kubernetes` Service's endpoints (`kubernetesService.publish`, off by default). */
  kubernetesService?: KubernetesServiceConfig;
}

/** The range and default of every number in the file: [min, max, default]. Integers only. */
export const LIMITS = {
  departedGraceSeconds: [10, 3600, 300],
  localOnlyGraceSeconds: [10, 3600, 300],
  discoveryPollMillis: [100, 60_000, 1000],
  discoveryMaxBodyBytes: [1024 * 1024, 256 * 1024 * 1024, 32 * 1024 * 1024],
  requestTimeoutSeconds: [1, 86_400, DEFAULT_SIDECAR_LIMITS.requestTimeoutSeconds],
  certificatePollMillis: [100, 60_000, 5000],
} as const satisfies Record<string, readonly [number, number, number]>;

/** The file as written, checked key by key: what the transform (settingsOf) makes the settings from. */
function configFileSchema(at: ConfigLocation) {
  const file = existingFile(at);
  const path = ownPath(at);
  const apiserver = z.object(
    {
      name: dnsLabel,
      hostname: nonEmptyString,
      address: hostPort,
      publish: hostPort.optional(),
      sidecar: z.object({ listen: hostPort, publish: hostPort.optional(), servingCert: file, servingKey: file }, OBJECT),
    },
    OBJECT,
  );
  return z.object(
    {
      kubeconfig: file,
      apiservers: z.array(apiserver, LIST).min(1, 'list at least one apiserver').superRefine(distinctApiservers),
      tls: z.object(
        { clientCa: file, frontProxyClientCert: file, frontProxyClientKey: file, peerCa: file, peerServerName: nonEmptyString.default(PEER_SERVER_NAME) },
        OBJECT,
      ),
      xds: z
        .object(
          {
            unixSocket: path.optional(),
            // Owner only, or owner and group (never others: xDS hands out every sidecar's configuration).
            unixSocketMode: z.enum(['0600', '0660'], { error: (issue) => `${JSON.stringify(issue.input)} is not one of 0600, 0660` }).default('0600'),
            tcp: z.object({ listen: hostPort, cert: file, key: file, clientCa: file }, OBJECT).optional(),
          },
          OBJECT,
        )
        .refine(
          (xds) => xds.unixSocket !== undefined || xds.tcp !== undefined,
          'set unixSocket, tcp, or both (sidecars need a way to reach the control plane)',
        ),
      admin: z
        .object(
          {
            listen: hostPort.optional(),
            allowRemote: boolean.default(false),
            socket: path.optional(),
            drainFile: z.never({ error: 'drains now live in the Kubernetes API, shared by every replica (drainRecord); remove this field' }).optional(),
          },
          OBJECT,
        )
        .superRefine(adminReach)
        .optional(),
      drainRecord: configMapRef.default(() => ({ ...DEFAULT_DRAIN_RECORD })),
      syncRecord: configMapRef.default(() => ({ ...DEFAULT_SYNC_RECORD })),
      replicaName: nonEmptyString.max(253, 'must be 1 to 253 characters').default(() => hostname()),
      peerEgressProxy: hostPort.optional(),
      warmStartFile: path.optional(),
      kubernetesService: z
        .object(
          { publish: boolean.default(false), clusterIp: ipAddress.optional(), livenessRecord: configMapRef.default(() => ({ ...DEFAULT_LIVENESS_RECORD })) },
          OBJECT,
        )
        .optional(),
      departedGraceSeconds: integer(LIMITS.departedGraceSeconds),
      localOnlyGraceSeconds: integer(LIMITS.localOnlyGraceSeconds),
      discoveryPollMillis: integer(LIMITS.discoveryPollMillis),
      discoveryMaxBodyBytes: integer(LIMITS.discoveryMaxBodyBytes),
      requestTimeoutSeconds: integer(LIMITS.requestTimeoutSeconds),
      certificatePollMillis: integer(LIMITS.certificatePollMillis),
    },
    { error: 'the file must hold a JSON object' },
  );
}

type ConfigFile = z.output<ReturnType<typeof configFileSchema>>;
type Check = z.core.$RefinementCtx;

/** The config file's schema: its output is the settings. */
export function serveConfigSchema(at: ConfigLocation): z.ZodType<ServeConfig> {
  return configFileSchema(at)
    .check(z.superRefine(distinctRecords, whenValid('drainRecord', 'syncRecord')))
    .check(z.superRefine(publishable, whenValid('apiservers', 'drainRecord', 'syncRecord', 'replicaName', 'kubernetesService')))
    .transform(settingsOf);
}

/**
 * Runs a check between keys once the keys it reads are valid, whatever the
 * others: so its problems are reported with theirs, all at once. Another
 * check's contradiction makes no key invalid.
 */
function whenValid(...keys: (keyof ConfigFile)[]) {
  const read = new Set<PropertyKey>(keys);
  const invalidates = (issue: { path?: PropertyKey[]; params?: Record<string, unknown> }): boolean =>
    issue.params?.['between'] !== true && (issue.path?.[0] === undefined || read.has(issue.path[0]));
  return { when: (payload: { issues: z.core.$ZodRawIssue[] }) => !payload.issues.some(invalidates) };
}

/** A problem between keys, reported at `path`. */
function contradiction(ctx: Check, path: PropertyKey[], message: string): void {
  ctx.addIssue({ code: 'custom', path, message, params: { between: true } });
}

/** The settings, made once from the checked file (defaults already applied): the only place a unit, a name or a layout changes. */
function settingsOf(file: ConfigFile): ServeConfig {
  const { xds, admin } = file;
  const apiservers = file.apiservers.map(servedApiserver);
  const service = file.kubernetesService;
  const plan = service?.publish ? publishPlan(apiservers, []) : undefined; // its problems were reported by `publishable`
  return {
    kubeconfig: file.kubeconfig,
    apiservers,
    tls: file.tls,
    xds: {
      ...(xds.unixSocket === undefined ? {} : { unixSocket: xds.unixSocket }),
      unixSocketMode: Number.parseInt(xds.unixSocketMode, 8),
      ...(xds.tcp ? { tcp: { ...xds.tcp.listen, cert: xds.tcp.cert, key: xds.tcp.key, clientCa: xds.tcp.clientCa } } : {}),
    },
    ...(admin ? { admin: { ...(admin.listen ? { listen: admin.listen } : {}), ...(admin.socket === undefined ? {} : { socket: admin.socket }) } } : {}),
    drainRecord: file.drainRecord,
    syncRecord: file.syncRecord,
    replicaName: file.replicaName,
    ...(file.peerEgressProxy ? { peerEgressProxy: file.peerEgressProxy } : {}),
    ...(file.warmStartFile === undefined ? {} : { warmStartFile: file.warmStartFile }),
    departedGraceMs: file.departedGraceSeconds * 1000,
    localOnlyGraceMs: file.localOnlyGraceSeconds * 1000,
    discoveryPollMs: file.discoveryPollMillis,
    discoveryMaxBodyBytes: file.discoveryMaxBodyBytes,
    requestTimeoutSeconds: file.requestTimeoutSeconds,
    certificatePollMs: file.certificatePollMillis,
    ...(service?.clusterIp !== undefined && plan ? { kubernetesService: { livenessRecord: service.livenessRecord, clusterIp: service.clusterIp, plan } } : {}),
  };
}

function servedApiserver(a: ConfigFile['apiservers'][number]): ServedApiserver {
  const { listen, publish, servingCert, servingKey } = a.sidecar;
  return {
    name: a.name,
    hostname: a.hostname,
    address: a.address,
    sidecar: { ...listen, servingCert, servingKey, ...(publish ? { publish } : {}) },
    ...(a.publish ? { publish: a.publish } : {}),
  };
}

/** What tells the declared apiservers apart. */
interface DeclaredApiserver {
  name: string;
  hostname: string;
  address: NetworkAddress;
  sidecar: { listen: NetworkAddress };
}

function distinctApiservers(apiservers: DeclaredApiserver[], ctx: Check): void {
  const distinct = (what: string, values: string[]): void => {
    const dup = values.find((v, i) => values.indexOf(v) !== i);
    if (dup !== undefined) ctx.addIssue({ code: 'custom', message: `${what} ${dup} is used twice` });
  };
  distinct(
    'name',
    apiservers.map((a) => a.name),
  );
  distinct(
    'hostname',
    apiservers.map((a) => a.hostname),
  );
  distinct(
    'sidecar listen address',
    apiservers.map((a) => `${a.sidecar.listen.host}:${a.sidecar.listen.port}`),
  );
  apiservers.forEach(({ address, sidecar: { listen } }, i) => {
    if (listen.host === address.host && listen.port === address.port)
      ctx.addIssue({ code: 'custom', path: [i], message: `sidecar.listen and address are the same ${address.host}:${address.port}` });
  });
}

function adminReach(admin: { listen?: NetworkAddress | undefined; allowRemote: boolean; socket?: string | undefined }, ctx: Check): void {
  const host = admin.listen?.host;
  if (host !== undefined && !admin.allowRemote && !isLoopback(host))
    ctx.addIssue({
      code: 'custom',
      path: ['listen'],
      message: `${JSON.stringify(host)} is not a loopback address; /status and /metrics have no authentication (set admin.allowRemote: true to serve them beyond this machine anyway)`,
    });
  if (admin.listen === undefined && admin.socket === undefined)
    ctx.addIssue({ code: 'custom', message: 'set listen (metrics and status over HTTP), socket (the admin gRPC API), or both' });
}

const sameRef = (a: ConfigMapRef, b: ConfigMapRef): boolean => a.namespace === b.namespace && a.name === b.name;

function distinctRecords({ drainRecord, syncRecord }: ConfigFile, ctx: Check): void {
  if (sameRef(drainRecord, syncRecord)) contradiction(ctx, ['syncRecord'], 'must not be the drainRecord ConfigMap (its keys would read as drains)');
}

/** Publishing the `kubernetes` Service's endpoints needs its ClusterIP, a record of its own, a replica name usable as a key, and a plan (configPublish.ts). */
function publishable(file: ConfigFile, ctx: Check): void {
  if (!file.kubernetesService?.publish) return;
  const { livenessRecord, clusterIp } = file.kubernetesService;
  if (clusterIp === undefined)
    contradiction(
      ctx,
      ['kubernetesService', 'clusterIp'],
      "required while kubernetesService.publish is true: the `kubernetes` Service's ClusterIP (the first address of --service-cluster-ip-range), which pods dial and each sidecar's certificate is verified against",
    );
  if (sameRef(livenessRecord, file.drainRecord) || sameRef(livenessRecord, file.syncRecord))
    contradiction(ctx, ['kubernetesService', 'livenessRecord'], 'must be a ConfigMap of its own (not the drainRecord or syncRecord)');
  if (!/^[-._a-zA-Z0-9]+$/.test(file.replicaName)) contradiction(ctx, ['replicaName'], 'must be a ConfigMap key (letters, digits, -, _ and .) to publish');
  // publishPlan names each problem's key itself (by apiserver name).
  const problems: string[] = [];
  publishPlan(file.apiservers.map(servedApiserver), problems);
  for (const message of problems) contradiction(ctx, [], message);
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid mvproxy configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Reads and validates a config file; relative paths are relative to the file. */
export function loadServeConfig(path: string): ServeConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError([`${path}: ${(err as Error).message}`]);
  }
  return parseServeConfig(raw, dirname(resolve(path)), true);
}

/** Validates a parsed config object. `checkFiles` also requires every referenced file to exist. */
export function parseServeConfig(raw: unknown, baseDir: string, checkFiles: boolean): ServeConfig {
  const parsed = serveConfigSchema({ baseDir, checkFiles }).safeParse(raw);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map(problemText));
  return parsed.data;
}

/** `apiservers[0].sidecar.listen: <what is wrong>`; a problem about the whole file, or one that names its key itself, is its message alone. */
function problemText(issue: z.core.$ZodIssue): string {
  const key = issue.path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i === 0 ? '' : '.'}${String(k)}`)).join('');
  return key ? `${key}: ${issue.message}` : issue.message;
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
