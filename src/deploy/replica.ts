// What runs on one control-plane node, whoever starts it (the sandbox, or
// kubelet from the static pods of deploy/kubeadm): the `mvproxy serve` config
// of the node's replica, its command line, the sidecar's control-plane
// addresses (own replica first, the others as failover) and Envoy's command
// line. Pure: the sandbox and `mvproxy deploy kubeadm` both build from here,
// so what the tests run is what the manifests run.
import type { ControlPlaneAddress, JsonObject } from '../xds/bootstrap.js';

/** One apiserver with its sidecar, as every replica's config lists it. */
export interface NodeApiserver {
  /** The apiserver's name in the config: the xDS node id of its sidecar. */
  name: string;
  /** Its identity lease's `kubernetes.io/hostname`. */
  hostname: string;
  /** `host:port` where the apiserver itself listens (sidecars dial it there). */
  address: string;
  /** `host:port` the sidecar takes over. */
  sidecarListen: string;
  /** `host:port` pods are sent to when its sidecar is not live (config `publish`; default `address`). */
  publish?: string;
  /** `host:port` pods are sent to for its sidecar (config `sidecar.publish`; default `sidecarListen`). */
  sidecarPublish?: string;
  servingCert: string;
  servingKey: string;
}

/** The files every replica's config names (same paths on every node). */
export interface ClusterTlsFiles {
  clientCa: string;
  frontProxyClientCert: string;
  frontProxyClientKey: string;
  peerCa: string;
}

/** One replica: where it serves its own node's sidecar, the other nodes' sidecars and its operator. */
export interface ReplicaSetting {
  replicaName: string;
  kubeconfig: string;
  xdsSocket: string;
  /** Mutual-TLS xDS for the other nodes' sidecars (absent: a single replica). */
  xdsTcp?: { listen: string; cert: string; key: string; clientCa: string };
  adminListen: string;
  adminSocket: string;
  warmStartFile: string;
}

/** Numbers an operator may tune (the sandbox polls faster); absent ones keep serve's defaults. */
export interface ReplicaTuning {
  departedGraceSeconds?: number;
  localOnlyGraceSeconds?: number;
  discoveryPollMillis?: number;
  peerEgressProxy?: string;
  /**
   * The replica publishes the `kubernetes` Service's endpoints (every sidecar's
   * listen address, each apiserver's own as the fallback): only once every
   * apiserver runs --endpoint-reconciler-type=none (docs/kubeadm.md).
   */
  publishKubernetesService?: boolean;
  /**
   * The `kubernetes` Service's ClusterIP (config `kubernetesService.clusterIp`),
   * required to publish: pods dial it, so each sidecar's certificate is verified
   * against it (serviceRange.ts derives it from the Service range).
   */
  kubernetesServiceIp?: string;
}

/** The config's `kubernetesService` part of a replica that publishes the Service (src/serve/config.ts). */
export function publishingSetting(clusterIp: string): JsonObject {
  return { publish: true, clusterIp };
}

/** The JSON file `mvproxy serve --config` reads (src/serve/config.ts validates it). */
export function replicaServeConfig(apiservers: NodeApiserver[], tls: ClusterTlsFiles, replica: ReplicaSetting, tuning: ReplicaTuning = {}): JsonObject {
  const config: JsonObject = {
    kubeconfig: replica.kubeconfig,
    apiservers: apiservers.map((a) => ({
      name: a.name,
      hostname: a.hostname,
      address: a.address,
      ...(a.publish === undefined ? {} : { publish: a.publish }),
      sidecar: {
        listen: a.sidecarListen,
        ...(a.sidecarPublish === undefined ? {} : { publish: a.sidecarPublish }),
        servingCert: a.servingCert,
        servingKey: a.servingKey,
      },
    })),
    tls: { clientCa: tls.clientCa, frontProxyClientCert: tls.frontProxyClientCert, frontProxyClientKey: tls.frontProxyClientKey, peerCa: tls.peerCa },
    xds: { unixSocket: replica.xdsSocket, ...(replica.xdsTcp ? { tcp: { ...replica.xdsTcp } } : {}) },
    admin: { listen: replica.adminListen, socket: replica.adminSocket },
    warmStartFile: replica.warmStartFile,
    replicaName: replica.replicaName,
  };
  if (tuning.peerEgressProxy !== undefined) config['peerEgressProxy'] = tuning.peerEgressProxy;
  if (tuning.publishKubernetesService) {
    if (tuning.kubernetesServiceIp === undefined) throw new Error('publishing the kubernetes Service needs its ClusterIP (kubernetesServiceIp)');
    config['kubernetesService'] = publishingSetting(tuning.kubernetesServiceIp);
  }
  for (const key of ['departedGraceSeconds', 'localOnlyGraceSeconds', 'discoveryPollMillis'] as const) {
    const value = tuning[key];
    if (value !== undefined) config[key] = value;
  }
  return config;
}

/**
 * The Node and V8 flags a replica runs with (before the program). V8's
 * defaults size the heap for throughput: a young generation of up to
 * 3 x 16 MiB, and an old generation that may grow to several times what is
 * live before a full collection. A replica's live data is small (about
 * 70 MiB with 500 CRDs, most of it the libraries' code) but a CRD storm makes
 * it allocate fast: with the defaults its peak RSS reached 300 to 390 MiB in
 * the fan-out bench, with these about 155 MiB. They cost CPU (more frequent
 * collections); docs/benchmark.md gives the replica's CPU per timed
 * fan-out change, with these flags, from the committed run.
 */
export const REPLICA_NODE_FLAGS: readonly string[] = ['--optimize-for-size', '--max-semi-space-size=1'];

/**
 * The environment a replica runs with, for glibc's malloc: two arenas, not
 * one per thread (Node runs several), and blocks of 128 KiB or more always
 * mapped on their own, so the memory of a large push goes back to the system
 * when the push is done (by default glibc raises that threshold as large
 * blocks are freed, and keeps them).
 */
export const REPLICA_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };

/** Where the Dockerfile installs the program (deploy/Dockerfile). */
export const IMAGE_PROGRAM = '/opt/mvproxy/dist/src/cli/main.js';

/** `mvproxy serve`'s arguments (after the program). */
export function serveArgs(configPath: string, logLevel: string): string[] {
  return ['serve', `--config=${configPath}`, `--log-level=${logLevel}`];
}

/** The sidecar's mutual-TLS client files for the other nodes' replicas. */
export interface SidecarXdsTls {
  ca: string;
  cert: string;
  key: string;
  /** SNI sent to every replica, a DNS SAN of each replica's serving certificate. */
  serverName: string;
}

/**
 * Where a sidecar finds the control plane: its own node's replica on the
 * Unix socket first, then every other replica (`host:port`, IP addresses)
 * over mutual TLS with the sidecar's own client certificate.
 */
export function sidecarControlPlanes(ownXdsSocket: string, others: string[], tls: SidecarXdsTls | undefined): ControlPlaneAddress[] {
  if (others.length > 0 && !tls) throw new Error('failover replicas need the sidecar xDS client certificate');
  return [
    { unixSocket: ownXdsSocket },
    ...others.map((hostPort): ControlPlaneAddress => {
      const m = /^(.+):(\d+)$/.exec(hostPort);
      if (!m || !tls) throw new Error(`control-plane replica ${JSON.stringify(hostPort)} is not host:port`);
      return {
        host: (m[1] ?? '').replace(/^\[|\]$/g, ''),
        port: Number(m[2]),
        tls: { ca: { filename: tls.ca }, cert: { filename: tls.cert }, key: { filename: tls.key }, serverName: tls.serverName },
      };
    }),
  ];
}

/**
 * The sidecar's Envoy worker threads (`--concurrency`) unless told otherwise.
 * Envoy's own default is one per hardware thread, and every worker runs its
 * own WASM VMs, each holding its own copy of the documents the control plane
 * pushed: on a 64-thread node that is 64 copies. A sidecar serves one
 * apiserver, which two workers keep up with (docs/operating.md, "The sidecar's
 * workers").
 */
export const DEFAULT_ENVOY_CONCURRENCY = 2;

/**
 * Envoy's arguments (after the program). `--use-dynamic-base-id`: several
 * Envoys may share a host (the sandbox) or an IPC namespace; `--drain-time-s`:
 * how long a stopping sidecar lets open connections finish; `--concurrency`:
 * its worker threads (DEFAULT_ENVOY_CONCURRENCY).
 */
export function sidecarEnvoyArgs(bootstrapPath: string, drainSeconds: number, concurrency: number = DEFAULT_ENVOY_CONCURRENCY): string[] {
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`Envoy's concurrency must be a positive integer, got ${concurrency}`);
  // Immediate: connections of a replaced filter chain (a client CA bundle change) are told to
  // close at once (GOAWAY, Connection: close after the response in flight); the gradual strategy
  // cut busy HTTP/1.1 keep-alive connections at the drain's end instead (docs/identity.md, Rotation).
  return [
    '-c',
    bootstrapPath,
    '--use-dynamic-base-id',
    '-l',
    'warning',
    '--drain-time-s',
    String(drainSeconds),
    '--drain-strategy',
    'immediate',
    '--concurrency',
    String(concurrency),
  ];
}
