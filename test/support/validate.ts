// Checks generated Envoy resources with the real Envoy: `envoy --mode validate`.
//
// The resources become a static bootstrap (EDS endpoints inlined as
// load_assignment of STATIC clusters, the route configuration inlined in the
// HTTP connection manager) and are encoded to binary protobuf with the same
// protobufjs root the ADS server uses. Envoy reads a `.pb` bootstrap as binary,
// so what it validates is exactly what would go over the wire. Fields that
// protobufjs does not know (newer than the loaded API, or misspelt) would be
// dropped silently on that wire, so they are reported as failures here.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import type { Any } from '../../src/generated/google/protobuf/Any.js';
import type { Cluster } from '../../src/generated/envoy/config/cluster/v3/Cluster.js';
import type { Listener } from '../../src/generated/envoy/config/listener/v3/Listener.js';
import type { Bootstrap } from '../../src/generated/envoy/config/bootstrap/v3/Bootstrap.js';
import type { HttpConnectionManager } from '../../src/generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpConnectionManager.js';
import type { HttpFilter } from '../../src/generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpFilter.js';
import type { EnvoyResources } from '../../src/translator/settings.js';
import { envoyRoot } from '../../src/xds/protos.js';
import { envoyBinary } from './envoy.js';

const HCM_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';

export interface ValidationResult {
  ok: boolean;
  output: string;
}

export async function validateWithEnvoy(resources: EnvoyResources): Promise<ValidationResult> {
  const bootstrap = staticBootstrap(resources);
  const bootstrapType = envoyRoot().lookupType('envoy.config.bootstrap.v3.Bootstrap');

  const unknown = unknownFields(bootstrapType, bootstrap, 'bootstrap');
  if (unknown.length > 0) {
    return { ok: false, output: `fields the loaded Envoy API does not have (protobuf would drop them):\n${unknown.join('\n')}` };
  }

  const dir = await mkdtemp(join(tmpdir(), 'mvproxy-validate-'));
  try {
    const file = join(dir, 'bootstrap.pb');
    await writeFile(file, bootstrapType.encode(bootstrapType.fromObject(bootstrap)).finish());
    return await runEnvoy(['--mode', 'validate', '--disable-hot-restart', '--log-level', 'warning', '-c', file]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The resources as Envoy would hold them after ADS, written as static configuration. */
function staticBootstrap(resources: EnvoyResources): Bootstrap {
  const assignments = new Map(resources.endpoints.map((e) => [e.cluster_name ?? '', e]));
  const routeConfigs = new Map(resources.routes.map((r) => [r.name ?? '', r]));

  const clusters = resources.clusters.map((cluster): Cluster => {
    if (cluster.type !== 'EDS') return cluster;
    const serviceName = cluster.eds_cluster_config?.service_name || cluster.name || '';
    const assignment = assignments.get(serviceName);
    if (assignment === undefined) throw new Error(`cluster ${cluster.name} has no ClusterLoadAssignment ${serviceName}`);
    const { eds_cluster_config: _eds, ...rest } = cluster;
    return { ...rest, type: 'STATIC', load_assignment: { ...assignment, cluster_name: cluster.name ?? '' } };
  });

  // Filters configured over ECDS get their configuration (or their default) inline.
  const filterConfigs = new Map(resources.extensionConfigs.map((c) => [c.name ?? '', c.typed_config]));
  const withFilterConfiguration = (filter: HttpFilter): HttpFilter => {
    if (!filter.config_discovery) return filter;
    const { config_discovery: discovery, ...rest } = filter;
    const typed = filterConfigs.get(filter.name ?? '') ?? discovery.default_config;
    if (!typed) throw new Error(`filter ${filter.name} has neither an ECDS configuration nor a default`);
    return { ...rest, typed_config: typed };
  };

  const listeners = resources.listeners.map(
    (listener): Listener => ({
      ...listener,
      filter_chains: (listener.filter_chains ?? []).map((chain) => ({
        ...chain,
        filters: (chain.filters ?? []).map((filter) => {
          const config = filter.typed_config;
          if (!config || !('@type' in config) || config['@type'] !== HCM_TYPE) return filter;
          const { rds, ...hcm } = config as Any & HttpConnectionManager;
          if (rds === undefined || rds === null) return filter;
          const routeConfig = routeConfigs.get(rds.route_config_name ?? '');
          if (routeConfig === undefined) throw new Error(`listener ${listener.name} refers to unknown routes ${rds.route_config_name}`);
          return { ...filter, typed_config: { ...hcm, route_config: routeConfig, http_filters: (hcm.http_filters ?? []).map(withFilterConfiguration) } };
        }),
      })),
    }),
  );

  // Secrets become static ones, which a reference without sds_config names.
  return { static_resources: { clusters: withStaticSecrets(clusters), listeners: withStaticSecrets(listeners), secrets: resources.secrets } };
}

/** A copy with every SDS reference's config source dropped (the secret is then looked up among the static ones). */
function withStaticSecrets<T>(value: T): T {
  const strip = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(strip);
    if (item === null || typeof item !== 'object' || item instanceof Uint8Array) return item;
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(item as Record<string, unknown>)) if (key !== 'sds_config') out[key] = strip(member);
    return out;
  };
  return strip(value) as T;
}

/**
 * Paths of keys in a plain object that its protobuf type lacks, and of enum
 * values it does not define, following Any (`@type`) into the named type.
 */
export function unknownFields(type: protobuf.Type, value: unknown, path: string): string[] {
  if (value === null || typeof value !== 'object') return [];
  const problems: string[] = [];
  for (const [key, fieldValue] of Object.entries(value as Record<string, unknown>)) {
    const field = type.fields[key];
    if (field === undefined) {
      problems.push(`${path}.${key}`);
      continue;
    }
    if (fieldValue === undefined || fieldValue === null) continue;
    const items = field.map ? Object.values(fieldValue) : field.repeated ? (fieldValue as unknown[]) : [fieldValue];
    const resolved = field.resolve().resolvedType;
    items.forEach((item, i) => {
      const itemPath = field.repeated || field.map ? `${path}.${key}[${i}]` : `${path}.${key}`;
      if (resolved instanceof protobuf.Enum) {
        if (typeof item === 'string' && !(item in resolved.values)) problems.push(`${itemPath} = ${item}`);
        return;
      }
      if (!(resolved instanceof protobuf.Type)) return;
      const messageType = resolved;
      if (messageType.fullName === '.google.protobuf.Any' && item !== null && typeof item === 'object' && '@type' in item) {
        const url = String((item as { '@type': unknown })['@type']);
        const inner = lookupMessage(url.slice(url.lastIndexOf('/') + 1));
        if (inner === undefined) {
          problems.push(`${itemPath} (@type ${url} is not loaded)`);
          return;
        }
        const { '@type': _type, ...fields } = item as Record<string, unknown>;
        problems.push(...unknownFields(inner, fields, `${itemPath}<${inner.name}>`));
        return;
      }
      // Struct and Value are written in protobuf-JSON form; not checked here.
      if (messageType.fullName === '.google.protobuf.Struct' || messageType.fullName === '.google.protobuf.Value') return;
      problems.push(...unknownFields(messageType, item, itemPath));
    });
  }
  return problems;
}

function lookupMessage(name: string): protobuf.Type | undefined {
  try {
    return envoyRoot().lookupType(name);
  } catch {
    return undefined;
  }
}

function runEnvoy(args: string[]): Promise<ValidationResult> {
  return new Promise((resolve) => {
    const child = spawn(envoyBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ ok: false, output: `${output}\n${err.message}` });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ ok: code === 0, output });
    });
  });
}
