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
// The oracle as a command, with more cases: pathOracleMain.ts.
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { resourceRoutesOf, type SidecarPlan } from '../../src/planner/plan.js';
import type { OracleCase } from './pathOracleCases.js';
import { type CaseResult, clusterRequests, type Reading, readAuditLog, sidecarRequestsReceived } from './pathOracleEvidence.js';
import { createFixtures, LOCAL, PEER, startBackend, substitute } from './pathOracleFixtures.js';
import { type OracleReport, report } from './pathOracleReport.js';
import { type Answer, send, strip } from './pathOracleSend.js';
import { apiserverNamed, eventually, type TestSandbox } from './sandbox.js';

interface Sandboxed {
  sidecar: URL;
  direct: URL;
  sidecarAdminSocket: string;
  controlPlaneAdmin: string;
  auditLogs: Map<string, string>;
  agent: { sidecar: Agent; direct: Agent };
}

/** The plan the control plane made for kas-a's sidecar, once that sidecar runs it and kas-b's peer-only resources are in it. */
async function convergedPlan(controlPlaneAdmin: string): Promise<SidecarPlan> {
  return eventually(async () => {
    const status = (await (await fetch(`${controlPlaneAdmin}/status`)).json()) as {
      plans: SidecarPlan[];
      xds: Record<string, { connected: boolean; types: Record<string, { versionSent?: string; versionAcked?: string }> }>;
    };
    const plan = status.plans.find((p) => p.node === LOCAL);
    const routes = plan ? resourceRoutesOf(plan) : [];
    if (!plan || !routes.some((r) => r.group === 'storagemigration.k8s.io' && r.resource === 'storageversionmigrations' && r.action.kind === 'peers')) {
      throw new Error(`the plan of ${LOCAL} does not send storageversionmigrations to ${PEER} yet`);
    }
    const node = status.xds[LOCAL];
    if (!node?.connected || Object.values(node.types).some((t) => t.versionAcked !== t.versionSent))
      throw new Error(`${LOCAL}'s sidecar has not acked its routes`);
    return plan;
  }, 90_000);
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
    sidecar: new URL(a.sidecar ?? ''),
    direct: new URL(a.direct),
    sidecarAdminSocket: a.sidecarAdminSocket ?? '',
    controlPlaneAdmin: state.controlPlane?.admin ?? '',
    auditLogs,
    agent: { sidecar: new Agent({ keepAlive: true, maxSockets: 1, ...tls }), direct: new Agent({ keepAlive: true, maxSockets: 1, ...tls }) },
  };
  const backend = await startBackend(tb);
  const run = options.run ?? Date.now().toString(36);
  const prefix = `mvproxy-oracle/${run}/`;
  try {
    await createFixtures(tb, s.agent.direct, backend);
    const plan = await convergedPlan(s.controlPlaneAdmin);
    const results: CaseResult[] = [];
    /** The User-Agent each result's sidecar request was last sent with (a case is sent again when other traffic shared its window). */
    const userAgents = new Map<CaseResult, string>();
    for (const [i, c] of cases.entries()) {
      const path = substitute(c.path, backend);
      const sent = { ...c, path };
      const { ua, answer: viaSidecar, clusters } = await sendAlone(s, sent, `${prefix}${c.id}`);
      const direct = await send(s.direct, s.agent.direct, sent, `${prefix}${c.id}/direct`);
      const result: CaseResult = { case: c, path, viaSidecar: strip(viaSidecar), direct: strip(direct), clusters, readings: [] };
      userAgents.set(result, ua);
      const viaBackend = backend.received.get(ua);
      const directBackend = backend.received.get(`${prefix}${c.id}/direct`);
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
      r.readings = readings.get(userAgents.get(r) ?? '') ?? [];
      const direct = readings.get(`${prefix}${r.case.id}/direct`)?.[0];
      if (direct) r.directReading = direct;
    }
    return report(results, plan);
  } finally {
    s.agent.sidecar.destroy();
    s.agent.direct.destroy();
    backend.server.close();
  }
}

/** Tries before the clusters of a window shared with other traffic are taken as they are. */
const SEND_ATTEMPTS = 5;

/**
 * Sends `sent` through the sidecar and counts which clusters it went to; when
 * the sidecar received anything else meanwhile, sends it again (User-Agent
 * `ua~N`), so the clusters are the case's own.
 */
async function sendAlone(s: Sandboxed, sent: OracleCase, base: string): Promise<{ ua: string; answer: Answer & { body: string }; clusters: string[] }> {
  for (let attempt = 0; ; attempt++) {
    const ua = attempt === 0 ? base : `${base}~${attempt}`;
    const [before, receivedBefore] = [await clusterRequests(s.sidecarAdminSocket), await sidecarRequestsReceived(s.sidecarAdminSocket)];
    const answer = await send(s.sidecar, s.agent.sidecar, sent, ua);
    const [after, receivedAfter] = [await clusterRequests(s.sidecarAdminSocket), await sidecarRequestsReceived(s.sidecarAdminSocket)];
    const clusters = [...after].filter(([name, n]) => /^(local|peers?-)/.test(name) && n > (before.get(name) ?? 0)).map(([name]) => name);
    if (receivedAfter - receivedBefore <= 1 || attempt + 1 === SEND_ATTEMPTS) return { ua, answer, clusters };
  }
}
