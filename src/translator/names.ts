// Deterministic names of the Envoy resources generated for a sidecar.

export const LISTENER_NAME = 'apiserver';
export const ROUTE_CONFIG_NAME = 'apiserver';
export const LOCAL_CLUSTER = 'local';

/**
 * How requests travel to an upstream set: each set has one Envoy cluster
 * (connection pool) per flavour.
 */
export interface UpstreamFlavour {
  /**
   * `http1`: HTTP/1.1 only, for ordinary requests (cheaper per request than
   * HTTP/2 for both Envoy and the apiserver) and for upgrades (Envoy carries
   * WebSocket and SPDY/3.1 over HTTP/1.1 only). `http2`: negotiated by ALPN,
   * for watches, so that thousands of them share a few connections.
   */
  protocol: 'http1' | 'http2';
  /**
   * The connection presents the front-proxy client certificate, so the
   * apiserver believes the X-Remote-* identity the identity filter sets. Only
   * client-certificate requests need it; every other request travels without
   * it, costs the apiserver no certificate verification, and could assert no
   * identity even if a header slipped through.
   */
  frontProxy: boolean;
}

/** Every flavour, in the order clusters are listed. */
export const UPSTREAM_FLAVOURS: readonly UpstreamFlavour[] = [
  { protocol: 'http2', frontProxy: false },
  { protocol: 'http2', frontProxy: true },
  { protocol: 'http1', frontProxy: false },
  { protocol: 'http1', frontProxy: true },
];

/** `local`, `local-front-proxy`, `local-h1`, `local-h1-front-proxy` (and so on for peers). */
export function flavouredClusterName(set: string, flavour: UpstreamFlavour): string {
  return `${set}${flavour.protocol === 'http1' ? '-h1' : ''}${flavour.frontProxy ? '-front-proxy' : ''}`;
}

/**
 * The cluster (and EDS service) name for a set of apiservers a route sends to:
 * `peer-<name>` for one peer, `peers-<a>+<b>` for several (sorted). Names are
 * URI-component-encoded so that '+' and other separators in operator-chosen
 * names cannot make two sets collide.
 */
export function peerClusterName(peerNames: readonly string[]): string {
  const encoded = [...peerNames].sort().map((name) => encodeURIComponent(name));
  return encoded.length === 1 ? `peer-${encoded[0]}` : `peers-${encoded.join('+')}`;
}

/** Name of the ext_proc HTTP filter (merged documents over the push budget); per-route configs refer to it. */
export const EXT_PROC_FILTER = 'envoy.filters.http.ext_proc';

/** Name of the identity HTTP filter (WASM, envoy/filters), and vm_id of the identity module; per-route configs refer to it. */
export const IDENTITY_FILTER = 'mvproxy.identity';

/** root_id of the document filters: the document module, configured with a document set (src/xds/documentSet.ts). */
export const DOCUMENT_FILTER_ROOT_ID = 'mvproxy.discovery';

/** gRPC metadata on every ext_proc stream: the xDS node of the calling sidecar. */
export const EXT_PROC_NODE_METADATA = 'x-mvproxy-node';

/** gRPC metadata each merged-document route adds to its ext_proc streams: which document (MergedDocument). */
export const EXT_PROC_DOCUMENT_METADATA = 'x-mvproxy-document';
