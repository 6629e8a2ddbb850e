// The shared parts of translator golden files: pieces of Envoy configuration
// that are the same in (nearly) every case, written once in
// test/golden/translator/_shared/<type>.json and referred to by name from the
// cases, so that a case's files show what its plan changes.
//
// A string "<shared NAME>" stands for the value of part NAME; an array
// element "<shared ...NAME>" stands for the elements of part NAME, spliced in.
// A part replaces only what is exactly equal to it: a route, cluster or
// listener that differs in anything is written out, so no difference hides.
// The parts' values are taken from the baseline translation (BASELINE_PLAN in goldenCases.ts:
// a sidecar with one peer and one route to it, default settings), so an intended
// change to them shows once, in _shared/, rather than in every case.
import assert from 'node:assert/strict';
import { LOCAL_ROUTE } from './sidecarPlans.js';
import { isObject, type Json } from './goldenJson.js';

/** The files of a case's resources: one per type of resource the snapshot pushes. */
export const RESOURCE_TYPES = ['clusters', 'endpoints', 'listeners', 'routes', 'secrets', 'extensionConfigs'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

/** Canonical resources, by type. */
export type ResourceFiles = Record<ResourceType, Json>;

export interface SharedPart {
  name: string;
  /** For reviewers: what the part is. */
  what: string;
  /** The file in _shared/ that holds it. */
  type: ResourceType;
  /** `items`: consecutive elements of an array, spliced in; `value`: any one value. */
  kind: 'value' | 'items';
  /** The part in the baseline translation. */
  pick: (baseline: ResourceFiles) => Json;
}

// ---------------------------------------------------------------- where parts are in the baseline

function array(value: Json | undefined, what: string): Json[] {
  assert.ok(Array.isArray(value), `${what} is an array`);
  return value;
}

function field(value: Json | undefined, ...path: string[]): Json {
  let at = value;
  for (const key of path) {
    assert.ok(isObject(at), `${path.join('.')}: an object at ${key}`);
    at = at[key];
  }
  assert.ok(at !== undefined, `baseline has ${path.join('.')}`);
  return at;
}

/** The name of the catch-all routes to the local apiserver (routes.ts). */
const LOCAL = LOCAL_ROUTE;

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function named(items: Json[], name: string): Json {
  const found = items.find((item) => isObject(item) && item['name'] === name);
  assert.ok(found !== undefined, `baseline has ${name}`);
  return found;
}

function routes(baseline: ResourceFiles): Json[] {
  const [config] = array(baseline.routes, 'routes');
  const [host] = array(field(config, 'virtual_hosts'), 'virtual hosts');
  return array(field(host, 'routes'), 'routes');
}

function routesNamed(baseline: ResourceFiles, names: RegExp): Json[] {
  const found = routes(baseline).filter((route) => isObject(route) && typeof route['name'] === 'string' && names.test(route['name']));
  assert.ok(found.length > 0, `baseline has routes ${names}`);
  return found;
}

function localCluster(baseline: ResourceFiles, suffix: string): Json {
  return named(array(baseline.clusters, 'clusters'), `local${suffix}`);
}

function hcm(baseline: ResourceFiles): Json {
  const [listener] = array(baseline.listeners, 'listeners');
  const [chain] = array(field(listener, 'filter_chains'), 'filter chains');
  const [filter] = array(field(chain, 'filters'), 'filters');
  return field(filter, 'typed_config');
}

/** The four flavours of a cluster (names.ts), by the suffix of their names. */
const FLAVOURS: ReadonlyArray<[suffix: string, what: string]> = [
  ['', 'HTTP/2'],
  ['-front-proxy', 'HTTP/2 with the front-proxy certificate'],
  ['-h1', 'HTTP/1.1'],
  ['-h1-front-proxy', 'HTTP/1.1 with the front-proxy certificate'],
];

/** In order: a part may contain the parts before it (and is written with them). */
export const SHARED_PARTS: readonly SharedPart[] = [
  {
    name: 'retry-policy',
    what: 'every forwarding route: retry another apiserver only when nothing reached one (retry-connect-only)',
    type: 'routes',
    kind: 'value',
    pick: (b) => field(named(routes(b), LOCAL), 'route', 'retry_policy'),
  },
  {
    name: 'identity-filter-off',
    what: 'a route without the client-certificate twin condition: the identity filter off',
    type: 'routes',
    kind: 'value',
    pick: (b) => field(named(routes(b), LOCAL), 'typed_per_filter_config'),
  },
  {
    name: 'peer-proxied-header',
    what: 'every route to peers marks the request x-kubernetes-peer-proxied: true, so the peer serves it itself (proxied-once)',
    type: 'routes',
    kind: 'value',
    pick: (b) => field(named(routes(b), 'reroute-to-peers batch/v1, Resource=jobs'), 'request_headers_to_add'),
  },
  {
    name: 'long-running-path',
    what: 'the :path matcher of long-running verbs (watch, proxy), the profiler and escaped paths (streams)',
    type: 'routes',
    kind: 'value',
    pick: (b) => array(field(named(routes(b), `${LOCAL} (long-running)`), 'match', 'headers'), 'headers')[0] ?? null,
  },
  {
    name: 'long-running-subresource-path',
    what: 'the :path matcher of long-running subresources: attach, exec, log, portforward, proxy (streams)',
    type: 'routes',
    kind: 'value',
    pick: (b) => array(field(named(routes(b), `${LOCAL} (long-running subresource)`), 'match', 'headers'), 'headers')[0] ?? null,
  },
  {
    name: 'peer-proxied-routes',
    what: 'first of all: a request that carries x-kubernetes-peer-proxied goes to the local apiserver (proxied-once)',
    type: 'routes',
    kind: 'items',
    pick: (b) => routesNamed(b, /^proxied-once/),
  },
  {
    name: 'merged-document-routes',
    what: 'discovery (/api, /apis) and the OpenAPI v3 index: the local apiserver, its answer replaced by the merged document in its document filter (merged-document)',
    type: 'routes',
    kind: 'items',
    pick: (b) => routesNamed(b, /^merged-document [a-z-]+( \(client certificate\))?$/),
  },
  {
    name: 'legacy-core-document-routes',
    what: 'legacy /api/{v}: the local apiserver, the core document filter merging what peers add (merged-document)',
    type: 'routes',
    kind: 'items',
    pick: (b) => routesNamed(b, /^merged-document core-discovery legacy /),
  },
  {
    name: 'legacy-group-document-routes',
    what: 'legacy /apis/{g} and /apis/{g}/{v}: the local apiserver, the groups document filter merging what peers add (merged-document)',
    type: 'routes',
    kind: 'items',
    pick: (b) => routesNamed(b, /^merged-document group-discovery legacy /),
  },
  {
    name: 'core-group-routes',
    what: 'when the plan routes nothing of the core group: /api/ goes to the local apiserver at once',
    type: 'routes',
    kind: 'items',
    pick: (b) => routesNamed(b, new RegExp(`^${escaped(LOCAL)} \\(core group\\)`)),
  },
  {
    name: 'local-routes',
    what: 'last: everything no route before took goes to the local apiserver',
    type: 'routes',
    kind: 'items',
    pick: (b) => routesNamed(b, new RegExp(`^${escaped(LOCAL)}( \\((upgrade|watch|long-running|long-running subresource|client certificate)\\))*$`)),
  },
  {
    name: 'circuit-breakers',
    what: 'every cluster: limits high enough for every watch',
    type: 'clusters',
    kind: 'value',
    pick: (b) => field(localCluster(b, ''), 'circuit_breakers'),
  },
  {
    name: 'outlier-detection',
    what: 'every cluster: eject an apiserver on connection failures only, never on its 5xx',
    type: 'clusters',
    kind: 'value',
    pick: (b) => field(localCluster(b, ''), 'outlier_detection'),
  },
  {
    name: 'upstream-tcp-keepalive',
    what: 'every cluster: TCP keep-alive finds an apiserver that vanished',
    type: 'clusters',
    kind: 'value',
    pick: (b) => field(localCluster(b, ''), 'upstream_connection_options'),
  },
  ...FLAVOURS.flatMap(([suffix, what]): SharedPart[] => [
    {
      name: `upstream-tls${suffix}`,
      what: `TLS to an apiserver, ${what}`,
      type: 'clusters',
      kind: 'value',
      pick: (b) => field(localCluster(b, suffix), 'transport_socket'),
    },
    {
      name: `protocol-options${suffix}`,
      what: `connections to an apiserver, ${what}`,
      type: 'clusters',
      kind: 'value',
      pick: (b) => field(localCluster(b, suffix), 'typed_extension_protocol_options'),
    },
  ]),
  {
    name: 'listener-socket-options',
    what: "TCP keep-alive on client connections, as kube-apiserver's",
    type: 'listeners',
    kind: 'value',
    pick: (b) => field(array(b.listeners, 'listeners')[0], 'socket_options'),
  },
  {
    name: 'http-filters',
    what: 'client-sent X-Remote-* removed, the identity filter and the document filters (over ECDS), ext_proc, the router (identity)',
    type: 'listeners',
    kind: 'value',
    pick: (b) => field(hcm(b), 'http_filters'),
  },
  {
    name: 'identity-filter-configuration',
    what: 'the identity filter over ECDS: the module inline (MODULE), failing closed, the default identity headers',
    type: 'extensionConfigs',
    kind: 'value',
    pick: (b) => named(array(b.extensionConfigs, 'extensionConfigs'), 'mvproxy.identity'),
  },
  {
    name: 'local-reply-config',
    what: "Envoy's own failures as a metav1.Status: 503 with Retry-After, 504 as the apiserver writes it",
    type: 'listeners',
    kind: 'value',
    pick: (b) => field(hcm(b), 'local_reply_config'),
  },
  {
    name: 'access-log',
    what: "rerouted and unavailable-route requests, to mvproxy's metrics",
    type: 'listeners',
    kind: 'value',
    pick: (b) => field(hcm(b), 'access_log'),
  },
  {
    name: 'downstream-tls',
    what: 'TLS to clients: the serving certificate, client certificates optional but verified',
    type: 'listeners',
    kind: 'value',
    pick: (b) => field(array(field(array(b.listeners, 'listeners')[0], 'filter_chains'), 'filter chains')[0], 'transport_socket'),
  },
];

/** The types that have shared parts (a file in _shared/ each). */
export const SHARED_TYPES: readonly ResourceType[] = RESOURCE_TYPES.filter((type) => SHARED_PARTS.some((part) => part.type === type));

// ---------------------------------------------------------------- replacing parts by references, and back

const VALUE_REFERENCE = /^<shared ([a-z0-9-]+)>$/;
const ITEMS_REFERENCE = /^<shared \.\.\.([a-z0-9-]+)>$/;

/** The parts by name, each with its value. */
export type SharedValues = ReadonlyMap<string, { part: SharedPart; value: Json }>;

/** `value` with every part in `values` (but those in `except`) replaced by a reference to it. */
export function withReferences(value: Json, values: SharedValues, except: ReadonlySet<string> = new Set()): Json {
  const used = [...values].filter(([name]) => !except.has(name));
  const byText = new Map(used.filter(([, p]) => p.part.kind === 'value').map(([name, p]) => [JSON.stringify(p.value), name]));
  const runs = used.filter(([, p]) => p.part.kind === 'items').map(([name, p]) => ({ name, texts: array(p.value, name).map((item) => JSON.stringify(item)) }));
  const replace = (item: Json): Json => {
    if (item === null || typeof item !== 'object') return item;
    const name = byText.get(JSON.stringify(item));
    if (name !== undefined) return `<shared ${name}>`;
    if (Array.isArray(item)) return spliceRuns(item, runs).map((element) => (typeof element === 'string' ? element : replace(element.item)));
    return Object.fromEntries(Object.entries(item).map(([key, field]) => [key, replace(field)]));
  };
  return replace(value);
}

/** The elements of `items`, each run of a part as its reference (a string), the others as they are. */
function spliceRuns(items: Json[], runs: Array<{ name: string; texts: string[] }>): Array<string | { item: Json }> {
  const texts = items.map((item) => JSON.stringify(item));
  const out: Array<string | { item: Json }> = [];
  for (let i = 0; i < items.length; ) {
    const run = runs.find((r) => r.texts.length > 0 && r.texts.every((text, j) => texts[i + j] === text));
    if (run) {
      out.push(`<shared ...${run.name}>`);
      i += run.texts.length;
    } else {
      out.push({ item: items[i] ?? null });
      i++;
    }
  }
  return out;
}

/** `value` with every reference replaced by the part it names (parts may refer to earlier parts). */
export function withoutReferences(value: Json, values: ReadonlyMap<string, Json>): Json {
  const part = (name: string): Json => {
    const found = values.get(name);
    assert.ok(found !== undefined, `a reference to the unknown shared part ${name}`);
    return withoutReferences(found, values);
  };
  if (typeof value === 'string') {
    const name = VALUE_REFERENCE.exec(value)?.[1];
    return name === undefined ? value : part(name);
  }
  if (Array.isArray(value)) {
    return value.flatMap((item) => {
      const name = typeof item === 'string' ? ITEMS_REFERENCE.exec(item)?.[1] : undefined;
      return name === undefined ? [withoutReferences(item, values)] : array(part(name), name);
    });
  }
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, withoutReferences(field, values)]));
  return value;
}

/** The parts' values in `baseline`; each part is checked to be worth sharing. */
export function sharedValues(baseline: ResourceFiles): SharedValues {
  const values = new Map<string, { part: SharedPart; value: Json }>();
  for (const part of SHARED_PARTS) {
    const value = part.pick(baseline);
    assert.ok(JSON.stringify(value).length > 60, `shared part ${part.name} is too small to be worth a reference`);
    assert.ok(!values.has(part.name), `shared part ${part.name} is defined once`);
    values.set(part.name, { part, value });
  }
  return values;
}

/** The text of _shared/<type>.json: each part of that type, written with the references of the parts before it. */
export function sharedFile(type: ResourceType, values: SharedValues): Json {
  const entries = [...values];
  const out: Record<string, Json> = {};
  entries.forEach(([name, { part, value }], i) => {
    if (part.type !== type) return;
    const earlier = new Map(entries.slice(0, i));
    out[name] = { what: part.what, [part.kind]: withReferences(value, earlier) };
  });
  return out;
}

/** The parts' values as _shared/<type>.json files hold them (each still with its references). */
export function sharedFromFiles(files: ReadonlyMap<ResourceType, Json>): Map<string, Json> {
  const values = new Map<string, Json>();
  for (const [type, file] of files) {
    assert.ok(isObject(file), `_shared/${type}.json holds an object`);
    for (const [name, entry] of Object.entries(file)) {
      assert.ok(isObject(entry), `_shared/${type}.json: ${name} is an object`);
      const value = entry['value'] ?? entry['items'];
      assert.ok(value !== undefined, `_shared/${type}.json: ${name} has a value or items`);
      values.set(name, value);
    }
  }
  return values;
}
