// `mvproxy admin config SIDECAR`: what the control plane pushed to one sidecar,
// in the habits of `istioctl proxy-config` and `egctl config envoy-proxy`: a
// summary table per type by default, every resource in full with -o json|yaml.
import { stringify as toYaml } from 'yaml';
import type { SidecarConfig__Output } from '../generated/mvproxy/admin/v1/SidecarConfig.js';
import { isRecord } from '../util/json.js';
import { TYPE_URL, type ResourceTypeUrl } from '../xds/snapshot.js';
import { table } from './table.js';

/** `--type` values: the plural of each type's short name (clusters, endpoints, listeners, routes, secrets), and `filters` for ECDS. */
export const CONFIG_TYPES: Readonly<Record<string, ResourceTypeUrl>> = Object.fromEntries(
  Object.entries(TYPE_URL).map(([short, url]) => [url === TYPE_URL.extensionConfig ? 'filters' : `${short}s`, url]),
);

export function configTypeUrl(name: string): ResourceTypeUrl {
  const url = CONFIG_TYPES[name];
  if (url === undefined) throw new Error(`--type: one of ${Object.keys(CONFIG_TYPES).join(', ')}; got ${JSON.stringify(name)}`);
  return url;
}

/** The config as one document: per type, its versions and its resources as objects. */
export function configDocument(config: SidecarConfig__Output): unknown {
  return {
    sidecar: config.sidecar,
    types: config.types.map((t) => ({
      type_url: t.type_url,
      version: t.version,
      version_acked: t.version_acked,
      resources: t.resources_json.map((r) => JSON.parse(r) as unknown),
    })),
  };
}

export function formatConfig(config: SidecarConfig__Output, output: 'table' | 'json' | 'yaml'): string {
  if (output === 'json') return `${JSON.stringify(configDocument(config), null, 2)}\n`;
  if (output === 'yaml') return toYaml(configDocument(config), { lineWidth: 0 });
  return config.types
    .map((t) => {
      const resources = t.resources_json.map((r) => JSON.parse(r) as unknown).filter(isRecord);
      const acked = t.version_acked === '' ? 'not ACKed here' : t.version_acked === t.version ? 'ACKed' : `ACKed ${t.version_acked}`;
      return `# ${shortName(t.type_url)} version ${t.version} (${acked})\n${summary(t.type_url, resources)}`;
    })
    .join('\n');
}

function shortName(url: string): string {
  return Object.entries(CONFIG_TYPES).find(([, u]) => u === url)?.[0] ?? url;
}

function summary(url: string, resources: Record<string, unknown>[]): string {
  switch (url) {
    case TYPE_URL.listener:
      return table(
        ['NAME', 'ADDRESS', 'FILTER CHAINS'],
        resources.map((l) => [str(l['name']), socketAddress(l['address']), String(list(l['filter_chains']).length)]),
      );
    case TYPE_URL.route:
      return table(
        ['ROUTE CONFIG', 'ROUTE', 'MATCH', 'TO'],
        resources.flatMap((rc) =>
          list(rc['virtual_hosts']).flatMap((vh) =>
            list(vh['routes']).map((r) => [str(rc['name']), str(r['name']) || '-', routeMatch(r['match']), routeAction(r)]),
          ),
        ),
      );
    case TYPE_URL.cluster:
      return table(
        ['NAME', 'DISCOVERY', 'TLS', 'ENDPOINTS'],
        resources.map((c) => [
          str(c['name']),
          isRecord(c['eds_cluster_config']) ? 'EDS' : str(c['type']) || 'STATIC',
          isRecord(c['transport_socket']) || list(c['transport_socket_matches']).length > 0 ? 'yes' : 'no',
          endpoints(c['load_assignment']).join(', ') || '-',
        ]),
      );
    case TYPE_URL.endpoint:
      return table(
        ['CLUSTER', 'ENDPOINTS'],
        resources.map((e) => [str(e['cluster_name']), endpoints(e).join(', ') || '-']),
      );
    case TYPE_URL.secret:
      // File names only: secrets name files on the sidecar's host, never their content.
      return table(
        ['NAME', 'KIND', 'FILES'],
        resources.map((r) => {
          const cert = r['tls_certificate'];
          const ca = r['validation_context'];
          if (isRecord(cert)) return [str(r['name']), 'certificate', [fileName(cert['certificate_chain']), fileName(cert['private_key'])].join(', ')];
          if (isRecord(ca)) return [str(r['name']), 'CA bundle', fileName(ca['trusted_ca'])];
          return [str(r['name']), '-', '-'];
        }),
      );
    case TYPE_URL.extensionConfig:
      // The module and the documents are bytes: their sizes, not their content.
      return table(
        ['NAME', 'ROOT', 'MODULE BYTES', 'CONFIGURATION BYTES'],
        resources.map((r) => {
          const plugin = isRecord(r['typed_config']) && isRecord(r['typed_config']['config']) ? r['typed_config']['config'] : {};
          const code = isRecord(plugin['vm_config']) && isRecord(plugin['vm_config']['code']) ? plugin['vm_config']['code'] : {};
          const inline = isRecord(code['local']) ? code['local']['inline_bytes'] : undefined;
          const configuration = isRecord(plugin['configuration']) ? plugin['configuration']['value'] : undefined;
          return [str(r['name']), str(plugin['root_id']) || '-', base64Bytes(inline), base64Bytes(configuration)];
        }),
      );
    default:
      return table(
        ['NAME'],
        resources.map((r) => [str(r['name'])]),
      );
  }
}

/** The byte count of a base64 field of the resource JSON. */
function base64Bytes(v: unknown): string {
  return typeof v === 'string' ? String(Buffer.from(v, 'base64').length) : '-';
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '';
}

function fileName(source: unknown): string {
  return isRecord(source) && typeof source['filename'] === 'string' ? source['filename'] : '-';
}

function list(v: unknown): Record<string, unknown>[] {
  return Array.isArray(v) ? v.filter(isRecord) : [];
}

function socketAddress(address: unknown): string {
  if (!isRecord(address)) return '-';
  const sa = address['socket_address'];
  if (isRecord(sa)) return `${str(sa['address'])}:${str(sa['port_value'])}`;
  const pipe = address['pipe'];
  return isRecord(pipe) ? `unix:${str(pipe['path'])}` : '-';
}

/** Every endpoint of a ClusterLoadAssignment, with its priority when not 0. */
function endpoints(assignment: unknown): string[] {
  if (!isRecord(assignment)) return [];
  return list(assignment['endpoints']).flatMap((locality) => {
    const priority = typeof locality['priority'] === 'number' && locality['priority'] > 0 ? ` (priority ${locality['priority']})` : '';
    return list(locality['lb_endpoints']).map((lb) => {
      const endpoint = lb['endpoint'];
      return `${isRecord(endpoint) ? socketAddress(endpoint['address']) : '-'}${priority}`;
    });
  });
}

function routeMatch(match: unknown): string {
  if (!isRecord(match)) return '-';
  const safeRegex = match['safe_regex'];
  const path =
    typeof match['path'] === 'string'
      ? match['path']
      : typeof match['prefix'] === 'string'
        ? `${match['prefix']}*`
        : isRecord(safeRegex)
          ? `~${str(safeRegex['regex'])}`
          : typeof match['path_separated_prefix'] === 'string'
            ? `${match['path_separated_prefix']}/*`
            : '-';
  const headers = list(match['headers']).map((h) => str(h['name']));
  return headers.length > 0 ? `${path} [${headers.join(', ')}]` : path;
}

function routeAction(route: Record<string, unknown>): string {
  const action = route['route'];
  if (isRecord(action)) {
    if (typeof action['cluster'] === 'string') return action['cluster'];
    const weighted = action['weighted_clusters'];
    if (isRecord(weighted))
      return list(weighted['clusters'])
        .map((c) => str(c['name']))
        .join(', ');
    if (typeof action['cluster_header'] === 'string') return `cluster from header ${action['cluster_header']}`;
  }
  const direct = route['direct_response'];
  if (isRecord(direct)) return `answers ${str(direct['status'])}`;
  return '-';
}
