// A real Envoy sidecar for end-to-end identity and merged-document tests:
// the translator's listener and routes pushed over ADS, the compiled identity
// filter and the merged documents (MERGED_DOCUMENTS) over ECDS, ext_proc
// served by mvproxy on the same gRPC server (only the OpenAPI v3 index, made
// larger than the push budget, is answered over it), and Node https
// "apiservers" (local and one peer) that believe X-Remote-* only from the
// front-proxy client certificate and echo the headers they receive. The
// local one authenticates discovery like kube-apiserver (401 for unknown
// tokens) and negotiates the aggregated format from Accept.
//
// A test file calls useEchoSidecar() at its top level: the sidecar starts
// before its tests and stops after them. The state below is the running
// sidecar of that test file (each test file runs in its own process).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createServer as createHttpsServer, request as httpsRequest, type Agent as HttpsAgent, type Server as HttpsServer } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import pino from 'pino';

import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { SidecarPlan } from '../../src/planner/plan.js';
import { planOf } from './sidecarPlans.js';
import { ExtProcServer, type DiscoveryRequest } from '../../src/servers/extProc.js';
import { testLeaf, type TestCert } from './clientCerts.js';
import { closeServers, fakeApiserverTls, sidecarCerts, startSidecar, viaFrontProxy, type RunningSidecar } from './sidecarHarness.js';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_JSON_ACCEPT, AGGREGATED_DISCOVERY_PROTOBUF } from '../../src/model/discovery.js';
import { DOCUMENT_PUSH_BUDGET_BYTES, type SidecarDocuments } from '../../src/translator/translator.js';
import { encodeDocumentSet, type DocumentVariant } from '../../src/xds/documentSet.js';
import type { MergedDocument } from '../../src/model/requestInfo.js';

export const NODE = 'a';
export const AGGREGATED = AGGREGATED_DISCOVERY_JSON_ACCEPT;
/** Aggregated discovery as protobuf, JSON as the fallback (kubectl's order). */
export const AGGREGATED_PROTOBUF = `${AGGREGATED_DISCOVERY_PROTOBUF},${AGGREGATED_DISCOVERY_JSON_ACCEPT}`;
/** The merged protobuf variant: not valid UTF-8, with NUL and high bytes: must reach the client unchanged. */
export const DISCOVERY_BODY = Buffer.from([0x6b, 0x38, 0x73, 0x00, 0xff, 0xfe, 0x80, 0x0a, 0x7b]);
/** The local apiserver's own aggregated document and its ETag. */
export const LOCAL_DOCUMENT = '{"kind":"APIGroupDiscoveryList","items":[]}';
export const LOCAL_ETAG = '"local"';
/** The merged `/apis` document (all variants share the ETag, as upstream's). */
export const MERGED_ETAG = '"merged"';
export const MERGED_GROUPS_JSON =
  '{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[{"metadata":{"name":"storagemigration.k8s.io"}}]}';
/** The merged `/api` document: larger than kube-apiserver's gzip threshold, so it has a gzip variant. */
export const MERGED_CORE_ETAG = '"merged-core"';
export const MERGED_CORE_JSON = JSON.stringify({
  kind: 'APIGroupDiscoveryList',
  apiVersion: 'apidiscovery.k8s.io/v2',
  items: [
    {
      metadata: { name: '' },
      versions: [{ version: 'v1', resources: Array.from({ length: 3000 }, (_, i) => ({ resource: `things${i}`, verbs: ['get', 'list', 'watch'] })) }],
    },
  ],
});
/** The OpenAPI v3 index ext_proc answers (its pushed set is over the budget). */
export const EXT_PROC_OPENAPI_BODY = '{"paths":{"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=extproc"}}}';

function variant(format: DocumentVariant['format'], etag: string, contentType: string, body: Buffer, gzip = false): DocumentVariant[] {
  const identity: DocumentVariant = { format, encoding: 'identity', etag, contentType, body };
  return gzip ? [identity, { ...identity, encoding: 'gzip', body: gzipSync(body, { level: 1 }) }] : [identity];
}

/**
 * The sidecar's merged documents, encoded as the control plane pushes them;
 * `groups` replaces the `/apis` document's JSON body and ETag (a later push).
 * The OpenAPI index's set is one byte over the push budget (never pushed:
 * its route goes to ext_proc).
 */
export function mergedDocuments(groups: { etag: string; json: string } = { etag: MERGED_ETAG, json: MERGED_GROUPS_JSON }): SidecarDocuments {
  return new Map<MergedDocument, Uint8Array>([
    [
      'group-discovery',
      encodeDocumentSet('group-discovery', [
        ...variant('aggregated-json', groups.etag, AGGREGATED_DISCOVERY_JSON, Buffer.from(groups.json)),
        ...variant('aggregated-protobuf', groups.etag, AGGREGATED_DISCOVERY_PROTOBUF, DISCOVERY_BODY),
      ]),
    ],
    [
      'core-discovery',
      encodeDocumentSet('core-discovery', [
        ...variant('aggregated-json', MERGED_CORE_ETAG, AGGREGATED_DISCOVERY_JSON, Buffer.from(MERGED_CORE_JSON), true),
        ...variant('aggregated-protobuf', MERGED_CORE_ETAG, AGGREGATED_DISCOVERY_PROTOBUF, DISCOVERY_BODY),
      ]),
    ],
    ['openapi-index', new Uint8Array(DOCUMENT_PUSH_BUDGET_BYTES + 1)],
  ]);
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
        res.end(
          JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 }),
        );
        return;
      }
      if (req.headers['if-none-match'] === LOCAL_ETAG) {
        res.writeHead(304, { etag: LOCAL_ETAG });
        res.end();
        return;
      }
      const accept = req.headers['accept'] ?? '';
      const contentType = !accept.includes('g=apidiscovery.k8s.io')
        ? 'application/json'
        : accept.startsWith('application/vnd.kubernetes.protobuf')
          ? AGGREGATED_DISCOVERY_PROTOBUF
          : AGGREGATED_DISCOVERY_JSON;
      res.writeHead(200, { 'content-type': contentType, etag: LOCAL_ETAG });
      res.end(LOCAL_DOCUMENT);
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
    documents: mergedDocuments(),
    register: (server) => {
      new ExtProcServer({
        logger: pino({ level: 'silent' }),
        metrics,
        discovery: (node, request) => {
          discoveryCalls.push({ node, request });
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

async function stopEchoSidecar(): Promise<void> {
  for (const end of hanging) end();
  await sidecar?.stop();
  await closeServers(apiserver, peer);
  rmSync(dir, { recursive: true, force: true });
}
