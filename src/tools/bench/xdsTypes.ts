// The xDS resource types a sidecar receives, by Envoy's v3 type URLs, in the
// order the control plane pushes them. The simulated Envoys (adsClients.ts)
// subscribe to them as an Envoy does: from Envoy's protocol, not from the
// control plane's code (test/unit/tools/bench/benchXdsTypes.test.ts checks both agree).
export const XDS_TYPE_URL = {
  cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  endpoint: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  secret: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
  listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  route: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  extensionConfig: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig',
} as const;

export type XdsTypeUrl = (typeof XDS_TYPE_URL)[keyof typeof XDS_TYPE_URL];

/** CDS, EDS, SDS, LDS, RDS, ECDS: clusters before the listeners and routes that use them. */
export const XDS_PUSH_ORDER: readonly XdsTypeUrl[] = Object.values(XDS_TYPE_URL);

export function isXdsTypeUrl(value: string): value is XdsTypeUrl {
  return (XDS_PUSH_ORDER as readonly string[]).includes(value);
}
