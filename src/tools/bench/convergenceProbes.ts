// Pure parts of the convergence bench (convergence.ts): what each probe
// through a proxy path showed, when a served-set change took effect by those
// probes, and the figures over many samples. Times are milliseconds on one
// monotonic clock (performance.now()).
import { percentile } from './load.js';

/**
 * The kinds of served-set change timed:
 * `added`, an apiserver comes back serving a group-version it did not;
 * `removed`, one comes back without a group-version it served;
 * `drained`, an operator drains one (mvproxy only).
 */
/** Whether an aggregated discovery document (`/apis`, JSON) lists API group `group`: the clock of every served-set change. */
export function discoveryListsGroup(body: string, group: string): boolean {
  return (JSON.parse(body) as { items: Array<{ metadata: { name: string } }> }).items.some((g) => g.metadata.name === group);
}

export const CHANGE_KINDS = ['added', 'removed', 'drained'] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

/** One request through the proxy path, and what the changed apiserver's audit log says of it. */
export interface Probe {
  sentAt: number;
  /** When its answer (or its failure) arrived; absent while in flight. */
  receivedAt?: number;
  /** The status the client got; 0 when no answer came (connection refused, timeout). */
  status: number;
  /** The changed apiserver handled it: its audit log has it. */
  reached: boolean;
}

/**
 * When the change took effect through the proxy path, or undefined when the
 * probes do not show it yet.
 * - added: the answer to the first probe the changed apiserver served (its own
 *   audit log has it, and the client got 200).
 * - removed, drained: the sending of the first answered probe after the last
 *   one that reached the changed apiserver, once probes kept not reaching it
 *   for `stableMs` after that (a probe sent later reaching it again moves the
 *   point on), counted from `since` (the clock start) at the earliest.
 */
export function convergedAt(kind: ChangeKind, probes: readonly Probe[], since: number, stableMs: number): number | undefined {
  const done = probes.filter((p) => p.receivedAt !== undefined).sort((a, b) => a.sentAt - b.sentAt);
  if (kind === 'added') {
    const served = done.filter((p) => p.reached && p.status === 200).map((p) => p.receivedAt ?? Infinity);
    return served.length > 0 ? Math.max(since, Math.min(...served)) : undefined;
  }
  let last = -1;
  done.forEach((p, i) => {
    if (p.reached) last = i;
  });
  const first = done.slice(last + 1).find((p) => p.status !== 0);
  const newest = done.at(-1);
  if (!first || !newest) return undefined;
  const at = Math.max(since, first.sentAt);
  return newest.sentAt - at >= stableMs ? at : undefined;
}

/**
 * When the answers through the proxy path settled: the sending of the first
 * probe after the last one whose status differs from the newest's, once
 * `stableMs` of probes answered alike after it (from `since` at the earliest);
 * undefined before. A removed group-version answered 503 for a while, then
 * 404, settles at the first 404 even when no probe reached the apiserver.
 */
export function settledAt(probes: readonly Probe[], since: number, stableMs: number): { at: number; status: number } | undefined {
  const done = probes.filter((p) => p.receivedAt !== undefined).sort((a, b) => a.sentAt - b.sentAt);
  const newest = done.at(-1);
  if (!newest) return undefined;
  let last = -1;
  done.forEach((p, i) => {
    if (p.status !== newest.status) last = i;
  });
  const first = done[last + 1];
  if (!first) return undefined;
  const at = Math.max(since, first.sentAt);
  return newest.sentAt - at >= stableMs ? { at, status: newest.status } : undefined;
}

/** Pure: the last plan change of `node` in [sinceWallMs, untilWallMs] (the one a later check confirmed), else the first from `sinceWallMs` on; epoch ms. */
export function planChange(events: readonly JournalEvent[], node: string, sinceWallMs: number, untilWallMs?: number): number | undefined {
  const ats = events.filter((e) => e.kind === 'plan-changed' && e.subject === node && e.at >= sinceWallMs).map((e) => e.at);
  const before = untilWallMs === undefined ? [] : ats.filter((at) => at <= untilWallMs);
  if (before.length > 0) return Math.max(...before);
  return ats.length > 0 ? Math.min(...ats) : undefined;
}

/** The probe ids an audit log's lines name (the query parameter `param=<id>` of their requestURI). */
export function probeIdsInAuditLines(text: string, param: string): string[] {
  const ids: string[] = [];
  const pattern = new RegExp(`[?&]${param}=([A-Za-z0-9-]+)`, 'g');
  for (const line of text.split('\n')) {
    if (!line.includes(param)) continue;
    let uri: unknown;
    try {
      uri = (JSON.parse(line) as { requestURI?: unknown }).requestURI;
    } catch {
      continue; // a line cut short at the end of what was read: read again with the next chunk
    }
    if (typeof uri !== 'string') continue;
    for (const m of uri.matchAll(pattern)) if (m[1]) ids.push(m[1]);
  }
  return ids;
}

/** Figures over samples: the count, the median, the 90th percentile and the largest (nearest rank). */
export interface Distribution {
  samples: number;
  p50Ms: number;
  p90Ms: number;
  /** The largest sample. At 30 samples a "p99" is this value: it is named for what it is. */
  maxMs: number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    samples: sorted.length,
    p50Ms: Math.round(percentile(sorted, 50)),
    p90Ms: Math.round(percentile(sorted, 90)),
    maxMs: Math.round(sorted.at(-1) ?? NaN),
  };
}

/** One timed change through one side's proxy path. */
export interface ConvergenceSample {
  side: string;
  kind: ChangeKind;
  /** From the triggering event to the change taking effect through the proxy path. */
  ms: number;
  /** True when the cap came first: `ms` is then the cap, a lower bound. */
  capped: boolean;
  /** Probes sent, and the number of those that got no answer. */
  probes: number;
  unanswered: number;
  /**
   * Removed, drained: from the same clock until every answer through the proxy
   * path was the same status (`settledStatus`), stable; absent when the cap came first.
   */
  settledMs?: number;
  settledStatus?: number;
  /** Mean time between two probes sent: the resolution this sample achieved. */
  probeGapMs?: number;
  /** mvproxy: the same clock until the control plane's own status showed the change planned and every sidecar ACKed it. */
  controlPlaneMs?: number;
  /** mvproxy: the same clock until the control plane's event journal recorded the plan change of the probed sidecar (its own timestamp). */
  controlPlanePlannedMs?: number;
}

/** An event of the control plane's journal (`mvproxy admin events`). */
export interface JournalEvent {
  /** Epoch ms. */
  at: number;
  kind: string;
  subject: string;
}

export interface KindFigures extends Distribution {
  /** Samples that reached the cap (counted at the cap). */
  capped: number;
  /** The control plane's own figures (mvproxy), over the samples that have them: status showed it planned and ACKed; journal recorded the plan change. */
  controlPlane?: Distribution;
  controlPlanePlanned?: Distribution;
  /** Removed, drained: until the answers through the proxy path settled (see settledAt). */
  settled?: Distribution;
}

/** Pure: per side, per kind of change, the figures over its samples. */
export function convergenceFigures(samples: readonly ConvergenceSample[]): Record<string, Partial<Record<ChangeKind, KindFigures>>> {
  const out: Record<string, Partial<Record<ChangeKind, KindFigures>>> = {};
  for (const side of [...new Set(samples.map((s) => s.side))]) {
    const bySide: Partial<Record<ChangeKind, KindFigures>> = {};
    for (const kind of CHANGE_KINDS) {
      const mine = samples.filter((s) => s.side === side && s.kind === kind);
      if (mine.length === 0) continue;
      const internal = mine.flatMap((s) => (s.controlPlaneMs === undefined ? [] : [s.controlPlaneMs]));
      const planned = mine.flatMap((s) => (s.controlPlanePlannedMs === undefined ? [] : [s.controlPlanePlannedMs]));
      const settled = mine.flatMap((s) => (s.settledMs === undefined ? [] : [s.settledMs]));
      bySide[kind] = {
        ...distribution(mine.map((s) => s.ms)),
        capped: mine.filter((s) => s.capped).length,
        ...(internal.length > 0 ? { controlPlane: distribution(internal) } : {}),
        ...(planned.length > 0 ? { controlPlanePlanned: distribution(planned) } : {}),
        ...(settled.length > 0 ? { settled: distribution(settled) } : {}),
      };
    }
    out[side] = bySide;
  }
  return out;
}

/** Pure: the median over samples of the mean time between two probes (the resolution achieved), ms with one decimal. */
export function probeGapP50Ms(samples: readonly ConvergenceSample[]): number | undefined {
  const gaps = samples.flatMap((s) => (s.probeGapMs === undefined ? [] : [s.probeGapMs])).sort((a, b) => a - b);
  return gaps.length > 0 ? Math.round(percentile(gaps, 50) * 10) / 10 : undefined;
}

/** Pure: the flat summary's convergence figures, e.g. `convergence_added_p90_ms_upstream` (mvproxy's without a suffix). */
export function convergenceSummary(figures: Record<string, Partial<Record<ChangeKind, KindFigures>>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [side, kinds] of Object.entries(figures)) {
    const suffix = side === 'mvproxy' ? '' : `_${side}`;
    for (const kind of CHANGE_KINDS) {
      const f = kinds[kind];
      if (!f) continue;
      const key = (what: string): string => `convergence_${kind}_${what}${suffix}`;
      out[key('samples')] = f.samples;
      out[key('p50_ms')] = f.p50Ms;
      out[key('p90_ms')] = f.p90Ms;
      out[key('max_ms')] = f.maxMs;
      out[key('capped_samples')] = f.capped;
      if (f.controlPlane) {
        out[key('control_plane_p50_ms')] = f.controlPlane.p50Ms;
        out[key('control_plane_p90_ms')] = f.controlPlane.p90Ms;
        out[key('control_plane_max_ms')] = f.controlPlane.maxMs;
      }
      if (f.settled) {
        out[key('settled_samples')] = f.settled.samples;
        out[key('settled_p50_ms')] = f.settled.p50Ms;
        out[key('settled_p90_ms')] = f.settled.p90Ms;
        out[key('settled_max_ms')] = f.settled.maxMs;
      }
      if (f.controlPlanePlanned) {
        out[key('control_plane_planned_p50_ms')] = f.controlPlanePlanned.p50Ms;
        out[key('control_plane_planned_p90_ms')] = f.controlPlanePlanned.p90Ms;
        out[key('control_plane_planned_max_ms')] = f.controlPlanePlanned.maxMs;
      }
    }
  }
  return Object.fromEntries(Object.entries(out).filter(([, v]) => Number.isFinite(v)));
}
