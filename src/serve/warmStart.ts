// What a replica serves before it has synced with the apiservers. Sidecars
// must not depend on the control plane being up to date, or up at all: a
// replica that restarts (or starts with its node) answers at once. What it
// answers before its first read of the cluster goes only to sidecars that
// hold nothing (ads.ts, awaitSync): a sidecar that holds a configuration,
// perhaps newer than the kept one (another replica pushed it), keeps it until
// this replica has read the cluster afresh, so a warm start never rolls a
// sidecar back.
//
// - With `warmStartFile`, the cluster model behind the last snapshots it
//   pushed is kept there; at start it is read back and reconciled, which
//   gives the very same snapshots (versions are content hashes), so a sidecar
//   reconnecting to it is sent nothing new and a fresh sidecar gets the last
//   good routes. The model, not the snapshots, is kept: it is smaller than the
//   snapshots (whose filter configurations carry the filter module and the
//   pushed documents) and also restores the merged discovery the ext_proc
//   responder answers documents over the push budget from.
// - Without it (or with nothing usable in it), a sidecar that runs nothing
//   yet is sent the plan of a cluster about which nothing is known: every
//   request to its own apiserver, local documents untouched, what the cluster
//   does without mvproxy. A sidecar that already runs a config keeps it until
//   the replica has synced (controlPlane.ts, AdsServer.setStartupSnapshot).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { unobservedModel, type ApiserverEndpoint, type ClusterModel } from '../model/cluster.js';
import { writeFileAtomicSync } from '../util/atomicWrite.js';
import { isRecord } from '../util/json.js';
import type { Logger } from '../util/log.js';
import { parseClusterModel } from './warmStartSchema.js';

/** Bumped whenever ClusterModel changes shape: an older file is ignored, not misread. */
export const WARM_START_FORMAT = 1;

/** What is kept: the model, and the drains as last read from (or written to) the drain record. */
export interface WarmState {
  model: ClusterModel;
  draining: string[];
}

interface WarmStartFile extends WarmState {
  format: number;
  /** Epoch ms when written: a file older than MAX_WARM_START_AGE_MS is not used. */
  savedAt: number;
}

export type WarmStartRead = (WarmState & { savedAt: number }) | { unusable: string } | { absent: true };

/**
 * Larger than any model a replica keeps (every apiserver's discovery with
 * thousands of CRDs is a few MiB): a bigger file is not read into memory.
 */
export const MAX_WARM_START_BYTES = 64 * 1024 * 1024;

/**
 * How old a kept model may be to be served. The file is rewritten while the
 * replica runs, so its age is how long the replica was down: a restart or a
 * node's reboot takes minutes. After an hour the cluster may have been
 * upgraded since (an apiserver's upgrade takes minutes), and the kept routes
 * could send a resource its own apiserver now serves to a peer that is gone;
 * the cold plan (everything to the sidecar's own apiserver) is then what the
 * cluster does without mvproxy. A time far in the future (a clock set back)
 * is as unknown as an old one.
 */
export const MAX_WARM_START_AGE_MS = 60 * 60 * 1000;

/**
 * The model kept in `path`, if written within MAX_WARM_START_AGE_MS of `now`; a missing file is `absent`, anything else that is
 * not a whole warm-start file (cut short, not JSON, a field of the wrong type,
 * too large) is `unusable` with the reason. Never a throw: the replica starts
 * anyway, with what it observes.
 */
export function readWarmStart(path: string, now: number = Date.now()): WarmStartRead {
  let parsed: unknown;
  try {
    if (!existsSync(path)) return { absent: true };
    const size = statSync(path).size;
    if (size > MAX_WARM_START_BYTES) return { unusable: `${size} bytes, more than the ${MAX_WARM_START_BYTES} a kept model can take` };
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    return { unusable: (err as Error).message };
  }
  if (!isRecord(parsed) || parsed['format'] !== WARM_START_FORMAT) return { unusable: `not a warm-start file of format ${WARM_START_FORMAT}` };
  const { savedAt, draining } = parsed;
  if (typeof savedAt !== 'number' || !Number.isFinite(savedAt)) return { unusable: 'its savedAt is not a time' };
  if (!Array.isArray(draining) || !draining.every((n): n is string => typeof n === 'string')) return { unusable: 'its drains are malformed' };
  const kept = parseClusterModel(parsed['model']);
  if ('problem' in kept) return { unusable: kept.problem };
  if (Math.abs(now - savedAt) > MAX_WARM_START_AGE_MS)
    return { unusable: `written at ${timeText(savedAt)}, more than ${MAX_WARM_START_AGE_MS / 60_000} minutes from now` };
  return { model: kept.model, draining, savedAt };
}

/** A time in ms since the epoch as ISO text; a number past what a Date holds (±8.64e15) as itself. */
function timeText(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} ms since the epoch` : date.toISOString();
}

/** Replaces the file atomically (a crash leaves the previous state or this one). */
export function writeWarmStart(path: string, state: WarmState, savedAt: number): void {
  const file: WarmStartFile = { format: WARM_START_FORMAT, savedAt, ...state };
  writeFileAtomicSync(path, JSON.stringify(file), { mode: 0o600 });
}

export interface WarmStartKeeperOptions {
  file: string;
  /** What to keep, read when the write happens. */
  current: () => WarmState | undefined;
  logger: Logger;
  /** At most one write per this many ms (default 1000). */
  intervalMs?: number;
}

/**
 * Keeps the warm-start file up to date, writing at most once per interval
 * with the newest state: a CRD storm changes the model many times a second,
 * and each write serializes the whole model. The newest state is always
 * written, within the interval; a failed write is logged and serving goes on.
 */
export class WarmStartKeeper {
  private timer: NodeJS.Timeout | undefined;
  private lastWrite = Number.NEGATIVE_INFINITY;

  constructor(private readonly opts: WarmStartKeeperOptions) {}

  /** The state changed: write it now, or at the end of the interval. */
  keep(): void {
    if (this.timer) return;
    const wait = Math.max(0, this.lastWrite + (this.opts.intervalMs ?? 1000) - performance.now());
    this.timer = setTimeout(() => this.write(), wait);
    this.timer.unref();
  }

  /** Writes a pending change at once (on stop). */
  flush(): void {
    if (this.timer) this.write();
  }

  private write(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.lastWrite = performance.now();
    const state = this.opts.current();
    if (!state) return;
    try {
      writeWarmStart(this.opts.file, state, Date.now());
    } catch (err) {
      // Serving goes on; only the next restart starts colder.
      this.opts.logger.warn({ warmStartFile: this.opts.file, err: (err as Error).message }, 'could not keep the model for a warm start');
    }
  }
}

/**
 * The kept model, fitted to the apiservers declared now: an apiserver whose
 * name, hostname or address changed since, or that is new, starts unknown (so
 * its sidecar sends everything to it); one no longer declared is dropped.
 */
export function alignWarmModel(model: ClusterModel, declared: readonly ApiserverEndpoint[]): ClusterModel {
  const same = (a: ApiserverEndpoint, b: ApiserverEndpoint): boolean =>
    a.name === b.name && a.hostname === b.hostname && a.address.host === b.address.host && a.address.port === b.address.port;
  const unknown = unobservedModel(declared, model.now).apiservers;
  return { ...model, apiservers: unknown.map((blank) => model.apiservers.find((a) => same(a.endpoint, blank.endpoint)) ?? blank) };
}
