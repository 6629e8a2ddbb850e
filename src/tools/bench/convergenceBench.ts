// The convergence part of `mvproxy-dev bench` (convergence.ts does the timing):
// which apiserver changes and which proxy path is probed on each side, the
// control plane's own view of each change (mvproxy), and how drains are
// asked for (its admin API, as an operator would).
import { call, withAdminClient } from '../../entry/adminClient.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { SandboxState } from '../sandbox/state.js';
import { type ConvergenceTarget, measureConvergence, POLL_MS, STABLE_MS } from './convergence.js';
import { type ChangeKind, convergenceSummary, type JournalEvent, probeGapP50Ms } from './convergenceProbes.js';
import type { AdminClient } from '../../generated/mvproxy/admin/v1/Admin.js';
import type { Event__Output } from '../../generated/mvproxy/admin/v1/Event.js';
import type { ConvergenceResult } from './convergence.js';

/** One side's sandbox of two apiservers: `a` is the proxy path's own, `b` the one that changes. */
export interface ConvergenceBed {
  side: 'mvproxy' | 'upstream';
  sandbox: Sandbox;
  state: SandboxState;
  token: string;
}

export interface ConvergenceBenchOptions {
  samples: number;
  capMs: number;
  /** The group-version only `b` serves, and a LIST in it. */
  group: string;
  listPath: string;
  /** What both serve (a GET), for the drains. */
  sharedPath: string;
  progress: (line: string) => void;
}

type Route = { group: string; resource: string; action: { kind: string; peers?: string[] } };
/** A plan entry as /status shows it (src/planner/plan.ts PlanEntry). */
type Entry = { match: { kind: string; group?: string; resource?: string }; destination: { kind: string; peers?: string[] } };
interface ControlPlaneStatus {
  plans: Array<{ node: string; entries: Entry[] }>;
  xds: Record<string, { connected: number | boolean; types: Record<string, { versionSent?: string; versionAcked?: string }> }>;
}

/** Pure: the control plane's status shows the change in the plan of `node`'s sidecar, and every sidecar ACKed what was sent. */
export function statusShows(status: ControlPlaneStatus, kind: ChangeKind, node: string, changed: string, group: string): boolean {
  const routes = (status.plans.find((p) => p.node === node)?.entries ?? [])
    .filter((e) => e.match.kind === 'resource' && e.destination.kind !== 'local')
    .map((e): Route => ({ group: e.match.group ?? '', resource: e.match.resource ?? '', action: e.destination }));
  const toChanged = (r: Route): boolean => r.action.kind === 'peers' && (r.action.peers ?? []).includes(changed);
  const planned =
    kind === 'added'
      ? routes.some((r) => r.group === group && toChanged(r))
      : kind === 'removed'
        ? !routes.some((r) => r.group === group)
        : routes.some((r) => r.group === '' && r.resource === 'configmaps' && r.action.kind === 'peers' && !toChanged(r));
  const acked = Object.values(status.xds).every((n) => Boolean(n.connected) && Object.values(n.types).every((t) => t.versionAcked === t.versionSent));
  return planned && acked;
}

function controlPlaneView(bed: ConvergenceBed, node: string, changed: string, group: string): (kind: ChangeKind) => Promise<boolean> {
  const admin = bed.state.controlPlane?.admin;
  if (!admin) throw new Error('internal: the mvproxy sandbox has no control plane');
  // A drain moves the drained apiserver's own traffic: its sidecar's plan is the one that changes.
  return async (kind) =>
    statusShows((await (await fetch(`${admin}/status`)).json()) as ControlPlaneStatus, kind, kind === 'drained' ? changed : node, changed, group);
}

/** The journal's recent events (WatchEvents without follow), as the convergence bench reads them. */
function journalEvents(client: AdminClient): Promise<JournalEvent[]> {
  return new Promise((resolve, reject) => {
    const events: JournalEvent[] = [];
    const stream = client.WatchEvents({ follow: false, limit: 200 });
    stream.on('data', (e: Event__Output) => events.push({ at: Date.parse(e.time), kind: e.kind, subject: e.subject }));
    stream.on('end', () => resolve(events));
    stream.on('error', reject);
  });
}

/** The samples on both sides; with the admin client, mvproxy's control-plane figures and its drains. */
function measure(beds: ConvergenceBed[], opts: ConvergenceBenchOptions, client: AdminClient | undefined): Promise<ConvergenceResult> {
  const [a, b] = ['kas-a', 'kas-b'];
  const mvproxyExtras = (bed: ConvergenceBed, node: string) =>
    bed.side === 'mvproxy' && client ? { controlPlane: controlPlaneView(bed, a, b, opts.group), journal: { events: () => journalEvents(client), node } } : {};
  const targets: ConvergenceTarget[] = beds.map((bed) => {
    const own = bed.state.apiservers.find((x) => x.name === a);
    const proxy = bed.side === 'mvproxy' ? own?.sidecar : own?.direct;
    if (!proxy) throw new Error(`internal: no proxy path in the ${bed.side} sandbox`);
    return { side: bed.side, sandbox: bed.sandbox, changed: b, proxy, token: bed.token, ...mvproxyExtras(bed, a) };
  });
  const mv = beds.find((bed) => bed.side === 'mvproxy');
  const mvSidecarB = mv?.state.apiservers.find((x) => x.name === b)?.sidecar;
  // The drained apiserver is kas-b; its own sidecar is the path whose traffic moves to kas-a.
  const drain =
    mv && mvSidecarB && client
      ? {
          target: { side: 'mvproxy', sandbox: mv.sandbox, changed: b, proxy: mvSidecarB, token: mv.token, ...mvproxyExtras(mv, b) },
          path: opts.sharedPath,
          admin: {
            drain: async (apiserver: string) => void (await call(client, 'Drain', { apiserver })),
            undrain: async (apiserver: string) => void (await call(client, 'Undrain', { apiserver })),
          },
        }
      : undefined;
  return measureConvergence(targets, { group: opts.group, runtimeConfigOff: `${opts.group}/v1=false`, path: opts.listPath }, drain, {
    samples: opts.samples,
    capMs: opts.capMs,
    progress: opts.progress,
  });
}

/** Runs the samples on both sides; returns the result, its summary figures and how it was measured. */
export async function convergenceBench(
  beds: ConvergenceBed[],
  opts: ConvergenceBenchOptions,
): Promise<{ summary: Record<string, number>; convergence: ConvergenceResult & { method: string; capMs: number; samplesPerKind: number } }> {
  const [a, b] = ['kas-a', 'kas-b'];
  const adminSocket = beds.find((bed) => bed.side === 'mvproxy')?.state.controlPlane?.adminSocket;
  opts.progress(`measuring convergence: ${opts.samples} samples per kind of change and side (probes every ${POLL_MS} ms) ...`);
  const result = adminSocket ? await withAdminClient(adminSocket, (client) => measure(beds, opts, client)) : await measure(beds, opts, undefined);
  const gap = probeGapP50Ms(result.samples);
  return {
    summary: {
      convergence_samples: opts.samples,
      convergence_probe_interval_ms: POLL_MS,
      ...(gap === undefined ? {} : { convergence_probe_gap_p50_ms: gap }),
      ...convergenceSummary(result.figures),
    },
    convergence: {
      method:
        `added: ${b} restarted with ${opts.group}/v1 back on; clock from the sending of the first ${b} /apis (profile=nopeer, polled directly every ${POLL_MS} ms) that lists ${opts.group}; ` +
        `done at the answer to the first LIST through the proxy path (mvproxy: ${a}'s sidecar; upstream: ${a} itself) that ${b} served (200, in ${b}'s own audit log). ` +
        `removed: ${b} restarted with --runtime-config=${opts.group}/v1=false; clock from the first ${b} /apis without it; done at the sending of the first answered probe after the last one ${b}'s audit log has, once none reached ${b} for ${STABLE_MS} ms. ` +
        `drained (mvproxy only): clock at the admin Drain request for ${b}; GETs of ${opts.sharedPath} (served by both) through ${b}'s sidecar; done as for removed; then undrained and waited until one reaches ${b} again. ` +
        `settled (removed, drained): same clock, until every answer through the proxy path had the same status for ${STABLE_MS} ms (settledStatus: e.g. 503 from the proxy while it waits, then the 404 nobody-serves answer). ` +
        `Probes: one GET every ${POLL_MS} ms (up to 16 in flight, keep-alive), each tagged with a query parameter that ${b}'s audit log (Metadata, blocking, on from its restart) records; probe_gap is the achieved spacing. ` +
        `Control plane (mvproxy), same clock: control_plane = until its /status (polled every 10 ms) showed the plan changed and every sidecar ACKed it; ` +
        `control_plane_planned = its event journal's timestamp of the probed sidecar's plan change (the last before the status showed it, else the first) (${a}; ${b} for drains) after ${b} first answered discovery (drains: after the request), by its own timestamp. Figures: p50, p90 (nearest rank) and max over the samples; capped samples count at the cap.`,
      capMs: opts.capMs,
      samplesPerKind: opts.samples,
      ...result,
    },
  };
}
