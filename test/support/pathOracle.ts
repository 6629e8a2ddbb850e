// The apiserver as oracle for how mvproxy reads request paths: every case is
// sent through kas-a's sidecar and, for comparison, to kas-a directly, each
// time with its own User-Agent, as the admin certificate client. The
// apiservers' audit logs say who received each request and how it read it
// (`objectRef`, `requestURI`); the sidecar's Envoy statistics say which
// cluster it used; the control plane's /status gives the plan. Then:
// - route: the plan's destination for parseRequestPath's reading is where
//   the sidecar sent the request (over the right cluster flavour);
// - apiserver-reading: the plan's destination for the apiserver's own reading
//   is where it went;
// - reading: parseRequestPath reads what the apiserver read (group, version,
//   resource, subresource, namespace, name);
// - meaning: the apiserver read the request through the sidecar exactly as it
//   reads it directly, and a `proxy` subresource's backend got the same path;
// - refused: nothing the apiserver accepts directly fails through the sidecar;
// - forwarded: the sidecar changed the path as sidecarPath says it does.
// Differences explained only by names spelled with escapes of unreserved
// characters are reported apart (docs/request-rules.md, "Reading a request"),
// provided they are routed as mvproxy read them and are not refused; so are
// request targets HTTP does not allow (a fragment, a raw non-ASCII byte),
// which Envoy answers with 400 itself where Go's parser is lenient.
//
// Run more cases than the test suite does with
//   node dist/test/support/pathOracle.js --cases 5000 [--seed 7]
// (`npm run oracle -- --cases 5000`): it starts its own sandbox with audit
// logs, prints the counts and every disagreement, and exits 1 if there is one.
import { envoyAdminJson } from './envoyAdmin.js';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { Agent, request } from 'node:https';
import { networkInterfaces } from 'node:os';
import { pathToFileURL } from 'node:url';

import { parseRequestPath, type RequestInfo, sidecarPath } from '../../src/model/requestInfo.js';
import type { RequestDestination, SidecarPlan } from '../../src/planner/plan.js';
import { destinationForRequest } from '../../src/planner/planner.js';
import { type OracleCase, generatedCases, handPickedCases } from './pathOracleCases.js';
import { apiserverNamed, eventually, startTestSandbox, type TestSandbox } from './sandbox.js';

/** The apiserver whose sidecar is tested (v1.36.3) and its peer (v1.37.2), as test/support/sandbox.ts names them. */
const LOCAL = 'kas-a';
const PEER = 'kas-b';
export const ORACLE_APISERVERS = [
  { name: LOCAL, version: 'v1.36.3' },
  { name: PEER, version: 'v1.37.2' },
];

/** A watch or a followed log streams: what arrives within this long after the headers is enough. */
const STREAM_READ_MS = 1200;
const REQUEST_TIMEOUT_MS = 20_000;

export interface Answer {
  status: number;
  /** A transport error or Node refusing to send the path. */
  error?: string;
}

interface AuditEvent {
  userAgent?: string;
  requestURI?: string;
  verb?: string;
  stage?: string;
  objectRef?: { apiGroup?: string; apiVersion?: string; resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
}

/** How an apiserver read a request: its audit event. */
interface Reading {
  apiserver: string;
  requestURI: string;
  verb: string;
  objectRef?: AuditEvent['objectRef'];
}

export interface CaseResult {
  case: OracleCase;
  path: string;
  viaSidecar: Answer;
  direct: Answer;
  /** Which sidecar clusters carried it (`local-h1-front-proxy`, ...); none when Envoy answered itself. */
  clusters: string[];
  /** The apiservers that logged it through the sidecar (normally one), and kas-a's reading of it sent directly. */
  readings: Reading[];
  directReading?: Reading;
  /** What the proxy subresource's backend received, through the sidecar and directly. */
  backendViaSidecar?: string;
  backendDirect?: string;
}

export interface Finding {
  kind: 'route' | 'apiserver-reading' | 'reading' | 'meaning' | 'refused' | 'forwarded' | 'flavour' | 'evidence';
  result: CaseResult;
  expected: string;
  actual: string;
}

export interface OracleReport {
  results: CaseResult[];
  /** Every disagreement: each is a bug. */
  disagreements: Finding[];
  /** Differences due only to names spelled with escapes of unreserved characters, routed as spelled and never refused. */
  literalSpellings: Finding[];
  /** Request targets HTTP does not allow, which Envoy refuses (400) and kube-apiserver may accept. */
  invalidTargets: Finding[];
  counts: Record<string, number>;
}

interface Sandboxed {
  tb: TestSandbox;
  sidecar: URL;
  direct: URL;
  sidecarAdminSocket: string;
  controlPlaneAdmin: string;
  auditLogs: Map<string, string>;
  agent: { sidecar: Agent; direct: Agent };
}

/** The oracle's fixtures: objects some cases name (each created once; a second run finds them). */
async function createFixtures(s: Sandboxed, backend: Backend): Promise<void> {
  const state = s.tb.state();
  const create = async (apiserver: string, path: string, body: unknown, method: 'POST' | 'PATCH' = 'POST'): Promise<Answer & { body: string }> => {
    const url = new URL(apiserverNamed(state, apiserver).direct);
    const answer = await send(url, s.agent.direct, { id: 'fixture', path, method }, 'mvproxy-oracle/fixtures', JSON.stringify(body));
    if (answer.status !== 201 && answer.status !== 200 && answer.status !== 409) throw new Error(`fixture ${method} ${path}: ${answer.status} ${answer.body}`);
    return answer;
  };
  await create(LOCAL, '/api/v1/namespaces', { metadata: { name: 'oracle' } });
  await create(LOCAL, '/api/v1/namespaces/oracle/serviceaccounts', { metadata: { name: 'default' } });
  await create(LOCAL, '/api/v1/namespaces/oracle/configmaps', { metadata: { name: 'oracle-cm' } });
  await create(LOCAL, '/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'oracle\\backslash' }, rules: [] });
  await create(PEER, '/apis/storagemigration.k8s.io/v1/storageversionmigrations', {
    metadata: { name: 'oracle-svm' },
    spec: { resource: { group: 'apps', resource: 'deployments' } },
  });
  await create(LOCAL, '/api/v1/namespaces/oracle/pods', {
    metadata: { name: 'oracle-backend' },
    spec: { automountServiceAccountToken: false, containers: [{ name: 'backend', image: 'oracle' }] },
  });
  if (backend.ip) {
    // No kubelet runs the pod; its status says it is at the backend's address, so its proxy subresource reaches the backend.
    const status = { podIP: backend.ip, podIPs: [{ ip: backend.ip }] };
    await create(LOCAL, '/api/v1/namespaces/oracle/pods/oracle-backend/status', [{ op: 'add', path: '/status', value: status }], 'PATCH');
  }
}

/** An HTTP server a pod's proxy subresource reaches; it records the path of each request by User-Agent. */
interface Backend {
  server: Server;
  port: number;
  /** A non-loopback IPv4 address of this machine (the apiserver proxies only to global unicast addresses), if it has one. */
  ip?: string;
  received: Map<string, string>;
}

async function startBackend(): Promise<Backend> {
  const received = new Map<string, string>();
  const server = createServer((req, res) => {
    received.set(String(req.headers['user-agent'] ?? ''), req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('oracle backend\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const ip = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
  return { server, port, received, ...(ip ? { ip } : {}) };
}

/** Sends one case as is (the path is not normalized on the way), reads its status, and stops reading a stream after a moment. */
export function send(base: URL, agent: Agent, c: OracleCase, userAgent: string, body?: string): Promise<Answer & { body: string }> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (answer: Answer & { body: string }): void => {
      if (!settled) {
        settled = true;
        resolve(answer);
      }
    };
    let req: ReturnType<typeof request>;
    try {
      const headers: Record<string, string> = { 'user-agent': userAgent, accept: 'application/json', ...c.headers };
      if (body !== undefined) headers['content-type'] = c.method === 'PATCH' ? 'application/json-patch+json' : 'application/json';
      req = request({ host: base.hostname, port: base.port, method: c.method ?? 'GET', path: c.path, agent, headers });
    } catch (err) {
      done({ status: 0, error: (err as Error).message, body: '' });
      return;
    }
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error('timeout')));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      const finish = (): void => done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      const timer = setTimeout(() => {
        finish();
        res.destroy();
      }, STREAM_READ_MS);
      res.on('data', (chunk: Buffer) => {
        if (chunks.length < 64) chunks.push(chunk);
      });
      res.on('end', () => {
        clearTimeout(timer);
        finish();
      });
      res.on('error', () => {
        clearTimeout(timer);
        finish();
      });
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      done({ status: res.statusCode ?? 101, body: '' });
    });
    req.on('error', (err) => done({ status: 0, error: err.message, body: '' }));
    req.end(body);
  });
}

/** Upstream requests per sidecar cluster so far (Envoy admin statistics). */
async function clusterRequests(adminSocket: string): Promise<Map<string, number>> {
  const { stats } = await envoyAdminJson<{ stats: Array<{ name: string; value?: number }> }>(
    adminSocket,
    `/stats?format=json&filter=${encodeURIComponent('^cluster\\.[^.]+\\.upstream_rq_total$')}`,
  );
  return new Map(stats.map((s) => [s.name.replace(/^cluster\.|\.upstream_rq_total$/g, ''), s.value ?? 0]));
}

/** The plan the control plane made for kas-a's sidecar, once that sidecar runs it and kas-b's peer-only resources are in it. */
async function convergedPlan(controlPlaneAdmin: string): Promise<SidecarPlan> {
  return eventually(async () => {
    const status = (await (await fetch(`${controlPlaneAdmin}/status`)).json()) as {
      plans: SidecarPlan[];
      xds: Record<string, { connected: boolean; types: Record<string, { versionSent?: string; versionAcked?: string }> }>;
    };
    const plan = status.plans.find((p) => p.node === LOCAL);
    if (!plan?.routes.some((r) => r.group === 'storagemigration.k8s.io' && r.resource === 'storageversionmigrations' && r.action.kind === 'peers')) {
      throw new Error(`the plan of ${LOCAL} does not send storageversionmigrations to ${PEER} yet`);
    }
    const node = status.xds[LOCAL];
    if (!node?.connected || Object.values(node.types).some((t) => t.versionAcked !== t.versionSent))
      throw new Error(`${LOCAL}'s sidecar has not acked its routes`);
    return plan;
  }, 90_000);
}

function readAuditLog(path: string, apiserver: string, prefix: string, into: Map<string, Reading[]>): void {
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.includes(prefix)) continue;
    const event = JSON.parse(line) as AuditEvent;
    const ua = event.userAgent ?? '';
    if (!ua.startsWith(prefix)) continue;
    const readings = into.get(ua) ?? [];
    // A watch logs ResponseStarted and ResponseComplete: one reading per apiserver.
    if (!readings.some((r) => r.apiserver === apiserver)) {
      readings.push({ apiserver, requestURI: event.requestURI ?? '', verb: event.verb ?? '', ...(event.objectRef ? { objectRef: event.objectRef } : {}) });
    }
    into.set(ua, readings);
  }
}

/** `local`, `peers kas-b`, `unavailable kas-b`. */
function describeDestination(d: RequestDestination): string {
  if (d.kind === 'local') return 'local';
  return d.kind === 'peers' ? `peers ${d.peers.join(',')}` : `unavailable ${d.servedBy.join(',')}`;
}

/** Where the sidecar sent it, from its clusters (`local-h1-front-proxy` is local), else what Envoy answered itself. */
function actualDestination(r: CaseResult): string {
  const sets = [...new Set(r.clusters.map((c) => c.replace(/(-h1)?(-front-proxy)?$/, '')))];
  if (sets.length === 0) return r.viaSidecar.status === 503 ? 'envoy 503' : `envoy ${r.viaSidecar.status}`;
  return sets
    .map((set) =>
      set === 'local'
        ? 'local'
        : `peers ${set
            .replace(/^peers?-/, '')
            .split('+')
            .map(decodeURIComponent)
            .join(',')}`,
    )
    .join(' + ');
}

/** What a destination looks like from outside: a 503 of Envoy's own for `unavailable`. */
function observable(d: RequestDestination): string {
  return d.kind === 'unavailable' ? 'envoy 503' : describeDestination(d);
}

/** Go's URL.Path of a request target's path part, and its raw query: what the apiserver's handlers see. */
function goPath(target: string): string {
  const at = target.indexOf('?');
  const path = at === -1 ? target : target.slice(0, at);
  const query = at === -1 ? '' : target.slice(at);
  return path.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) + query;
}

/** The path with escapes of unreserved characters decoded: what a client that follows RFC 3986 would have sent. */
function withoutUnreservedEscapes(path: string): string {
  const at = path.search(/[?#]/);
  const head = at === -1 ? path : path.slice(0, at);
  const decoded = head.replace(/%([0-9A-Fa-f]{2})/g, (escaped, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return /^[A-Za-z0-9\-._~]$/.test(c) ? c : escaped;
  });
  return decoded + (at === -1 ? '' : path.slice(at));
}

/** A reading as comparable text; the name a list reads from `fieldSelector=metadata.name=X` counts, as it does upstream. */
function describeReading(info: RequestInfo, method: string, path: string): string {
  if (!info.isResourceRequest) return 'non-resource';
  let name = info.name ?? '';
  if (name === '' && (method === 'GET' || method === 'HEAD') && info.specialVerb === undefined) name = nameFromFieldSelector(path) ?? '';
  return [info.group, info.version, info.resource ?? '', info.subresource ?? '', info.namespace ?? '', name].join(' | ');
}

function describeObjectRef(ref: AuditEvent['objectRef']): string {
  if (!ref) return 'non-resource';
  return [ref.apiGroup ?? '', ref.apiVersion ?? '', ref.resource ?? '', ref.subresource ?? '', ref.namespace ?? '', ref.name ?? ''].join(' | ');
}

/** RequestInfoFactory takes a list's name from a field selector that requires exactly `metadata.name`. */
function nameFromFieldSelector(path: string): string | undefined {
  const at = path.indexOf('?');
  if (at === -1) return undefined;
  const selector = new URLSearchParams(path.slice(at + 1)).get('fieldSelector');
  const match = selector === null ? null : /^metadata\.name==?([^,=!]*)$/.exec(selector);
  const name = match?.[1];
  return name && name !== '.' && name !== '..' && !/[/%]/.test(name) ? name : undefined;
}

/** The apiserver's reading as mvproxy's model of it, for the planner. */
function requestInfoOf(reading: Reading): RequestInfo {
  const ref = reading.objectRef;
  const path = goPath(reading.requestURI).replace(/\?.*$/, '');
  if (!ref) return { isResourceRequest: false, path, group: '', version: '' };
  return {
    isResourceRequest: true,
    path,
    group: ref.apiGroup ?? '',
    version: ref.apiVersion ?? '',
    ...(ref.resource ? { resource: ref.resource } : {}),
    ...(ref.subresource ? { subresource: ref.subresource } : {}),
    ...(ref.namespace ? { namespace: ref.namespace } : {}),
    ...(ref.name ? { name: ref.name } : {}),
  };
}

/** The watch spellings the routes send over HTTP/2 (src/translator/routes.ts): the first `watch` value, as strconv.ParseBool reads true. */
function expectsHttp2(c: OracleCase): boolean {
  if (c.headers?.['upgrade']) return false;
  const at = c.path.indexOf('?');
  const watch = at === -1 ? null : new URLSearchParams(c.path.slice(at + 1)).get('watch');
  return watch !== null && /^(1|t|T|true|True|TRUE)$/.test(watch);
}

function compare(r: CaseResult, plan: SidecarPlan): Finding[] {
  const findings: Finding[] = [];
  const add = (kind: Finding['kind'], expected: string, actual: string): void => {
    if (expected !== actual) findings.push({ kind, result: r, expected, actual });
  };
  const method = r.case.method ?? 'GET';
  const mine = parseRequestPath(r.path);
  const actual = actualDestination(r);
  const decided = destinationForRequest(plan, mine);
  // route: where mvproxy's own reading sends it (Envoy refusing a request target it cannot parse is judged by `refused`).
  if (!(actual.startsWith('envoy') && r.viaSidecar.status === 400 && r.clusters.length === 0)) add('route', observable(decided), actual);
  // evidence: the audit logs agree with Envoy's statistics about who received it.
  const loggedBy = r.readings.map((x) => (x.apiserver === LOCAL ? 'local' : `peers ${x.apiserver}`)).join(' + ');
  if (r.readings.length > 0 && r.clusters.length > 0) add('evidence', actual, loggedBy);
  if (r.clusters.length > 0) {
    const wanted = expectsHttp2(r.case) ? 'http2' : 'http1';
    for (const cluster of r.clusters)
      add('flavour', `${wanted}, front-proxy`, `${cluster.includes('-h1') ? 'http1' : 'http2'}${cluster.endsWith('-front-proxy') ? ', front-proxy' : ''}`);
  }
  const direct = r.directReading;
  if (direct) {
    // apiserver-reading: where the plan sends what the apiserver itself reads.
    if (!actual.startsWith('envoy 400')) add('apiserver-reading', observable(destinationForRequest(plan, requestInfoOf(direct))), actual);
    add('reading', describeObjectRef(direct.objectRef), describeReading(mine, method, r.path));
  }
  for (const via of r.readings) {
    if (!direct) continue;
    add('meaning', `${describeObjectRef(direct.objectRef)} | ${goPath(direct.requestURI)}`, `${describeObjectRef(via.objectRef)} | ${goPath(via.requestURI)}`);
    add('forwarded', goPath(sidecarPath(r.path)).replace(/\?.*$/, ''), goPath(via.requestURI).replace(/\?.*$/, ''));
  }
  if (r.backendDirect !== undefined || r.backendViaSidecar !== undefined)
    add('meaning', `backend got ${r.backendDirect}`, `backend got ${r.backendViaSidecar}`);
  const accepted = (a: Answer): boolean => a.status >= 200 && a.status < 400;
  if (accepted(r.direct) && !accepted(r.viaSidecar)) {
    findings.push({
      kind: 'refused',
      result: r,
      expected: `${r.direct.status} as directly`,
      actual: `${r.viaSidecar.status}${r.viaSidecar.error ? ` ${r.viaSidecar.error}` : ''}`,
    });
  }
  return findings;
}

/**
 * Whether a case's differences come only from names spelled with escapes of
 * unreserved characters: read as an RFC 3986 client would have spelled it,
 * mvproxy reads what the apiserver read and routes it as the plan says.
 */
function onlyLiteralSpelling(r: CaseResult, findings: Finding[], plan: SidecarPlan): boolean {
  const spelled = withoutUnreservedEscapes(r.path);
  if (spelled === r.path || !r.directReading) return false;
  if (!findings.every((f) => f.kind === 'reading' || f.kind === 'apiserver-reading')) return false;
  const info = parseRequestPath(spelled);
  const readsAlike = describeReading(info, r.case.method ?? 'GET', spelled) === describeObjectRef(r.directReading.objectRef);
  return readsAlike && observable(destinationForRequest(plan, info)) === observable(destinationForRequest(plan, requestInfoOf(r.directReading)));
}

function substitute(path: string, backend: Backend): string {
  return path.replaceAll('@BACKEND@', `http:oracle-backend:${backend.port}`).replaceAll('@LONG@', 'l'.repeat(300));
}

/** Runs every case through kas-a's sidecar and directly, then compares. The sandbox must run kas-a and kas-b with sidecars and audit logs. */
export async function runPathOracle(tb: TestSandbox, cases: OracleCase[], options: { run?: string; log?: (line: string) => void } = {}): Promise<OracleReport> {
  const state = tb.state();
  const a = apiserverNamed(state, LOCAL);
  const tls = { ca: readFileSync(state.ca), cert: readFileSync(state.clientCerts.admin.cert), key: readFileSync(state.clientCerts.admin.key) };
  const auditLogs = new Map<string, string>();
  for (const name of [LOCAL, PEER]) {
    const path = tb.sandbox.auditLogPath(name);
    if (!path) throw new Error('the path oracle needs a sandbox started with auditLogs');
    auditLogs.set(name, path);
  }
  const s: Sandboxed = {
    tb,
    sidecar: new URL(a.sidecar ?? ''),
    direct: new URL(a.direct),
    sidecarAdminSocket: a.sidecarAdminSocket ?? '',
    controlPlaneAdmin: state.controlPlane?.admin ?? '',
    auditLogs,
    agent: { sidecar: new Agent({ keepAlive: true, maxSockets: 1, ...tls }), direct: new Agent({ keepAlive: true, maxSockets: 1, ...tls }) },
  };
  const backend = await startBackend();
  const run = options.run ?? Date.now().toString(36);
  const prefix = `mvproxy-oracle/${run}/`;
  try {
    await createFixtures(s, backend);
    const plan = await convergedPlan(s.controlPlaneAdmin);
    const results: CaseResult[] = [];
    let before = await clusterRequests(s.sidecarAdminSocket);
    for (const [i, c] of cases.entries()) {
      const path = substitute(c.path, backend);
      const sent = { ...c, path };
      const ua = `${prefix}${c.id}`;
      const viaSidecar = await send(s.sidecar, s.agent.sidecar, sent, ua);
      const after = await clusterRequests(s.sidecarAdminSocket);
      const clusters = [...after].filter(([name, n]) => /^(local|peers?-)/.test(name) && n > (before.get(name) ?? 0)).map(([name]) => name);
      before = after;
      const direct = await send(s.direct, s.agent.direct, sent, `${ua}/direct`);
      const result: CaseResult = { case: c, path, viaSidecar: strip(viaSidecar), direct: strip(direct), clusters, readings: [] };
      const viaBackend = backend.received.get(ua);
      const directBackend = backend.received.get(`${ua}/direct`);
      if (viaBackend !== undefined) result.backendViaSidecar = viaBackend;
      if (directBackend !== undefined) result.backendDirect = directBackend;
      results.push(result);
      if ((i + 1) % 500 === 0) options.log?.(`${i + 1} of ${cases.length} cases sent`);
    }
    // Blocking audit mode writes each event before the answer; a moment more for the last streams.
    await new Promise((r) => setTimeout(r, 1000));
    const readings = new Map<string, Reading[]>();
    for (const [name, path] of auditLogs) readAuditLog(path, name, prefix, readings);
    for (const r of results) {
      const ua = `${prefix}${r.case.id}`;
      r.readings = readings.get(ua) ?? [];
      const direct = readings.get(`${ua}/direct`)?.[0];
      if (direct) r.directReading = direct;
    }
    return report(results, plan);
  } finally {
    s.agent.sidecar.destroy();
    s.agent.direct.destroy();
    backend.server.close();
  }
}

function strip(answer: Answer & { body: string }): Answer {
  return answer.error ? { status: answer.status, error: answer.error } : { status: answer.status };
}

/**
 * RFC 9112 origin-form starts with `/` and allows no fragment and no byte
 * outside visible ASCII; Envoy's codec answers such a request 400 itself,
 * before any route, so how mvproxy would have read it does not matter. (Its
 * 400 to a HEAD request carries a body, which Node's client reports as an
 * error: status 0.)
 */
function invalidTarget(r: CaseResult): boolean {
  const invalid = !r.path.startsWith('/') || /[#]|[^\x21-\x7e]/.test(r.path);
  return invalid && r.clusters.length === 0 && (r.viaSidecar.status === 400 || r.viaSidecar.status === 0);
}

function report(results: CaseResult[], plan: SidecarPlan): OracleReport {
  const disagreements: Finding[] = [];
  const literalSpellings: Finding[] = [];
  const invalidTargets: Finding[] = [];
  for (const r of results) {
    const findings = compare(r, plan);
    if (findings.length === 0) continue;
    if (onlyLiteralSpelling(r, findings, plan)) literalSpellings.push(...findings);
    else if (invalidTarget(r)) invalidTargets.push(...findings);
    else disagreements.push(...findings);
  }
  const counts: Record<string, number> = {
    cases: results.length,
    'received by kas-a through the sidecar': results.filter((r) => r.readings.some((x) => x.apiserver === LOCAL)).length,
    'received by kas-b through the sidecar': results.filter((r) => r.readings.some((x) => x.apiserver === PEER)).length,
    'answered by Envoy itself': results.filter((r) => r.clusters.length === 0).length,
    'forwarded, no audit event (rejected before auditing)': results.filter((r) => r.clusters.length > 0 && r.readings.length === 0).length,
    'resource requests (as kas-a reads them directly)': results.filter((r) => r.directReading?.objectRef).length,
    'reached the proxy backend': results.filter((r) => r.backendViaSidecar !== undefined || r.backendDirect !== undefined).length,
    'cases that disagree': new Set(disagreements.map((f) => f.result.case.id)).size,
    'cases differing only by literal spelling': new Set(literalSpellings.map((f) => f.result.case.id)).size,
    'invalid request targets refused by Envoy': new Set(invalidTargets.map((f) => f.result.case.id)).size,
  };
  return { results, disagreements, literalSpellings, invalidTargets, counts };
}

export function describeFinding(f: Finding): string {
  const c = f.result.case;
  const what = `${c.method ?? 'GET'} ${JSON.stringify(f.result.path.length > 160 ? `${f.result.path.slice(0, 157)}...` : f.result.path)}`;
  const statuses = `(sidecar ${f.result.viaSidecar.status}, direct ${f.result.direct.status})`;
  return `[${f.kind}] ${c.id} ${what} ${statuses}: expected ${f.expected}; got ${f.actual}${c.why ? ` -- ${c.why}` : ''}`;
}

export function formatOracleReport(report: OracleReport): string {
  const lines = Object.entries(report.counts).map(([what, n]) => `${String(n).padStart(6)}  ${what}`);
  const byKind = (findings: Finding[]): string[] =>
    [...new Set(findings.map((f) => f.kind))].map((kind) => `${String(findings.filter((f) => f.kind === kind).length).padStart(6)}  ${kind}`);
  lines.push('', `disagreements: ${report.disagreements.length}`, ...byKind(report.disagreements), ...report.disagreements.map(describeFinding));
  lines.push('', `differences only in literal spelling (routed as spelled, not refused): ${report.literalSpellings.length}`);
  lines.push(...report.literalSpellings.map(describeFinding));
  lines.push('', `invalid request targets that Envoy refuses (400): ${report.invalidTargets.length}`, ...report.invalidTargets.map(describeFinding));
  return lines.join('\n');
}

/** `--cases N` generated cases (default 2000) from `--seed S` (default 10), plus the regression table. */
async function main(argv: string[]): Promise<number> {
  const option = (name: string, fallback: number): number => {
    const at = argv.indexOf(`--${name}`);
    const value = at === -1 ? fallback : Number(argv[at + 1]);
    if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} wants a whole number`);
    return value;
  };
  const cases = [...handPickedCases(), ...generatedCases(option('cases', 2000), option('seed', 10))];
  process.stderr.write(`starting a sandbox (${ORACLE_APISERVERS.map((x) => `${x.name} ${x.version}`).join(', ')}) with audit logs...\n`);
  const tb = await startTestSandbox(ORACLE_APISERVERS, { auditLogs: true });
  try {
    const report = await runPathOracle(tb, cases, { log: (line) => process.stderr.write(`${line}\n`) });
    process.stdout.write(`${formatOracleReport(report)}\n`);
    return report.disagreements.length === 0 ? 0 : 1;
  } finally {
    await tb.sandbox.down();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(2);
    },
  );
}
