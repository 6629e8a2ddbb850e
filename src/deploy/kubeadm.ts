// What `mvproxy deploy kubeadm` writes for each control-plane node: the static
// pods of the node's control-plane replica and Envoy sidecar, the replica's
// config, the sidecar's bootstrap and the kubeadm patch that moves the
// apiserver off the public port. Pure: a layout in, file contents out; the
// command line (src/cli/deploy.ts) writes them. Configs, bootstraps and
// command lines come from replica.ts, as the sandbox's do.
import { posix } from 'node:path';
import { sidecarBootstrap, type JsonObject, type JsonValue } from '../xds/bootstrap.js';
import { RELOAD_MARKER } from '../xds/reloadMarker.js';
import {
  replicaServeConfig,
  serveArgs,
  IMAGE_PROGRAM,
  REPLICA_ENV,
  REPLICA_NODE_FLAGS,
  sidecarControlPlanes,
  sidecarEnvoyArgs,
  DEFAULT_ENVOY_CONCURRENCY,
  type ClusterTlsFiles,
  type NodeApiserver,
  type ReplicaTuning,
} from './replica.js';

/** The files one node's replica and sidecar use, as paths on that node. */
export interface NodeFiles {
  /** `mvproxy serve --config`. */
  config: string;
  /** The sidecar's Envoy bootstrap. */
  bootstrap: string;
  /** The replica's kubeconfig (the identity deploy/rbac.yaml binds). */
  kubeconfig: string;
  xdsSocket: string;
  adminSocket: string;
  envoyAdminSocket: string;
  warmStartFile: string;
  /** The replica's mutual-TLS xDS serving pair, and the CA of every xDS certificate (servers' and sidecars'). */
  xdsServerCert: string;
  xdsServerKey: string;
  xdsCa: string;
  /** The sidecar's xDS client pair: CN (or DNS SAN) = the node's apiserver name. */
  xdsClientCert: string;
  xdsClientKey: string;
}

export interface DeployNode {
  apiserver: NodeApiserver;
  /** `host:port` of the replica's mutual-TLS xDS listener (an IP address: sidecars fail over to it). */
  xdsTcpListen: string;
  /** `host:port` of the replica's /metrics, /status, /healthz (loopback). */
  adminListen: string;
  /** Loopback port of the sidecar's Prometheus stats listener (GET /stats/prometheus only). */
  statsPort: number;
  files: NodeFiles;
}

export interface DeployLayout {
  nodes: DeployNode[];
  tls: ClusterTlsFiles;
  /** DNS SAN of every replica's xDS serving certificate, sent as SNI. */
  xdsServerName: string;
  /** The mvproxy image (built by the operator: deploy/Dockerfile) and Envoy's. */
  image: string;
  envoyImage: string;
  logLevel: string;
  /** Envoy's --drain-time-s. */
  drainSeconds: number;
  /** Envoy's --concurrency: the sidecar's worker threads. */
  envoyConcurrency: number;
  tuning: ReplicaTuning;
}

/** A file to write under the node's folder: `path` is where it goes on the node. */
export interface RenderedFile {
  path: string;
  /** `yaml` for manifests, `json` for what mvproxy and Envoy read. */
  format: 'yaml' | 'json';
  content: JsonValue;
}

export const KUBEADM_DEFAULTS = {
  pkiDir: '/etc/kubernetes/pki',
  manifestsDir: '/etc/kubernetes/manifests',
  configDir: '/etc/mvproxy',
  runDir: '/run/mvproxy',
  stateDir: '/var/lib/mvproxy',
  apiserverPort: 6444,
  sidecarPort: 6443,
  xdsPort: 18000,
  adminPort: 9464,
  statsPort: 9465,
  xdsServerName: 'mvproxy-xds',
  envoyImage: 'docker.io/envoyproxy/envoy:v1.40.0',
  logLevel: 'warn',
  drainSeconds: 10,
  envoyConcurrency: DEFAULT_ENVOY_CONCURRENCY,
} as const;

/** Where kubeadm reads patches from (`--patches DIR`), one folder per node. */
export const KUBEADM_PATCHES_DIR = `${KUBEADM_DEFAULTS.configDir}/kubeadm-patches`;

export interface KubeadmNode {
  /** The node's name, also the apiserver's name in the config and its sidecar's xDS node id. */
  name: string;
  /** The address the apiserver advertises (kubeadm's advertiseAddress). */
  ip: string;
  /** The node's host name, as its apiserver's identity lease says; default `name`. */
  hostname?: string;
}

/** The layout of a kubeadm cluster: the same paths on every node, the node's own /etc/kubernetes/pki files as they are. */
export function kubeadmLayout(
  nodes: KubeadmNode[],
  opts: { image: string; envoyImage?: string; envoyConcurrency?: number; tuning?: ReplicaTuning },
): DeployLayout {
  const d = KUBEADM_DEFAULTS;
  const pki = (f: string): string => `${d.pkiDir}/${f}`;
  const conf = (f: string): string => `${d.configDir}/${f}`;
  const hostPort = (ip: string, port: number): string => `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
  return {
    nodes: nodes.map((n) => ({
      apiserver: {
        name: n.name,
        hostname: n.hostname ?? n.name,
        address: hostPort(n.ip, d.apiserverPort),
        sidecarListen: hostPort(n.ip, d.sidecarPort),
        servingCert: pki('apiserver.crt'),
        servingKey: pki('apiserver.key'),
      },
      xdsTcpListen: hostPort(n.ip, d.xdsPort),
      adminListen: `127.0.0.1:${d.adminPort}`,
      statsPort: d.statsPort,
      files: {
        config: conf('mvproxy.json'),
        bootstrap: conf('envoy.json'),
        kubeconfig: conf('mvproxy.kubeconfig'),
        xdsSocket: `${d.runDir}/xds.sock`,
        adminSocket: `${d.runDir}/admin.sock`,
        envoyAdminSocket: `${d.runDir}/envoy-admin.sock`,
        warmStartFile: `${d.stateDir}/warm-start.json`,
        xdsServerCert: conf('pki/xds-server.crt'),
        xdsServerKey: conf('pki/xds-server.key'),
        xdsCa: conf('pki/xds-ca.crt'),
        xdsClientCert: conf('pki/xds-client.crt'),
        xdsClientKey: conf('pki/xds-client.key'),
      },
    })),
    tls: {
      clientCa: pki('ca.crt'),
      frontProxyClientCert: pki('front-proxy-client.crt'),
      frontProxyClientKey: pki('front-proxy-client.key'),
      peerCa: pki('ca.crt'),
    },
    xdsServerName: d.xdsServerName,
    image: opts.image,
    envoyImage: opts.envoyImage ?? d.envoyImage,
    logLevel: d.logLevel,
    drainSeconds: d.drainSeconds,
    envoyConcurrency: opts.envoyConcurrency ?? d.envoyConcurrency,
    tuning: opts.tuning ?? {},
  };
}

function nodeOf(layout: DeployLayout, name: string): DeployNode {
  const node = layout.nodes.find((n) => n.apiserver.name === name);
  if (!node) throw new Error(`no node ${name} (have: ${layout.nodes.map((n) => n.apiserver.name).join(', ')})`);
  return node;
}

/** The node's `mvproxy serve` config: every apiserver, this node's sockets and its mutual-TLS listener. */
export function nodeServeConfig(layout: DeployLayout, name: string): JsonObject {
  const node = nodeOf(layout, name);
  const f = node.files;
  return replicaServeConfig(
    layout.nodes.map((n) => n.apiserver),
    layout.tls,
    {
      replicaName: `mvproxy-${name}`,
      kubeconfig: f.kubeconfig,
      xdsSocket: f.xdsSocket,
      xdsTcp: { listen: node.xdsTcpListen, cert: f.xdsServerCert, key: f.xdsServerKey, clientCa: f.xdsCa },
      adminListen: node.adminListen,
      adminSocket: f.adminSocket,
      warmStartFile: f.warmStartFile,
    },
    layout.tuning,
  );
}

/** The node's sidecar bootstrap: its own replica on the Unix socket, the other nodes' replicas as failover. */
export function nodeSidecarBootstrap(layout: DeployLayout, name: string): JsonObject {
  const node = nodeOf(layout, name);
  const f = node.files;
  const others = layout.nodes.filter((n) => n !== node).map((n) => n.xdsTcpListen);
  const [controlPlane, ...failover] = sidecarControlPlanes(f.xdsSocket, others, {
    ca: f.xdsCa,
    cert: f.xdsClientCert,
    key: f.xdsClientKey,
    serverName: layout.xdsServerName,
  });
  if (!controlPlane) throw new Error('internal: no control plane address');
  return sidecarBootstrap({ nodeId: name, controlPlane, failover, admin: { unixSocket: f.envoyAdminSocket }, stats: { port: node.statsPort } });
}

interface Mount {
  dir: string;
  writable: boolean;
}

/** Host folders a container needs, ancestors only: writable when anything under them is written. */
export function hostMounts(read: string[], written: string[]): Mount[] {
  const all = [...read.map((p) => ({ dir: posix.dirname(p), writable: false })), ...written.map((p) => ({ dir: posix.dirname(p), writable: true }))];
  const under = (child: string, parent: string): boolean => child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);
  const roots = [...new Set(all.map((m) => m.dir))].sort().filter((dir, _, dirs) => !dirs.some((other) => other !== dir && under(dir, other)));
  return roots.map((dir) => ({ dir, writable: all.some((m) => m.writable && under(m.dir, dir)) }));
}

function volumeName(dir: string): string {
  const name = dir
    .replace(/[^a-z0-9]+/gi, '-')
    .replace(/^-+|-+$/g, '')
    .toLowerCase();
  return (name || 'root').slice(0, 63).replace(/-+$/, '');
}

function staticPod(name: string, container: JsonObject, mounts: Mount[], extraSpec: JsonObject): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'kube-system', labels: { component: name, tier: 'control-plane' } },
    spec: {
      hostNetwork: true,
      priorityClassName: 'system-node-critical',
      // Both read the node's keys as they are (root-only files), as kube-apiserver does.
      securityContext: { runAsUser: 0, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          ...container,
          imagePullPolicy: 'IfNotPresent',
          volumeMounts: mounts.map((m) => ({ name: volumeName(m.dir), mountPath: m.dir, readOnly: !m.writable })),
        },
      ],
      volumes: mounts.map((m) => ({ name: volumeName(m.dir), hostPath: { path: m.dir, type: m.writable ? 'DirectoryOrCreate' : 'Directory' } })),
      ...extraSpec,
    },
  };
}

function port(hostPort: string): number {
  return Number(/:(\d+)$/.exec(hostPort)?.[1] ?? NaN);
}

/** Every certificate, key and CA file the replicas' config names for the sidecars (the replica reads them all). */
function sidecarCertificateFiles(layout: DeployLayout): string[] {
  return [...Object.values(layout.tls), ...layout.nodes.flatMap((n) => [n.apiserver.servingCert, n.apiserver.servingKey])];
}

/** `mvproxy serve` on the node: one replica per node, no leader. */
export function controlPlanePod(layout: DeployLayout, name: string): JsonObject {
  const node = nodeOf(layout, name);
  const f = node.files;
  const certificates = sidecarCertificateFiles(layout);
  const read = [f.config, f.kubeconfig, f.xdsServerCert, f.xdsServerKey, f.xdsCa, ...certificates];
  const reloadMarkers = [...new Set(certificates.map((file) => posix.join(posix.dirname(file), RELOAD_MARKER)))].sort();
  const host = /^(.*):\d+$/.exec(node.adminListen)?.[1]?.replace(/^\[|\]$/g, '') ?? '127.0.0.1';
  return staticPod(
    'mvproxy-control-plane',
    {
      name: 'mvproxy',
      image: layout.image,
      command: ['node', ...REPLICA_NODE_FLAGS, IMAGE_PROGRAM, ...serveArgs(f.config, layout.logLevel)],
      env: Object.entries(REPLICA_ENV).map(([name, value]) => ({ name, value })),
      resources: { requests: { cpu: '100m', memory: '128Mi' } },
      // A hung replica is restarted; its sidecar streams from another replica meanwhile.
      livenessProbe: {
        httpGet: { host, port: port(node.adminListen), path: '/healthz', scheme: 'HTTP' },
        initialDelaySeconds: 10,
        periodSeconds: 10,
        timeoutSeconds: 5,
        failureThreshold: 6,
      },
      // Not ready while the kubernetes Service's publisher has not been publishing for a minute (/readyz, docs/operating.md): shown, never restarted.
      readinessProbe: {
        httpGet: { host, port: port(node.adminListen), path: '/readyz', scheme: 'HTTP' },
        periodSeconds: 10,
        timeoutSeconds: 5,
        failureThreshold: 1,
      },
    },
    // The replica renames a reload marker beside certificate files rewritten in place (kubeadm certs renew), so Envoy re-reads them.
    hostMounts(read, [f.xdsSocket, f.adminSocket, f.warmStartFile, ...reloadMarkers]),
    {},
  );
}

/**
 * Envoy in front of the node's apiserver. No probes: the sidecar's health is
 * its apiserver's, and a probe through it would restart it with its
 * apiserver (say, during that apiserver's upgrade, when it routes to peers).
 */
export function sidecarPod(layout: DeployLayout, name: string): JsonObject {
  const node = nodeOf(layout, name);
  const f = node.files;
  const read = [f.bootstrap, f.xdsClientCert, f.xdsClientKey, f.xdsCa, node.apiserver.servingCert, node.apiserver.servingKey, ...Object.values(layout.tls)];
  return staticPod(
    'mvproxy-sidecar',
    {
      name: 'envoy',
      image: layout.envoyImage,
      // The program itself, not the image's entrypoint (which would drop to a user that cannot read the keys).
      command: ['envoy', ...sidecarEnvoyArgs(f.bootstrap, layout.drainSeconds, layout.envoyConcurrency)],
      resources: { requests: { cpu: '100m', memory: '64Mi' } },
    },
    hostMounts(read, [f.xdsSocket, f.envoyAdminSocket]),
    { terminationGracePeriodSeconds: layout.drainSeconds + 5 },
  );
}

/**
 * A JSON patch (RFC 6902) of kubeadm's kube-apiserver static pod, for
 * `kubeadm ... --patches DIR` (file `kube-apiserver+json.json`) and for the
 * live manifest (`kubectl patch --local --type json`): the apiserver moves to
 * the node's apiserver port (its probes follow: kubeadm probes the named port
 * `probe-port`), and takes certificate UIDs from the front proxy, which
 * kubeadm does not ask for. A flag given twice keeps its last value.
 */
export function apiserverPatch(layout: DeployLayout, name: string): JsonValue {
  const node = nodeOf(layout, name);
  const apiserverPort = port(node.apiserver.address);
  return [
    { op: 'test', path: '/spec/containers/0/name', value: 'kube-apiserver' },
    { op: 'add', path: '/spec/containers/0/command/-', value: `--secure-port=${apiserverPort}` },
    { op: 'add', path: '/spec/containers/0/command/-', value: '--requestheader-uid-headers=X-Remote-Uid' },
    { op: 'test', path: '/spec/containers/0/ports/0/name', value: 'probe-port' },
    { op: 'replace', path: '/spec/containers/0/ports/0/containerPort', value: apiserverPort },
  ];
}

/**
 * The switch to mvproxy publishing the `kubernetes` Service's endpoints: the
 * apiserver stops publishing itself (`kube-apiserver1+json.json`, applied after
 * the patch above). Every apiserver must run it before any replica publishes,
 * or the ones still on the lease reconciler rewrite the objects every 10 s
 * (docs/kubeadm.md, "Publishing the kubernetes Service").
 */
export function endpointReconcilerPatch(): JsonValue {
  return [
    { op: 'test', path: '/spec/containers/0/name', value: 'kube-apiserver' },
    { op: 'add', path: '/spec/containers/0/command/-', value: '--endpoint-reconciler-type=none' },
  ];
}

/** Every file of one node, at its path on the node. */
export function renderKubeadmNode(
  layout: DeployLayout,
  name: string,
  dirs = { manifests: KUBEADM_DEFAULTS.manifestsDir, patches: KUBEADM_PATCHES_DIR },
): RenderedFile[] {
  const f = nodeOf(layout, name).files;
  return [
    { path: `${dirs.manifests}/mvproxy-control-plane.yaml`, format: 'yaml', content: controlPlanePod(layout, name) },
    { path: `${dirs.manifests}/mvproxy-sidecar.yaml`, format: 'yaml', content: sidecarPod(layout, name) },
    { path: f.config, format: 'json', content: nodeServeConfig(layout, name) },
    { path: f.bootstrap, format: 'json', content: nodeSidecarBootstrap(layout, name) },
    { path: `${dirs.patches}/kube-apiserver+json.json`, format: 'json', content: apiserverPatch(layout, name) },
    ...(layout.tuning.publishKubernetesService
      ? [{ path: `${dirs.patches}/kube-apiserver1+json.json`, format: 'json' as const, content: endpointReconcilerPatch() }]
      : []),
  ];
}
