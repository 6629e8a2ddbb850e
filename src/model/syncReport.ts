// What a replica reports of a sidecar that streams from it: the sync record's
// entry (src/sources/syncRecord.ts reads and writes the record), which the
// admin API's status shows for sidecars streaming from other replicas.

/** One sidecar's entry in the sync record. */
export interface SidecarSyncReport {
  /** The replica the sidecar streams from (its replicaName). */
  replica: string;
  /** The version the sidecar last ACKed, per xDS type URL. */
  acked: Record<string, string>;
  /** When the replica wrote this (ISO 8601): an entry of a replica that died stays until another one writes. */
  at: string;
}
