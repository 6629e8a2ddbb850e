// The bodies a kube-apiserver answers discovery and OpenAPI reads with, as
// the discovery fetcher receives them: aggregated discovery (/api, /apis) and
// the OpenAPI v3 index, well-formed and with malformed entries.

export function discoveryBody(groups: Array<{ name: string; resource: string }>): string {
  return JSON.stringify({
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items: groups.map((g) => ({
      metadata: g.name === '' ? { creationTimestamp: null } : { name: g.name },
      versions: [{ version: 'v1', resources: [{ resource: g.resource, scope: 'Namespaced', verbs: ['get', 'list'] }] }],
    })),
  });
}

export const CORE_BODY = discoveryBody([{ name: '', resource: 'pods' }]);

/**
 * /apis with batch (good), and widgets.example.com listing a good resource
 * next to one with an unknown scope and one named "" (what kube-aggregator
 * copies from an extension server without checking it).
 */
export function malformedApisBody(options: { withApps?: boolean } = {}): string {
  const good = JSON.parse(discoveryBody([{ name: 'batch', resource: 'jobs' }, ...(options.withApps ? [{ name: 'apps', resource: 'deployments' }] : [])])) as {
    items: unknown[];
  };
  good.items.push({
    metadata: { name: 'widgets.example.com' },
    versions: [
      {
        version: 'v1',
        resources: [
          { resource: 'widgets', scope: 'Namespaced', verbs: ['get'] },
          { resource: 'gadgets', scope: 'Global', verbs: ['get'] },
          { resource: '', scope: 'Namespaced', verbs: ['get'] },
        ],
      },
    ],
  });
  return JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, ...good });
}
export const APIS_BODY = discoveryBody([{ name: 'batch', resource: 'jobs' }]);

export const OPENAPI_INDEX = {
  paths: { 'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=A1' }, 'apis/batch/v1': { serverRelativeURL: '/openapi/v3/apis/batch/v1?hash=B1' } },
};

/**
 * OPENAPI_INDEX plus an entry without a serverRelativeURL (dropped) and one
 * whose group is not a DNS-1123 subdomain (kept as listed, never taken from
 * this apiserver as a peer).
 */
export function malformedOpenApiIndex(options: { withApps?: boolean } = {}) {
  return {
    paths: {
      ...OPENAPI_INDEX.paths,
      ...(options.withApps ? { 'apis/apps/v1': { serverRelativeURL: '/openapi/v3/apis/apps/v1?hash=D1' } } : {}),
      'apis/widgets.example.com/v1': { serverRelativeURL: null },
      'apis/Bad_Group/v1': { serverRelativeURL: '/openapi/v3/apis/Bad_Group/v1?hash=C1' },
    },
  };
}
