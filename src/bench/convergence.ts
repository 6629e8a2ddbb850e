// Convergence, black-box and the same for every mode: restart one apiserver
// with a resource turned off (or back on), start the clock when it is ready
// (/readyz) and its own discovery (profile=nopeer) shows the change, and stop
// it when a request for that resource through every OTHER entry point is
// answered right: 200 when the restarted apiserver serves it again, 404 when
// nobody does. Until the restarted apiserver is ready nobody can serve its
// resources, so the clock starts only then.
import type { Sandbox } from '../sandbox/sandbox.js';
import { httpsRequest } from '../util/https.js';
import { percentile } from './load.js';
import { AGGREGATED_DISCOVERY_NOPEER_JSON } from '../model/discovery.js';
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 10;

export interface ConvergenceTarget {
  /** `mvproxy` or `upstream`. */
  mode: string;
  sandbox: Sandbox;
  /** The apiserver restarted with the changed served set. */
  restarted: string;
  /** Every other entry point (URL base): the sidecars of the other apiservers, or the other apiservers themselves. */
  others: string[];
  /** mvproxy only: polls the control plane's /status; true once its routes reflect the change and every sidecar ACKed them. */
  internal?: (resourceOff: boolean) => Promise<boolean>;
}

export interface ConvergenceChange {
  group: string;
  /** The runtime-config that turns it off (restarting with '' restores the release's defaults). */
  runtimeConfigOff: string;
  /** A GET for the resource (a LIST). */
  path: string;
}

export interface ConvergenceSample {
  mode: string;
  /** Whether the restart turned the resource off (else back on). */
  resourceOff: boolean;
  ms: number;
  /** True when the cap was reached first: `ms` is then the cap, a lower bound. */
  capped: boolean;
  /** mvproxy: the same clock until the control plane's status showed every sidecar ACKed routes for the change. */
  internalMs?: number;
}

/** One restart and its convergence, measured from the outside. */
export async function convergenceSample(
  t: ConvergenceTarget,
  change: ConvergenceChange,
  resourceOff: boolean,
  token: string,
  capMs: number,
): Promise<ConvergenceSample> {
  const state = t.sandbox.state();
  const restarted = state.apiservers.find((a) => a.name === t.restarted);
  if (!restarted) throw new Error(`no apiserver ${t.restarted}`);
  const get = (url: string, accept = 'application/json') =>
    httpsRequest(url, { ca: state.ca }, { headers: { authorization: `Bearer ${token}`, accept }, timeoutMs: 2000 });
  await t.sandbox.stopApiserver(t.restarted);
  const starting = t.sandbox.startApiserver(t.restarted, { runtimeConfig: resourceOff ? change.runtimeConfigOff : '' });
  const startFailed = starting.then(
    () => undefined,
    (err: unknown) => err,
  );
  let readyAt = 0;
  for (;;) {
    try {
      const [ready, discovery] = await Promise.all([get(`${restarted.direct}/readyz`), get(`${restarted.direct}/apis`, AGGREGATED_DISCOVERY_NOPEER_JSON)]);
      if (ready.status === 200 && discovery.status === 200) {
        const serves = (JSON.parse(discovery.body) as { items: Array<{ metadata: { name: string } }> }).items.some((g) => g.metadata.name === change.group);
        if (serves !== resourceOff) {
          readyAt = performance.now();
          break;
        }
      }
    } catch {
      // still starting
    }
    await sleep(POLL_MS);
  }
  const want = resourceOff ? 404 : 200;
  const deadline = readyAt + capMs;
  let internalMs: number | undefined;
  // The control plane's own view, on the same clock, while the black-box poll runs.
  const internal = t.internal;
  const internalDone = internal
    ? (async () => {
        while (performance.now() < deadline) {
          if (await internal(resourceOff).catch(() => false)) {
            internalMs = performance.now() - readyAt;
            return;
          }
          await sleep(POLL_MS / 2);
        }
      })()
    : Promise.resolve();
  let ms = capMs;
  let capped = true;
  while (performance.now() < deadline) {
    const answers = await Promise.all(
      t.others.map((base) =>
        get(base + change.path).then(
          (r) => r.status,
          () => 0,
        ),
      ),
    );
    if (answers.every((s) => s === want)) {
      ms = performance.now() - readyAt;
      capped = false;
      break;
    }
    await sleep(POLL_MS);
  }
  await internalDone;
  const err = await startFailed;
  if (err !== undefined) throw err;
  return { mode: t.mode, resourceOff, ms: Math.round(ms), capped, ...(internalMs === undefined ? {} : { internalMs: Math.round(internalMs) }) };
}

export interface ConvergenceFigures {
  samples: ConvergenceSample[];
  p50Ms: number;
  p99Ms: number;
  /** Samples that reached the cap (their value is the cap, a lower bound). */
  capped: number;
  /** The samples that turned the resource back on (the direction where a stale view answers a wrong 404). */
  resourceOnP99Ms: number;
  internalP50Ms?: number;
  internalP99Ms?: number;
}

/** Pure: percentiles over one mode's samples. */
export function convergenceFigures(samples: ConvergenceSample[]): ConvergenceFigures {
  const p = (values: number[], q: number): number =>
    Math.round(
      percentile(
        [...values].sort((a, b) => a - b),
        q,
      ),
    );
  const ms = samples.map((s) => s.ms);
  const internal = samples.flatMap((s) => (s.internalMs === undefined ? [] : [s.internalMs]));
  return {
    samples,
    p50Ms: p(ms, 50),
    p99Ms: p(ms, 99),
    capped: samples.filter((s) => s.capped).length,
    resourceOnP99Ms: p(
      samples.filter((s) => !s.resourceOff).map((s) => s.ms),
      99,
    ),
    ...(internal.length > 0 ? { internalP50Ms: p(internal, 50), internalP99Ms: p(internal, 99) } : {}),
  };
}

/** Alternates the modes sample by sample (the first mode alternating too), the change alternating off and on. */
export async function measureConvergence(
  targets: ConvergenceTarget[],
  change: ConvergenceChange,
  opts: { samples: number; capMs: number; token: (t: ConvergenceTarget) => string; progress: (line: string) => void },
): Promise<Record<string, ConvergenceFigures>> {
  const byMode = new Map<string, ConvergenceSample[]>(targets.map((t) => [t.mode, []]));
  for (let i = 0; i < opts.samples; i++) {
    const resourceOff = i % 2 === 0;
    const order = i % 4 < 2 ? targets : [...targets].reverse();
    for (const t of order) {
      const s = await convergenceSample(t, change, resourceOff, opts.token(t), opts.capMs);
      byMode.get(t.mode)?.push(s);
      opts.progress(
        `  ${t.mode} sample ${i + 1} (${change.group} ${resourceOff ? 'off' : 'on'}): ${s.capped ? `capped at ${s.ms}` : s.ms} ms` +
          (s.internalMs === undefined ? '' : ` (control plane ACKed at ${s.internalMs} ms)`),
      );
    }
  }
  return Object.fromEntries([...byMode].map(([mode, samples]) => [mode, convergenceFigures(samples)]));
}
