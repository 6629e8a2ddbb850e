// A small xDS snapshot for the ADS tests, and the type URLs by their short names.
import { TYPE_URL, makeSnapshot, type Snapshot } from '../../src/xds/snapshot.js';
import { rdsListener } from './envoy.js';
import { typedConfig } from '../../src/translator/typed.js';
import type { TypedExtensionConfig } from '../../src/generated/envoy/config/core/v3/TypedExtensionConfig.js';
import type { HeaderMutation } from '../../src/generated/envoy/extensions/filters/http/header_mutation/v3/HeaderMutation.js';

export const { cluster: CDS, endpoint: EDS, listener: LDS, route: RDS, extensionConfig: ECDS } = TYPE_URL;

/** A small but complete config: EDS cluster, its endpoints, a listener using RDS, the route. */
/** `filterHeader`: a filter configuration (ECDS) `document`, a header mutation adding that header, like a document change. */
export function config(opts: { port?: number; routeCluster?: string; extraCluster?: boolean; filterHeader?: string } = {}): Snapshot {
  const clusters = [
    {
      name: 'backend',
      type: 'EDS' as const,
      connect_timeout: { seconds: 1 },
      eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' as const } },
    },
  ];
  if (opts.extraCluster) clusters.push({ ...(clusters[0] as (typeof clusters)[number]), name: 'other' });
  return makeSnapshot({
    clusters,
    endpoints: clusters.map((c) => ({
      cluster_name: c.name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: opts.port ?? 8080 } } } }] }],
    })),
    listeners: [rdsListener('ingress', 10000)],
    routes: [
      {
        name: 'ingress',
        virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: opts.routeCluster ?? 'backend' } }] }],
      },
      { name: 'unused', virtual_hosts: [] },
    ],
    extensionConfigs: [documentFilterConfig(opts.filterHeader)],
  });
}

/** The configuration of rdsListener's ECDS filter `document`: a header mutation adding `header` to responses. */
export function documentFilterConfig(header = 'x-document'): TypedExtensionConfig {
  return {
    name: 'document',
    typed_config: typedConfig<HeaderMutation>('envoy.extensions.filters.http.header_mutation.v3.HeaderMutation', {
      mutations: { response_mutations: [{ append: { header: { key: header, value: '1' } } }] },
    }),
  };
}
