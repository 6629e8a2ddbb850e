// Which config each sidecar runs, as told by the replica it streams from: one
// ConfigMap (by default kube-system/mvproxy-sidecars), one data key per
// sidecar. A sidecar streams from one replica at a time (its own node's,
// others only as failover), so `drain --wait` asked on any replica needs the
// others' word on their sidecars. Every replica computes the same snapshot
// versions from the same cluster (they are content hashes), so the versions a
// sidecar ACKed mean the same thing to every replica.
import type { KubeConfig } from '@kubernetes/client-node';
import type { SidecarSyncReport } from '../model/syncReport.js';
import type { Logger } from '../util/log.js';
import { isRecord } from '../util/json.js';
import type { ListWatchClient } from './listWatch.js';
import { ConfigMapWatcher, decodeEntries, patchConfigMapData, type ConfigMapRef } from './configMapRecord.js';

export const DEFAULT_SYNC_RECORD: ConfigMapRef = { namespace: 'kube-system', name: 'mvproxy-sidecars' };

export function encodeSyncReport(report: SidecarSyncReport): string {
  return JSON.stringify(report);
}

/** One entry, or undefined when it is not one (a hand-edited or foreign value is ignored, never trusted in part). */
export function decodeSyncReport(value: string): SidecarSyncReport | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (!isRecord(parsed) || typeof parsed['replica'] !== 'string' || typeof parsed['at'] !== 'string' || !isRecord(parsed['acked'])) return undefined;
  const acked: Record<string, string> = {};
  for (const [url, version] of Object.entries(parsed['acked'])) {
    if (typeof version !== 'string') return undefined;
    acked[url] = version;
  }
  return { replica: parsed['replica'], acked, at: parsed['at'] };
}

/** Every readable entry of the record, by sidecar. */
export function syncReports(data: Readonly<Record<string, string>>): Map<string, SidecarSyncReport> {
  return decodeEntries(data, (_sidecar, value) => decodeSyncReport(value));
}

export interface SyncWatcherOptions {
  client: ListWatchClient;
  ref: ConfigMapRef;
  onChange: (reports: ReadonlyMap<string, SidecarSyncReport>) => void;
  logger: Logger;
}

/** Watches the sync record. */
export class SyncWatcher extends ConfigMapWatcher<Map<string, SidecarSyncReport>> {
  constructor(options: SyncWatcherOptions) {
    super({ ...options, decode: syncReports });
  }
}

/** Writes this replica's entries: one merge patch for all of them. */
export type SyncWriter = (reports: Record<string, SidecarSyncReport>) => Promise<void>;

export function kubeSyncWriter(kubeConfig: KubeConfig, ref: ConfigMapRef): SyncWriter {
  return (reports) => patchConfigMapData(kubeConfig, ref, Object.fromEntries(Object.entries(reports).map(([sidecar, r]) => [sidecar, encodeSyncReport(r)])));
}
