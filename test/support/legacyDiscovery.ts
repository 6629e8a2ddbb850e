// Legacy discovery as the e2e tests see it (test/e2e/legacyDiscovery): what
// client-go's legacy discovery client (test/support/legacy-discovery, built
// into the install cache) concludes from a server, the legacy documents an
// apiserver serves read directly, and the merged aggregated documents read as
// the same kind of names: `group/version/resource` and
// `group/version/resource/subresource` (core group "").
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { APIGroupDiscoveryList } from '../../src/model/discovery.js';
import type { APIGroupList, APIResourceList, APIVersions } from '../../src/model/legacyDiscovery.js';
import { httpsRequest } from '../../src/util/https.js';
import { DISCOVERY_ACCEPT } from './discoveryNames.js';

const execFileAsync = promisify(execFile);

/** What the Go client prints (test/support/legacy-discovery/main.go). */
export interface LegacyClientReport {
  clientGo: string;
  protobuf: boolean;
  groups: Array<{ name: string; versions: string[]; preferredVersion: string }>;
  resources: Array<{ groupVersion: string; resources: Array<{ name: string; verbs: string[] | null }> }>;
  error?: string;
  failedGroupVersions?: Record<string, string>;
  /** `-protobuf` only: /api and /apis read in protobuf through the same client. */
  protobufDocuments?: {
    apiContentType: string;
    coreVersions: string[];
    apisContentType: string;
    groups: Array<{ name: string; versions: string[]; preferredVersion: string }>;
    error?: string;
  };
  responses: Array<{ path: string; status: number; contentType: string }>;
  millis: number;
}

export type LegacyFormat = 'json' | 'protobuf';

/** Runs client-go's legacy ServerGroupsAndResources against the kubeconfig's server. */
export async function runLegacyClient(binary: string, kubeconfig: string, format: LegacyFormat): Promise<LegacyClientReport> {
  const args = [`-kubeconfig=${kubeconfig}`, ...(format === 'protobuf' ? ['-protobuf'] : [])];
  const { stdout } = await execFileAsync(binary, args, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as LegacyClientReport;
}

const groupOf = (groupVersion: string): string => (groupVersion.includes('/') ? (groupVersion.split('/')[0] ?? '') : '');
const versionOf = (groupVersion: string): string => groupVersion.split('/').pop() ?? '';

/** Every entry the client listed, as `group/version/name` (name may be `resource/subresource`). */
export function legacyClientNames(report: LegacyClientReport): string[] {
  return report.resources.flatMap((list) => list.resources.map((r) => `${groupOf(list.groupVersion)}/${versionOf(list.groupVersion)}/${r.name}`));
}

/** The entries the client listed with the list verb that are resources, not subresources. */
export function listableResources(report: LegacyClientReport): string[] {
  return report.resources.flatMap((list) =>
    list.resources
      .filter((r) => !r.name.includes('/') && (r.verbs ?? []).includes('list'))
      .map((r) => `${groupOf(list.groupVersion)}/${versionOf(list.groupVersion)}/${r.name}`),
  );
}

function get(ca: string, base: string, token: string, path: string, accept: string) {
  return httpsRequest(base + path, { ca }, { headers: { authorization: `Bearer ${token}`, accept }, timeoutMs: 15_000 });
}

async function getJson<T>(ca: string, base: string, token: string, path: string, accept = 'application/json'): Promise<T> {
  const res = await get(ca, base, token, path, accept);
  if (res.status !== 200) throw new Error(`GET ${base}${path}: ${res.status} ${res.body.slice(0, 200)}`);
  return JSON.parse(res.body) as T;
}

/**
 * Every entry of a server's legacy documents (/api, /apis, then each group
 * version's APIResourceList), read as JSON. A group version whose list answers
 * 404 lists nothing: during skew an older kube-apiserver's /apis lists the
 * groups of every APIService in etcd, a newer peer's included, and answers 404
 * for those it does not serve (`unserved`).
 */
export async function legacyDocumentNames(ca: string, base: string, token: string): Promise<{ names: string[]; unserved: string[] }> {
  const core = await getJson<APIVersions>(ca, base, token, '/api');
  const groups = await getJson<APIGroupList>(ca, base, token, '/apis');
  const paths = [
    ...core.versions.map((v) => ({ group: '', version: v, path: `/api/${v}` })),
    ...groups.groups.flatMap((g) => g.versions.map((v) => ({ group: g.name, version: v.version, path: `/apis/${g.name}/${v.version}` }))),
  ];
  const names: string[] = [];
  const unserved: string[] = [];
  for (const p of paths) {
    const res = await get(ca, base, token, p.path, 'application/json');
    if (res.status === 404) unserved.push(p.path);
    else if (res.status !== 200) throw new Error(`GET ${base}${p.path}: ${res.status} ${res.body.slice(0, 200)}`);
    else for (const r of (JSON.parse(res.body) as APIResourceList).resources) names.push(`${p.group}/${p.version}/${r.name}`);
  }
  return { names, unserved };
}

/** The group versions a server's legacy /api and /apis list, as `group/version` (core group ""). */
export async function legacyGroupVersions(ca: string, base: string, token: string): Promise<string[]> {
  const core = await getJson<APIVersions>(ca, base, token, '/api');
  const groups = await getJson<APIGroupList>(ca, base, token, '/apis');
  return [...core.versions.map((v) => `/${v}`), ...groups.groups.flatMap((g) => g.versions.map((v) => `${g.name}/${v.version}`))];
}

export interface AggregatedView {
  /** Every resource and subresource, as `group/version/resource[/subresource]`. */
  names: string[];
  /** Every group version, as `group/version` (core group ""). */
  groupVersions: string[];
  /** Each group's first version (the one client-go derives as preferred), core group "". */
  firstVersions: Map<string, string>;
}

/** A server's aggregated /api and /apis (JSON; `nopeer`: an apiserver's own), as names and first versions. */
export async function aggregatedView(ca: string, base: string, token: string, format: 'json' | 'nopeer' = 'json'): Promise<AggregatedView> {
  const documents = await Promise.all(['/api', '/apis'].map((path) => getJson<APIGroupDiscoveryList>(ca, base, token, path, DISCOVERY_ACCEPT[format])));
  const names: string[] = [];
  const groupVersions: string[] = [];
  const firstVersions = new Map<string, string>();
  for (const group of documents.flatMap((d) => d.items)) {
    const name = typeof group.metadata.name === 'string' ? group.metadata.name : '';
    const first = group.versions[0]?.version;
    if (first !== undefined) firstVersions.set(name, first);
    for (const v of group.versions) {
      groupVersions.push(`${name}/${v.version}`);
      for (const r of v.resources) {
        names.push(`${name}/${v.version}/${r.resource}`);
        for (const s of r.subresources ?? []) names.push(`${name}/${v.version}/${r.resource}/${s.subresource}`);
      }
    }
  }
  return { names, groupVersions, firstVersions };
}
