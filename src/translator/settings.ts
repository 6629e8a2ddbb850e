// Inputs of the translator besides the plan, and its output.
import type { Cluster } from '../generated/envoy/config/cluster/v3/Cluster.js';
import type { ClusterLoadAssignment } from '../generated/envoy/config/endpoint/v3/ClusterLoadAssignment.js';
import type { Listener } from '../generated/envoy/config/listener/v3/Listener.js';
import type { RouteConfiguration } from '../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { Secret } from '../generated/envoy/extensions/transport_sockets/tls/v3/Secret.js';
import type { TypedExtensionConfig } from '../generated/envoy/config/core/v3/TypedExtensionConfig.js';

/** The name every apiserver's serving certificate carries and peers verify (as upstream does). */
export const PEER_SERVER_NAME = 'kubernetes.default.svc';

/** The headers kube-apiserver reads identity from (its --requestheader-*-headers flags). */
export interface IdentityHeaders {
  userHeader: string;
  uidHeader: string;
  groupHeader: string;
  extraHeaderPrefix: string;
}

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
    /**
     * SHA-256 (hex) of the client CA bundle as the control plane last read
     * it: a change drains the client connections made under the old bundle
     * (listener.ts, clientCaMetadata). Unset: not known (never drained).
     */
    clientCaSha256?: string;
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
  /** Bootstrap cluster of the control plane (CONTROL_PLANE_CLUSTER, src/xds/bootstrap.ts): ext_proc and the access log call it. */
  controlPlaneCluster: string;
  /** The compiled identity module (dist/envoy/identity.wasm: the identity filter), sent inline over ECDS. */
  filterModule: Uint8Array;
  /** The compiled document module (dist/envoy/documents.wasm: the document filters, in a VM of their own), sent inline over ECDS. */
  documentModule: Uint8Array;
  /** The headers the identity filter sets. Default: X-Remote-User, X-Remote-Uid, X-Remote-Group, X-Remote-Extra-. */
  identityHeaders?: IdentityHeaders;
  /**
   * What the listener allows a client; each missing field is kube-apiserver's
   * default (DEFAULT_SIDECAR_LIMITS). The control plane always sets
   * requestTimeoutSeconds (the serve config's, whose default is this one).
   */
  limits?: Partial<SidecarLimits>;
}

/**
 * The sidecar listener's limits, each matched to kube-apiserver's own so that
 * the sidecar is at least as strict and never stricter (docs/never-worse.md).
 * Set them to the apiservers' flags where those are not the defaults.
 */
export interface SidecarLimits {
  /**
   * The apiservers' `--request-timeout` (default 60 s: `RequestTimeout` in
   * k8s.io/apiserver/pkg/server/config.go). An apiserver answers a request it
   * does not treat as long-running with its own 504 by then
   * (WithRequestDeadline, WithTimeoutForNonLongRunningRequests); the sidecar
   * gives such a request REQUEST_TIMEOUT_MARGIN_SECONDS more before it answers
   * that 504 itself, which only a hung apiserver ever makes it do.
   */
  requestTimeoutSeconds: number;
  /**
   * How long a client may take to finish its TLS handshake, and then each
   * request's headers: kube-apiserver's `ReadHeaderTimeout` (32 s, "just shy of
   * requestTimeoutUpperBound", k8s.io/apiserver/pkg/server/secure_serving.go;
   * Go's TLS handshake timeout is the same value). Not a kube-apiserver flag;
   * tests shorten it.
   */
  readHeaderTimeoutSeconds: number;
  /**
   * The apiservers' `--http2-max-streams-per-connection` (0, the default,
   * means 100 in secure_serving.go). Concurrent streams per client HTTP/2
   * connection; a client that needs more opens another connection.
   */
  http2MaxStreamsPerConnection: number;
}

/** kube-apiserver's own values (see SidecarLimits); requestTimeoutSeconds is also the serve config's default (serve/config.ts, LIMITS). */
export const DEFAULT_SIDECAR_LIMITS: Readonly<SidecarLimits> = {
  requestTimeoutSeconds: 60,
  readHeaderTimeoutSeconds: 32,
  http2MaxStreamsPerConnection: 100,
};

/** The limits of `settings`, defaults filled in. */
export function sidecarLimits(settings: Pick<TranslatorSettings, 'limits'>): SidecarLimits {
  const given = settings.limits ?? {};
  return {
    requestTimeoutSeconds: given.requestTimeoutSeconds ?? DEFAULT_SIDECAR_LIMITS.requestTimeoutSeconds,
    readHeaderTimeoutSeconds: given.readHeaderTimeoutSeconds ?? DEFAULT_SIDECAR_LIMITS.readHeaderTimeoutSeconds,
    http2MaxStreamsPerConnection: given.http2MaxStreamsPerConnection ?? DEFAULT_SIDECAR_LIMITS.http2MaxStreamsPerConnection,
  };
}

/** Everything one sidecar gets over ADS, each list sorted by name. */
export interface EnvoyResources {
  clusters: Cluster[];
  endpoints: ClusterLoadAssignment[];
  listeners: Listener[];
  routes: RouteConfiguration[];
  /** The SDS secrets the listener and clusters name (secrets.ts). */
  secrets: Secret[];
  /** ECDS: the identity filter's and the document filters' configurations (documentFilters.ts). */
  extensionConfigs: TypedExtensionConfig[];
}
