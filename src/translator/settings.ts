// Inputs of the translator besides the plan, and its output.
import type { Cluster } from '../generated/envoy/config/cluster/v3/Cluster.js';
import type { ClusterLoadAssignment } from '../generated/envoy/config/endpoint/v3/ClusterLoadAssignment.js';
import type { Listener } from '../generated/envoy/config/listener/v3/Listener.js';
import type { RouteConfiguration } from '../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { IdentityHeaders } from './identityFilter.js';

/** The name every apiserver's serving certificate carries and peers verify (as upstream does). */
export const PEER_SERVER_NAME = 'kubernetes.default.svc';
/** The sidecar's bootstrap cluster for the control plane (ADS, and later ext_proc). */
export { CONTROL_PLANE_CLUSTER } from '../xds/bootstrap.js';

export interface TranslatorSettings {
  /** The public apiserver address: where clients connect to the sidecar. */
  listener: {
    address: string;
    port: number;
    /** Serving certificate and key presented to clients. */
    servingCertPath: string;
    servingKeyPath: string;
    /**
     * The cluster client CA: client certificates are optional, but one that is
     * presented must verify against it.
     */
    clientCaPath: string;
  };
  /** How the sidecar connects to every apiserver, its own included. */
  upstream: {
    /** Front-proxy client certificate (signed by the requestheader client CA). */
    frontProxyCertPath: string;
    frontProxyKeyPath: string;
    /** CA that signs apiserver serving certificates. */
    peerCaPath: string;
    /** SNI sent and DNS SAN required: PEER_SERVER_NAME. */
    serverName: string;
    /**
     * An HTTP CONNECT proxy that connections to PEERS go through (as upstream's
     * --egress-selector-config-file does for its peer proxy); the local
     * apiserver is always reached directly.
     */
    egressProxy?: { host: string; port: number };
  };
  /** Bootstrap cluster of the control plane (CONTROL_PLANE_CLUSTER): ext_proc and the access log call it. */
  controlPlaneCluster: string;
  /** The certificate-identity filter that runs inside Envoy. */
  identityFilter: {
    /** The compiled module (dist/envoy/identity-filter.wasm), sent inline. */
    module: Uint8Array;
    /** Default: X-Remote-User, X-Remote-Uid, X-Remote-Group, X-Remote-Extra-. */
    headers?: IdentityHeaders;
  };
}

/** Everything one sidecar gets over ADS, each list sorted by name. */
export interface EnvoyResources {
  clusters: Cluster[];
  endpoints: ClusterLoadAssignment[];
  listeners: Listener[];
  routes: RouteConfiguration[];
}
