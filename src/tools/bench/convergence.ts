// Convergence, measured from the triggering event and the same way for every
// side. Three kinds of served-set change (convergenceProbes.ts):
// - added: an apiserver restarts serving a group-version it did not. Clock:
//   the first answer of its own discovery (profile=nopeer, polled directly)
//   that lists it; done: the first request through the other apiserver's
//   proxy path (mvproxy: its sidecar; upstream: that apiserver itself) that
//   the restarted apiserver served.
// - removed: it restarts without it. Clock: the first answer of its discovery
//   without it; done: from when no request through the proxy path reaches it
//   for that group-version any more.
// - drained (mvproxy only): clock at the drain request; done: from when the
//   requests through the drained apiserver's sidecar for what the others
//   serve stop reaching it.
// Which apiserver a request reached is read from the changed apiserver's own
// audit log (turned on for it only, from its restart on): every probe
// carries an id in its query string, and the audit log is written before the
// apiserver answers (blocking mode), so a probe's answer is never ahead of it.
import { Agent, request } from 'node:https';
import { readFileSync } from 'node:fs';
import { auditLogPath } from '../sandbox/apiservers.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { AGGREGATED_DISCOVERY_NOPEER_JSON } from '../../entry/discovery.js';
import { AuditTail, ProbeLoop } from './probeLoop.js';
import {
  type ChangeKind,
  type ConvergenceSample,
  convergedAt,
  convergenceFigures,
  discoveryListsGroup,
  type JournalEvent,
  type KindFigures,
  planChange,
  settledAt,
} from './convergenceProbes.js';

type Settled = NonNullable<ReturnType<typeof settledAt>>;

/** Probes through the proxy path, and the discovery polls that start the clock: one every POLL_MS. */
export const POLL_MS = 3;
/** Removed, drained: no probe may reach the changed apiserver for this long after the point called done. */
export const STABLE_MS = 1000;
/** How often the probes gathered so far are judged (the figure itself is at the probes' resolution). */
const JUDGE_MS = 50;
/** Every request at Metadata level, once (ResponseComplete): who answered which probe. */
export const PROBE_AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
`;

export interface ConvergenceTarget {
  /** `mvproxy` or `upstream`. */
  side: string;
  sandbox: Sandbox;
  /** The apiserver restarted (added, removed) or drained. */
  changed: string;
  /** The proxy path probed (URL base): the other apiserver's sidecar, or the other apiserver itself. */
  proxy: string;
  token: string;
  /** mvproxy: polls the control plane's /status; true once its plan shows the change and every sidecar ACKed it. */
  controlPlane?: (kind: ChangeKind) => Promise<boolean>;
  /** mvproxy: the control plane's recent journal events, and the node of the probed sidecar (whose plan changes). */
  journal?: { events: () => Promise<JournalEvent[]>; node: string };
}

export interface ServedSetChange {
  group: string;
  /** The runtime-config that turns it off (restarting with '' restores the release's defaults). */
  runtimeConfigOff: string;
  /** A LIST in that group-version. */
  path: string;
}

export interface ConvergenceOptions {
  capMs: number;
  progress: (line: string) => void;
}

type Get = ((url: string, accept?: string) => Promise<{ status: number; body: string }>) & { close: () => void };

/** A keep-alive GET as a token client makes it (one TLS handshake per connection, not per request); `close` ends its connections. */
function getter(sandbox: Sandbox, token: string): Get {
  const agent = new Agent({ keepAlive: true, maxSockets: 32, ca: readFileSync(sandbox.state().ca) });
  const get = (url: string, accept = 'application/json'): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const r = request(url, { agent, headers: { authorization: `Bearer ${token}`, accept }, timeout: 2000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      r.on('timeout', () => r.destroy(new Error('timeout')));
      r.on('error', reject);
      r.end();
    });
  return Object.assign(get, { close: () => agent.destroy() });
}

/** After the change showed through the proxy path, the control plane's own figure may take this much longer before it is left out. */
const CONTROL_PLANE_GRACE_MS = 2000;

/**
 * The control plane's own view on the same clock (mvproxy), polled every 10 ms:
 * `result(converged)` resolves with when it showed the change, or undefined when
 * it did not within CONTROL_PLANE_GRACE_MS of `converged`.
 */
function watchControlPlane(t: ConvergenceTarget, kind: ChangeKind): { result: (converged: Promise<unknown>) => Promise<number | undefined> } {
  const check = t.controlPlane;
  let deadline = Infinity;
  const seen = check
    ? (async () => {
        while (performance.now() < deadline) {
          if (await check(kind).catch(() => false)) return performance.now();
          await sleep(10);
        }
        return undefined;
      })()
    : Promise.resolve(undefined);
  return {
    result: async (converged) => {
      await converged;
      deadline = performance.now() + CONTROL_PLANE_GRACE_MS;
      return seen;
    },
  };
}

type Judged = { at: number | undefined; settled: Settled | undefined };

/**
 * Judges the probes every JUDGE_MS until the change shows through the proxy
 * path (removed, drained: and the answers settled too) or the cap.
 */
async function awaitConvergence(kind: ChangeKind, loop: ProbeLoop, tail: AuditTail, since: () => number | undefined, capAt: () => number): Promise<Judged> {
  for (;;) {
    // Answered probes first, then the audit log: blocking audit wrote theirs before they were answered.
    const done = loop.probes.filter((p) => p.receivedAt !== undefined);
    tail.read();
    for (const p of done) p.reached = tail.has(p.id);
    const t0 = since();
    const at = t0 === undefined ? undefined : convergedAt(kind, done, t0, STABLE_MS);
    const settled = t0 === undefined || kind === 'added' ? undefined : settledAt(done, t0, STABLE_MS);
    if (at !== undefined && (kind === 'added' || settled !== undefined)) return { at, settled };
    if (performance.now() > capAt()) return { at, settled };
    await sleep(JUDGE_MS);
  }
}

function sampleOf(
  t: ConvergenceTarget,
  kind: ChangeKind,
  t0: number,
  { at, settled }: Judged,
  capMs: number,
  loop: ProbeLoop,
  cp: number | undefined,
  planned: number | undefined,
): ConvergenceSample {
  return {
    side: t.side,
    kind,
    ms: Math.round(at === undefined ? capMs : at - t0),
    capped: at === undefined,
    ...(settled === undefined ? {} : { settledMs: Math.round(settled.at - t0), settledStatus: settled.status }),
    probes: loop.probes.length,
    unanswered: loop.probes.filter((p) => p.receivedAt !== undefined && p.status === 0).length,
    ...gapOf(loop),
    ...(cp === undefined ? {} : { controlPlaneMs: Math.round(cp - t0) }),
    ...(planned === undefined ? {} : { controlPlanePlannedMs: Math.round(planned - t0) }),
  };
}

/**
 * When (on the bench's clock) the journal recorded the probed sidecar's plan change (mvproxy):
 * the last from `since` until the status showed the change (`until`), else the first from `since` on.
 */
async function plannedAt(t: ConvergenceTarget, since: number, until: number | undefined): Promise<number | undefined> {
  if (!t.journal) return undefined;
  const events = await t.journal.events().catch(() => []);
  // Epoch ms to the bench's monotonic clock, by a fresh pair of readings.
  const offset = Date.now() - performance.now();
  const at = planChange(events, t.journal.node, since + offset, until === undefined ? undefined : until + offset);
  return at === undefined ? undefined : at - offset;
}

function gapOf(loop: ProbeLoop): { probeGapMs?: number } {
  const gap = loop.meanGapMs();
  return gap === undefined ? {} : { probeGapMs: Math.round(gap * 10) / 10 };
}

/** One restart of `t.changed` with the group-version added back or removed, timed through `t.proxy`. */
export async function restartSample(t: ConvergenceTarget, change: ServedSetChange, kind: 'added' | 'removed', capMs: number): Promise<ConvergenceSample> {
  const state = t.sandbox.state();
  const restarted = state.apiservers.find((a) => a.name === t.changed);
  if (!restarted) throw new Error(`no apiserver ${t.changed}`);
  const get = getter(t.sandbox, t.token);
  const auditFile = auditLogPath(state.logs, t.changed);
  await t.sandbox.stopApiserver(t.changed);
  const tail = new AuditTail(auditFile, { fresh: true });
  const startFailed = t.sandbox
    .startApiserver(t.changed, { runtimeConfig: kind === 'removed' ? change.runtimeConfigOff : '', auditPolicy: PROBE_AUDIT_POLICY })
    .then(
      () => undefined,
      (err: unknown) => err,
    );
  let t0: number | undefined;
  let answering: number | undefined;
  let giveUpAt = performance.now() + 4 * capMs;
  // The clock: the first discovery answer of the restarted apiserver itself that shows the change.
  const clock = (async () => {
    while (t0 === undefined && performance.now() < giveUpAt) {
      const sent = performance.now();
      const discovery = await get(`${restarted.direct}/apis`, AGGREGATED_DISCOVERY_NOPEER_JSON).catch(() => undefined);
      if (discovery?.status === 200) {
        answering ??= sent;
        const serves = discoveryListsGroup(discovery.body, change.group);
        if (serves === (kind === 'added')) t0 = sent;
      }
      if (t0 === undefined) await sleep(POLL_MS);
    }
  })();
  // Probes (and the control plane's view) from its first discovery answer on: nothing reaches it before, nothing is planned for it before.
  while (answering === undefined && performance.now() < giveUpAt) await sleep(POLL_MS);
  const loop = new ProbeLoop((url) => get(url).then((r) => r.status), t.proxy + change.path, POLL_MS);
  const cp = watchControlPlane(t, kind);
  const converging = awaitConvergence(
    kind,
    loop,
    tail,
    () => t0,
    () => (t0 === undefined ? giveUpAt : t0 + capMs),
  );
  const controlPlaneAt = cp.result(converging);
  const judged = await converging;
  giveUpAt = 0;
  await Promise.all([loop.stop(), clock]);
  const err = await startFailed;
  if (err !== undefined) throw err;
  get.close();
  if (t0 === undefined || answering === undefined) throw new Error(`${t.changed} never showed the change in its own discovery`);
  const cpAt = await controlPlaneAt;
  return sampleOf(t, kind, t0, judged, capMs, loop, cpAt, await plannedAt(t, answering, cpAt));
}

/** One drain of `t.changed` (mvproxy): clock at the Drain request, done when requests through its sidecar stop reaching it; then undrained. */
export async function drainSample(
  t: ConvergenceTarget,
  path: string,
  admin: { drain: (apiserver: string) => Promise<void>; undrain: (apiserver: string) => Promise<void> },
  capMs: number,
): Promise<ConvergenceSample> {
  const get = getter(t.sandbox, t.token);
  const tail = new AuditTail(auditLogPath(t.sandbox.state().logs, t.changed), { fresh: false });
  const loop = new ProbeLoop((url) => get(url).then((r) => r.status), t.proxy + path, POLL_MS);
  await sleep(100); // probes that reach it before the drain: the baseline
  const t0 = performance.now();
  const cp = watchControlPlane(t, 'drained');
  await admin.drain(t.changed);
  const converging = awaitConvergence(
    'drained',
    loop,
    tail,
    () => t0,
    () => t0 + capMs,
  );
  const controlPlaneAt = cp.result(converging);
  const judged = await converging;
  await loop.stop();
  get.close();
  const cpAt = await controlPlaneAt;
  const sample = sampleOf(t, 'drained', t0, judged, capMs, loop, cpAt, await plannedAt(t, t0, cpAt));
  await admin.undrain(t.changed);
  await waitUntilReached(t, path, capMs);
  return sample;
}

/** Untimed: probes through `t.proxy` until one is served by `t.changed` again (after an undrain or its own restart). */
export async function waitUntilReached(t: ConvergenceTarget, path: string, capMs: number): Promise<void> {
  const get = getter(t.sandbox, t.token);
  const tail = new AuditTail(auditLogPath(t.sandbox.state().logs, t.changed), { fresh: false });
  const loop = new ProbeLoop((url) => get(url).then((r) => r.status), t.proxy + path, 20);
  const start = performance.now();
  const { at } = await awaitConvergence(
    'added',
    loop,
    tail,
    () => start,
    () => start + capMs,
  );
  await loop.stop();
  get.close();
  if (at === undefined) throw new Error(`requests through ${t.proxy} never reached ${t.changed} again`);
}

export interface ConvergenceResult {
  samples: ConvergenceSample[];
  figures: Record<string, Partial<Record<ChangeKind, KindFigures>>>;
}

/**
 * `samples` of each kind per side: restarts alternate removed, added (the first
 * side alternating too), then the drains of mvproxy's target if it has `drain`.
 */
export async function measureConvergence(
  targets: ConvergenceTarget[],
  change: ServedSetChange,
  drain: { target: ConvergenceTarget; path: string; admin: Parameters<typeof drainSample>[2] } | undefined,
  opts: ConvergenceOptions & { samples: number },
): Promise<ConvergenceResult> {
  const samples: ConvergenceSample[] = [];
  const report = (s: ConvergenceSample, i: number): void => {
    samples.push(s);
    opts.progress(
      `  ${s.side} ${s.kind} ${i + 1}/${opts.samples}: ${s.capped ? `capped at ${s.ms}` : s.ms} ms (${s.probes} probes${s.unanswered ? `, ${s.unanswered} unanswered` : ''})` +
        (s.settledMs === undefined ? '' : `, answers settled on ${s.settledStatus} at ${s.settledMs} ms`) +
        (s.controlPlaneMs === undefined ? '' : `; control plane: status planned and ACKed at ${s.controlPlaneMs} ms`) +
        (s.controlPlanePlannedMs === undefined ? '' : `, journal's plan change at ${s.controlPlanePlannedMs} ms`),
    );
  };
  for (let i = 0; i < opts.samples; i++) {
    const order = i % 2 === 0 ? targets : [...targets].reverse();
    for (const kind of ['removed', 'added'] as const) for (const t of order) report(await restartSample(t, change, kind, opts.capMs), i);
  }
  if (drain) {
    // Its audit log (from the restarts above, else from one of its own), then traffic back on it before the first drain.
    const d = drain.target;
    if (d.sandbox.auditLogPath(d.changed) === undefined) {
      await d.sandbox.stopApiserver(d.changed);
      await d.sandbox.startApiserver(d.changed, { auditPolicy: PROBE_AUDIT_POLICY });
    }
    await waitUntilReached(d, drain.path, opts.capMs);
    for (let i = 0; i < opts.samples; i++) report(await drainSample(d, drain.path, drain.admin, opts.capMs), i);
  }
  return { samples, figures: convergenceFigures(samples) };
}
