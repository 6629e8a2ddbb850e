// The documents at scale, for the fan-out bench (issue 22, "Scale"): CRDs
// spread over groups as a large cluster has them, the sizes of the merged
// documents a sidecar then holds and serves, and the sidecars' memory.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { SandboxState } from '../sandbox/state.js';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_PROTOBUF } from '../../entry/discovery.js';
import { httpsRequest } from '../../util/https.js';
import { statusKb } from './procStat.js';

/** Sizes of the merged `/apis` one sidecar answers, bytes as sent. */
export interface MergedApisSizes {
  json: number;
  protobuf: number;
  /** JSON to a client that takes gzip (kube-apiserver gzips above 128 KiB). */
  jsonGzip: number;
  groups: number;
}

/** Resident memory of a process, MB (2^20 bytes): now and its peak. */
export interface ProcessMemory {
  rssMb: number;
  peakRssMb: number;
}

const CREATE_CONCURRENCY = 4;
/** A bound on a hung run, not a figure. */
const LISTED_CAP_MS = 300_000;

/** The CRD group of the i-th CRD, over `groups` groups. */
function crdGroup(i: number, groups: number): string {
  return `g${i % groups}.fanout.mvproxy.example`;
}

/**
 * Creates `count` CRDs over `groups` groups through kas-a (a few at a time) and waits until `listedThrough`
 * (default kas-a's sidecar; upstream: kas-a itself) lists the last in its merged /apis.
 */
export async function createCrds(
  state: SandboxState,
  token: string,
  count: number,
  groups: number,
  progress: (line: string) => void,
  listedThrough = state.apiservers[0]?.sidecar,
): Promise<void> {
  const a = state.apiservers[0];
  if (!a || !listedThrough) throw new Error('internal: no apiserver to list the CRDs through');
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const res = await call(state, a.direct, token, 'POST', CRDS_PATH, 'application/json', namespacedCrd(crdGroup(i, groups), `things${i}`, `Thing${i}`));
      if (res.status !== 201 && res.status !== 409) throw new Error(`creating CRD ${i}: ${res.status} ${res.body.slice(0, 300)}`);
      if ((i + 1) % 250 === 0) progress(`  ${i + 1} of ${count} CRDs created`);
    }
  };
  await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, worker));
  const last = `"things${count - 1}"`;
  const deadline = performance.now() + LISTED_CAP_MS;
  for (;;) {
    const res = await call(state, listedThrough, token, 'GET', '/apis', AGGREGATED_DISCOVERY_JSON).catch(() => undefined);
    if (res?.status === 200 && res.body.includes(last)) return;
    if (performance.now() > deadline) throw new Error(`the merged /apis through ${listedThrough} never listed ${last}`);
    await sleep(1000);
  }
}

/** Where CRDs are created and deleted. */
export const CRDS_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** A namespaced CRD `<plural>.<group>` of kind `kind`, served and stored at v1, its objects schemaless. */
export function namespacedCrd(group: string, plural: string, kind: string): unknown {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  };
}

/** The merged /apis through a sidecar, in each form, as sent. */
export async function mergedApisSizes(state: SandboxState, sidecar: string, token: string): Promise<MergedApisSizes> {
  const get = async (accept: string, gzip: boolean): Promise<Buffer> => {
    const res = await call(state, sidecar, token, 'GET', '/apis', accept, undefined, gzip ? { 'accept-encoding': 'gzip' } : {});
    if (res.status !== 200) throw new Error(`GET /apis through ${sidecar}: ${res.status}`);
    return res.bodyBytes;
  };
  const json = await get(AGGREGATED_DISCOVERY_JSON, false);
  const groups = (JSON.parse(json.toString('utf8')) as { items: unknown[] }).items.length;
  return {
    json: json.length,
    protobuf: (await get(AGGREGATED_DISCOVERY_PROTOBUF, false)).length,
    jsonGzip: (await get(AGGREGATED_DISCOVERY_JSON, true)).length,
    groups,
  };
}

/** Each real sidecar's Envoy memory, by apiserver name. */
export function sidecarMemory(sandbox: Sandbox, names: readonly string[]): Record<string, ProcessMemory> {
  const out: Record<string, ProcessMemory> = {};
  for (const name of names) {
    const pid = sandbox.sidecarPid(name);
    if (pid !== undefined) out[name] = processMemory(pid);
  }
  return out;
}

export function processMemory(pid: number): ProcessMemory {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rssMb: Math.round(statusKb(text, 'VmRSS') / 1024), peakRssMb: Math.round(statusKb(text, 'VmHWM') / 1024) };
}

/** One request as the bench's admin client (bearer token), its body as sent (httpsRequest decompresses nothing). */
function call(
  state: SandboxState,
  base: string,
  token: string,
  method: string,
  path: string,
  accept: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  return httpsRequest(
    base + path,
    { ca: state.ca },
    {
      method,
      headers: { authorization: `Bearer ${token}`, accept, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      timeoutMs: 30_000,
    },
  );
}
