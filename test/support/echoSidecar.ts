// A real Envoy sidecar for end-to-end identity and merged-document tests:
// the translator's listener and routes pushed over ADS, the compiled identity
// module and the document module with each document's peer part
// (peerPartDocuments) over ECDS, ext_proc served by mvproxy on the same gRPC
// server (for a document pushed over the budget; a test can make it fail:
// extProcFault), and Node https
// "apiservers" (local and one peer) that believe X-Remote-* only from the
// front-proxy client certificate and echo the headers they receive. The
// local one serves real aggregated discovery documents (JSON or protobuf as
// Accept asks; `/apis` also legacy, meta/v1, for a plain JSON or protobuf
// Accept) and an OpenAPI v3 index, with ETags, 304s to If-None-Match,
// and kube-apiserver's Audit-Id, priority-and-fairness and Warning headers;
// it authenticates discovery like kube-apiserver (401 for unknown tokens).
//
// A test file calls useEchoSidecar() at its top level: the sidecar starts
// before its tests and stops after them. The state below is the running
// sidecar of that test file (each test file runs in its own process).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createServer as createHttpsServer, request as httpsRequest, type Agent as HttpsAgent, type Server as HttpsServer } from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import pino from 'pino';

import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { SidecarPlan } from '../../src/planner/plan.js';
import { planOf } from './sidecarPlans.js';
import { ExtProcServer, type DiscoveryRequest } from '../../src/servers/extProc.js';
import type { ProcessingRequest__Output } from '../../src/generated/envoy/service/ext_proc/v3/ProcessingRequest.js';
import { testLeaf, type TestCert } from './clientCerts.js';
import { closeServers, fakeApiserverTls, sidecarCerts, startSidecar, viaFrontProxy, type RunningSidecar } from './sidecarHarness.js';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_JSON_ACCEPT, AGGREGATED_DISCOVERY_PROTOBUF } from '../../src/model/discovery.js';
import { DOCUMENT_PUSH_BUDGET_BYTES, type SidecarDocuments } from '../../src/translator/translator.js';
import { encodeDocumentSet } from '../../src/xds/documentSet.js';
import type { AggregatedPeerPart, OpenApiPeerPart } from '../../src/discovery/peerPart.js';
import { renderAggregated } from '../../src/discovery/render.js';
import type { APIGroupDiscoveryList } from '../../src/model/discovery.js';
import { UNAUTHORIZED_STATUS } from './apiserverStatus.js';
import { APPS, BATCH, group, list, resource } from './discoveryFixtures.js';
import { LEGACY_JSON, LEGACY_PROTOBUF, groupListProtobuf, jsonBody } from './legacyBodies.js';
import type { APIGroupList } from '../../src/model/legacyDiscovery.js';
import type { MergedDocument } from '../../src/model/requestInfo.js';

export const NODE = 'a';
export const AGGREGATED = AGGREGATED_DISCOVERY_JSON_ACCEPT;
/** Aggregated discovery as protobuf, JSON as the fallback (kubectl's order). */
export const AGGREGATED_PROTOBUF = `${AGGREGATED_DISCOVERY_PROTOBUF},${AGGREGATED_DISCOVERY_JSON_ACCEPT}`;

/** The local apiserver's `/apis` (mutable: setLocalGroups) and `/api` (over 1 MiB in JSON: thousands of resources). */
export const LOCAL_GROUPS = list([APPS, BATCH]);
export const LOCAL_CORE = list([
  group('', [
    {
      version: 'v1',
      resources: Array.from({ length: 6000 }, (_, i) => resource(`things${i}`, `Thing${i}`, ['get', 'list', 'watch'], { shortNames: [`t${i}`] })),
    },
  ]),
]);
export const LOCAL_INDEX = {
  paths: { 'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=A' }, 'apis/apps/v1': { serverRelativeURL: '/openapi/v3/apis/apps/v1?hash=B' } },
};

/** What only the peer serves: a group, a version of apps, a resource of apps/v1; a core resource; their OpenAPI paths. */
export const GROUPS_PART: AggregatedPeerPart = {
  document: 'group-discovery',
  groups: list([
    group('apps', [
      { version: 'v1', resources: [resource('statefulsets', 'StatefulSet', ['get', 'list'])] },
      { version: 'v1beta9', resources: [resource('replicasets', 'ReplicaSet', ['get'])] },
    ]),
    group('storagemigration.k8s.io', [{ version: 'v1', resources: [resource('storageversionmigrations', 'StorageVersionMigration', ['get', 'list'])] }]),
  ]).items,
};
export const CORE_PART: AggregatedPeerPart = {
  document: 'core-discovery',
  groups: list([group('', [{ version: 'v1', resources: [resource('widgets', 'Widget', ['get'])] }])]).items,
};
export const INDEX_PART: OpenApiPeerPart = {
  document: 'openapi-index',
  paths: { 'apis/storagemigration.k8s.io/v1': { serverRelativeURL: '/openapi/v3/apis/storagemigration.k8s.io/v1?hash=P' } },
};
/** The OpenAPI v3 index ext_proc answers (when its set is pushed over the budget). */
export const EXT_PROC_OPENAPI_BODY = '{"paths":{"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=extproc"}}}';

/**
 * The peer parts as the control plane pushes them; `overBudget`: that
 * document's set one byte over the push budget (ext_proc answers it);
 * `groups`: another `/apis` peer part (a later push).
 */
export function peerPartDocuments(overBudget?: MergedDocument, groups: AggregatedPeerPart = GROUPS_PART): SidecarDocuments {
  const documents = new Map<MergedDocument, Uint8Array>([
    ['group-discovery', encodeDocumentSet(groups)],
    ['core-discovery', encodeDocumentSet(CORE_PART)],
    ['openapi-index', encodeDocumentSet(INDEX_PART)],
  ]);
  if (overBudget) documents.set(overBudget, new Uint8Array(DOCUMENT_PUSH_BUDGET_BYTES + 1));
  return documents;
}

/** kube-apiserver's ETag of a body (upstream hashes the JSON; any stable digest will do here). */
function etagOfBody(body: Buffer): string {
  return `"${createHash('sha512').update(body).digest('hex').toUpperCase()}"`;
}

interface Served {
  json: Buffer;
  protobuf: Buffer;
  etag: string;
  /** The legacy APIGroupList of `/apis` (meta/v1, no ETag, as kube-apiserver), JSON and protobuf. */
  legacy: { json: Buffer; protobuf: Buffer };
}

/** The legacy group list of an aggregated one (preferred: the first version). */
export function legacyGroupsOf(l: APIGroupDiscoveryList): APIGroupList {
  const groups = l.items.map((g) => {
    const name = g.metadata.name ?? '';
    const versions = g.versions.map((v) => ({ groupVersion: `${name}/${v.version}`, version: v.version }));
    return { name, versions, ...(versions[0] ? { preferredVersion: versions[0] } : {}) };
  });
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

function served(l: APIGroupDiscoveryList): Served {
  const json = renderAggregated(l, 'json').body;
  const legacy = legacyGroupsOf(l);
  return {
    json,
    protobuf: renderAggregated(l, 'protobuf').body,
    etag: etagOfBody(json),
    legacy: { json: jsonBody(legacy), protobuf: groupListProtobuf(legacy) },
  };
}

let localGroups = served(LOCAL_GROUPS);
const localCore = served(LOCAL_CORE);
const localIndex = Buffer.from(`${JSON.stringify(LOCAL_INDEX)}\n`);
const localIndexEtag = etagOfBody(localIndex);

/** Changes the local apiserver's `/apis` document (a CRD created, say); returns its new ETag. */
export function setLocalGroups(l: APIGroupDiscoveryList): string {
  localGroups = served(l);
  return localGroups.etag;
}

/** The local document's ETag as the apiserver sends it. */
export function localEtag(document: 'groups' | 'core' | 'index'): string {
  return document === 'groups' ? localGroups.etag : document === 'core' ? localCore.etag : localIndexEtag;
}

/** The headers kube-apiserver adds to every answer, which the client must get. */
export const APISERVER_HEADERS = {
  'audit-id': 'audit-e2e',
  'x-kubernetes-pf-flowschema-uid': 'fs-e2e',
  'x-kubernetes-pf-prioritylevel-uid': 'pl-e2e',
  warning: ['299 - "first"', '299 - "second"'],
};

/** `headers` and APISERVER_HEADERS as writeHead's flat list (two Warning headers). */
function withApiserverHeaders(headers: Record<string, string | number>): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries({ ...headers, ...APISERVER_HEADERS })) {
    for (const one of Array.isArray(value) ? value : [value]) out.push(name, String(one));
  }
  return out;
}

/** The one token the fake apiserver knows. */
export const KNOWN_TOKEN = 'Bearer known-token';
/** A group-version only the peer serves. */
export const PEER_GROUP = 'storagemigration.k8s.io';

export interface Echo {
  path: string;
  headers: Record<string, string[]>;
  /** The request came over a connection with the front-proxy certificate. */
  frontProxy: boolean;
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

// The running sidecar and its fakes, set by useEchoSidecar's before hook.
let dir: string;
export let sidecar: RunningSidecar;
let apiserver: HttpsServer;
let peer: HttpsServer;
/** Headers of the last discovery request (`/api`, `/apis`, `/openapi/v3`) the local apiserver received. */
export let lastDiscoveryHeaders: IncomingHttpHeaders | undefined;
let metrics: Metrics;
export let listenerPort: number;
export let servingCa: TestCert;
/** A client certificate from the cluster client CA: CN=alice, O=system:masters and O="team, a+b". */
export let alice: TestCert;
export let certs: Awaited<ReturnType<typeof sidecarCerts>>;
export const discoveryCalls: Array<{ node: string; request: DiscoveryRequest }> = [];
/** Ends the responses of requests the apiserver holds open. */
export const hanging: Array<() => void> = [];

/**
 * A fault the ext_proc server shows while a test sets it: its stream ends
 * with a gRPC error on that message (`error-on-*`: the handler threw), the
 * merge throws (`merge-throws`), or the whole control plane process stalls
 * (`stall`: its event loop blocked for EXT_PROC_STALL_MS on the response body,
 * as in a long GC pause or an overloaded host).
 */
export type ExtProcFault = 'error-on-request-headers' | 'error-on-response-headers' | 'error-on-response-body' | 'merge-throws' | 'stall';
export const extProcFault: { current?: ExtProcFault } = {};
export const EXT_PROC_STALL_MS = 1000;

/** The ext_proc server with extProcFault applied. */
class FaultyExtProcServer extends ExtProcServer {
  override process(...args: Parameters<ExtProcServer['process']>): ReturnType<ExtProcServer['process']> {
    const message: ProcessingRequest__Output = args[2];
    const fault = extProcFault.current;
    const at = (stage: 'request_headers' | 'response_headers' | 'response_body'): boolean =>
      fault === `error-on-${stage.replace('_', '-')}` && !!message[stage];
    if (at('request_headers') || at('response_headers') || at('response_body')) throw new Error(`test fault: ${fault}`);
    if (fault === 'stall' && message.response_body) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, EXT_PROC_STALL_MS);
    return super.process(...args);
  }
}

/** A GET through the sidecar's listener, with a client certificate if `cert`; `resumed` tells whether the TLS session was resumed. */
export function send(
  path: string,
  opts: { cert?: TestCert; headers?: Record<string, string>; agent?: HttpsAgent } = {},
): Promise<Reply & { resumed: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: listenerPort,
        path,
        method: 'GET',
        ca: servingCa.certPem,
        servername: 'localhost',
        headers: opts.headers ?? {},
        ...(opts.cert ? { cert: opts.cert.certPem, key: opts.cert.keyPem } : {}),
        agent: opts.agent ?? false,
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        const resumed = (res.socket as import('node:tls').TLSSocket).isSessionReused();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), resumed }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** What the fake apiserver received, from its 200 echo. */
export function echoed(reply: Reply): Echo {
  assert.equal(reply.status, 200, reply.body.toString());
  return JSON.parse(reply.body.toString('utf8')) as Echo;
}

/** ext_proc requests mvproxy has served so far. */
export async function extProcCalls(): Promise<number> {
  return (await metrics.extProcRequests.get()).values.reduce((sum, v) => sum + v.value, 0);
}

/** An Envoy counter or gauge of the sidecar (0 when Envoy has no such stat). */
export async function envoyStat(name: string): Promise<number> {
  const escaped = name.replace(/[.]/g, '\\.');
  const body = (await sidecar.envoy.admin(`/stats?filter=^${escaped}$`)).body;
  return Number(/: (\d+)/.exec(body)?.[1] ?? 0);
}

/** Starts the fake apiservers, ext_proc and the sidecar before the calling test file's tests, and stops them after. */
export function useEchoSidecar(): void {
  before(startEchoSidecar);
  after(stopEchoSidecar);
}

async function startEchoSidecar(): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'mvproxy-extproc-e2e-'));
  certs = await sidecarCerts();
  servingCa = certs.servingCa;
  alice = await testLeaf(certs.clientCa, { name: [{ O: ['system:masters'] }, { O: ['team, a+b'] }, { CN: ['alice'] }], usages: ['client'] });

  // The "apiserver": echoes what it received, except for aggregated discovery,
  // which it authenticates as kube-apiserver would: a known token, or an
  // X-Remote-User over a front-proxy connection, gets its own document, in
  // the aggregated format Accept asks for first; anything else 401.
  apiserver = createHttpsServer(fakeApiserverTls(certs), (req, res) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path === '/openapi/v3') lastDiscoveryHeaders = req.headers;
    if (path === '/apis' || path === '/api') {
      lastDiscoveryHeaders = req.headers;
      if (req.headers['authorization'] !== KNOWN_TOKEN && !(viaFrontProxy(req) && req.headers['x-remote-user'] !== undefined)) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify(UNAUTHORIZED_STATUS));
        return;
      }
      const document = path === '/apis' ? localGroups : localCore;
      const accept = req.headers['accept'];
      if (path === '/apis' && (accept === LEGACY_JSON || accept === LEGACY_PROTOBUF)) {
        const body = accept === LEGACY_JSON ? document.legacy.json : document.legacy.protobuf;
        res.writeHead(200, withApiserverHeaders({ 'content-type': accept, 'content-length': body.length }));
        res.end(body);
        return;
      }
      discoveryAnswer(req, res, document, (req.headers['accept'] ?? '').startsWith('application/vnd.kubernetes.protobuf'));
      return;
    }
    if (path === '/openapi/v3') {
      if (req.headers['if-none-match'] === localIndexEtag) {
        res.writeHead(304, withApiserverHeaders({ etag: localIndexEtag }));
        res.end();
        return;
      }
      res.writeHead(200, withApiserverHeaders({ 'content-type': 'text/plain; charset=utf-8', etag: localIndexEtag, 'content-length': localIndex.length }));
      res.end(localIndex);
      return;
    }
    const body: Echo = { path: req.url ?? '', headers: req.headersDistinct as Record<string, string[]>, frontProxy: viaFrontProxy(req) };
    res.writeHead(200, { 'content-type': 'application/json' });
    // A watch: headers now, the rest when the test lets go.
    if (req.url?.includes('watch=hang')) {
      res.write(JSON.stringify(body));
      hanging.push(() => res.end());
      return;
    }
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => apiserver.listen(0, '127.0.0.1', resolve));
  const apiserverPort = (apiserver.address() as AddressInfo).port;

  // The peer: serves PEER_GROUP's documents itself; echoes what it received, marked as the peer.
  peer = createHttpsServer(fakeApiserverTls(certs), (req, res) => {
    const body: Echo & { server: string } = {
      server: 'peer',
      path: req.url ?? '',
      headers: req.headersDistinct as Record<string, string[]>,
      frontProxy: viaFrontProxy(req),
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
  const peerPort = (peer.address() as AddressInfo).port;

  metrics = createMetrics();
  const plan: SidecarPlan = planOf({
    node: NODE,
    local: { name: NODE, address: { host: '127.0.0.1', port: apiserverPort } },
    peers: [{ name: 'b', address: { host: '127.0.0.1', port: peerPort } }],
    groupDocuments: [
      { group: PEER_GROUP, action: { kind: 'peers', peers: ['b'] } },
      { group: PEER_GROUP, version: 'v1', action: { kind: 'peers', peers: ['b'] } },
    ],
  });
  sidecar = await startSidecar({
    dir,
    node: NODE,
    certs,
    plan,
    documents: peerPartDocuments(),
    register: (server) => {
      new FaultyExtProcServer({
        logger: pino({ level: 'silent' }),
        metrics,
        discovery: (node, request) => {
          discoveryCalls.push({ node, request });
          if (extProcFault.current === 'merge-throws') throw new Error('test fault: merge-throws');
          return {
            status: 200,
            headers: [
              ['content-type', 'application/json'],
              ['etag', '"extproc"'],
            ],
            body: Buffer.from(EXT_PROC_OPENAPI_BODY),
          };
        },
      }).addToServer(server);
    },
  });
  listenerPort = sidecar.listenerPort;
}

/** Serves a discovery document as kube-apiserver does: 304 to its ETag, else the body in the format asked for, in several writes. */
function discoveryAnswer(req: IncomingMessage, res: ServerResponse, document: Served, protobuf: boolean): void {
  const noEtag = (req.url ?? '').includes('noetag');
  if (!noEtag && req.headers['if-none-match'] === document.etag) {
    res.writeHead(304, withApiserverHeaders({ etag: document.etag }));
    res.end();
    return;
  }
  const body = protobuf ? document.protobuf : document.json;
  res.writeHead(
    200,
    withApiserverHeaders({
      'content-type': protobuf ? AGGREGATED_DISCOVERY_PROTOBUF : AGGREGATED_DISCOVERY_JSON,
      'content-length': body.length,
      ...(noEtag ? {} : { etag: document.etag }),
      'cache-control': 'public',
      vary: 'Accept',
    }),
  );
  const step = 64 * 1024;
  for (let at = 0; at < body.length; at += step) res.write(body.subarray(at, at + step));
  res.end();
}

async function stopEchoSidecar(): Promise<void> {
  for (const end of hanging) end();
  await sidecar?.stop();
  await closeServers(apiserver, peer);
  rmSync(dir, { recursive: true, force: true });
}
