// What each replica observed of the sidecars and apiservers it probes, for the
// `kubernetes` Service's publisher (issue 21): one ConfigMap (by default
// kube-system/mvproxy-liveness), one data key per replica, each written only
// by that replica with a merge patch of its own key (configMapRecord.ts), so
// no write conflicts with another. Every replica watches the whole record;
// planner/publicationLiveness.ts says what a change of an entry means.
import type { KubeConfig } from '@kubernetes/client-node';
import type { LivenessReport } from '../model/publication.js';
import type { Logger } from '../util/log.js';
import { isRecord } from '../util/json.js';
import type { ListWatchClient } from './listWatch.js';
import { ConfigMapWatcher, decodeEntries, patchConfigMapData, type ConfigMapRef } from './configMapRecord.js';

export const DEFAULT_LIVENESS_RECORD: ConfigMapRef = { namespace: 'kube-system', name: 'mvproxy-liveness' };

export function encodeLivenessReport(report: LivenessReport): string {
  return JSON.stringify(report);
}

function rounds(value: unknown): Record<string, number> | undefined {
  if (!isRecord(value)) return undefined;
  const out: Record<string, number> = {};
  for (const [name, round] of Object.entries(value)) {
    if (typeof round !== 'number' || !Number.isSafeInteger(round)) return undefined;
    out[name] = round;
  }
  return out;
}

/** One entry, or undefined when it is not one (a hand-edited or foreign value is ignored whole). */
export function decodeLivenessReport(value: string): LivenessReport | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (!isRecord(parsed)) return undefined;
  const { replica, incarnation, round } = parsed;
  const sidecars = rounds(parsed['sidecars']);
  const apiservers = rounds(parsed['apiservers']);
  if (typeof replica !== 'string' || typeof incarnation !== 'string' || typeof round !== 'number' || !Number.isSafeInteger(round)) return undefined;
  if (!sidecars || !apiservers) return undefined;
  const plan = parsed['plan'];
  return { replica, incarnation, round, sidecars, apiservers, ...(typeof plan === 'string' ? { plan } : {}) };
}

/** Every readable entry, by the key it is under (the replica that wrote it: an entry naming another replica is ignored). */
export function livenessReports(data: Readonly<Record<string, string>>): Map<string, LivenessReport> {
  return decodeEntries(data, (key, value) => {
    const report = decodeLivenessReport(value);
    return report?.replica === key ? report : undefined;
  });
}

export interface LivenessWatcherOptions {
  client: ListWatchClient;
  ref: ConfigMapRef;
  onChange: (reports: ReadonlyMap<string, LivenessReport>) => void;
  logger: Logger;
}

/** Watches the liveness record. */
export class LivenessWatcher extends ConfigMapWatcher<Map<string, LivenessReport>> {
  constructor(options: LivenessWatcherOptions) {
    super({ ...options, decode: livenessReports });
  }
}

/** Writes this replica's entry. */
export type LivenessWriter = (report: LivenessReport) => Promise<void>;

export function kubeLivenessWriter(kubeConfig: KubeConfig, ref: ConfigMapRef): LivenessWriter {
  return (report) => patchConfigMapData(kubeConfig, ref, { [report.replica]: encodeLivenessReport(report) });
}
