// Tells the other replicas which config the sidecars streaming from this one
// have ACKed (sources/syncRecord.ts), so `drain --wait` on any replica can
// wait for every sidecar. Writes are batched (one merge patch per burst of
// ACKs) and only for entries that changed or that another replica wrote last;
// a failed write is retried, and costs nothing but a late answer to --wait.
import type { Logger } from '../util/log.js';
import type { SidecarSyncReport } from '../model/syncReport.js';
import { SyncWatcher, type SyncWriter } from '../sources/syncRecord.js';
import type { ConfigMapRef } from '../sources/configMapRecord.js';
import type { ListWatchClient } from '../sources/listWatch.js';
import type { AdsNodeStatus, AdsServer } from '../servers/ads.js';

export interface SyncReporterOptions {
  /** This replica's name, as written in the record. */
  replica: string;
  /** The ACKed version per type URL of every sidecar with an open stream to this replica. */
  localAcks: () => ReadonlyMap<string, Readonly<Record<string, string>>>;
  write: SyncWriter;
  logger: Logger;
  now?: () => number;
  /** How long ACKs are gathered before one write. */
  batchMs?: number;
  /** Wait before trying again after a failed write. */
  retryMs?: number;
}

export class SyncReporter {
  /** What this replica last wrote per sidecar (its acked versions as JSON); dropped when another replica writes the entry. */
  private readonly written = new Map<string, string>();
  private timer?: NodeJS.Timeout;
  private writing = false;
  private again = false;
  private failing = false;
  private stopped = false;

  constructor(private readonly options: SyncReporterOptions) {}

  /** Something changed (an ACK, a stream): write soon. */
  poke(): void {
    if (this.stopped) return;
    if (this.writing) {
      this.again = true;
      return;
    }
    this.schedule(this.options.batchMs ?? 100);
  }

  /** The record as every replica sees it: entries another replica wrote are this replica's to write again when its sidecars stream here. */
  observed(reports: ReadonlyMap<string, SidecarSyncReport>): void {
    let claimedElsewhere = false;
    for (const [sidecar, report] of reports) {
      if (report.replica === this.options.replica || !this.written.has(sidecar)) continue;
      this.written.delete(sidecar);
      claimedElsewhere = true;
    }
    if (claimedElsewhere) this.poke();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, ms);
    this.timer.unref();
  }

  private async flush(): Promise<void> {
    const changed: Record<string, SidecarSyncReport> = {};
    const at = new Date((this.options.now ?? Date.now)()).toISOString();
    for (const [sidecar, acked] of this.options.localAcks()) {
      const key = JSON.stringify(acked);
      if (this.written.get(sidecar) !== key) changed[sidecar] = { replica: this.options.replica, acked: { ...acked }, at };
    }
    if (Object.keys(changed).length === 0) return;
    this.writing = true;
    try {
      await this.options.write(changed);
      for (const [sidecar, report] of Object.entries(changed)) this.written.set(sidecar, JSON.stringify(report.acked));
      if (this.failing) this.options.logger.info('sync record written again');
      this.failing = false;
    } catch (err) {
      if (!this.failing)
        this.options.logger.warn({ err: (err as Error).message }, 'could not write the sync record: other replicas cannot see these sidecars; retrying');
      this.failing = true;
      this.again = true;
    } finally {
      this.writing = false;
    }
    if (this.again && !this.stopped) {
      this.again = false;
      this.schedule(this.failing ? (this.options.retryMs ?? 2000) : (this.options.batchMs ?? 100));
    }
  }
}

/**
 * The ACKed version per type URL of every sidecar with an open stream, from
 * the ADS server's status. Only the Envoy named after its apiserver is the
 * sidecar here: other Envoys running a sidecar's config are counted by the
 * replica they stream from, in its status and its `drain --wait`, not in the
 * shared record.
 */
export function localAcks(status: Readonly<Record<string, AdsNodeStatus>>): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  for (const [node, s] of Object.entries(status)) {
    if (s.connected === 0 || s.sidecar !== node) continue;
    const acked: Record<string, string> = {};
    for (const [url, type] of Object.entries(s.types)) if (type?.versionAcked) acked[url] = type.versionAcked;
    out.set(node, acked);
  }
  return out;
}

export interface ReplicaSyncRecordOptions {
  replica: string;
  ads: AdsServer;
  client: ListWatchClient;
  ref: ConfigMapRef;
  write: SyncWriter;
  logger: Logger;
}

/** This replica's part in the sync record: it writes what its sidecars ACKed and reads what the others wrote. */
export class ReplicaSyncRecord {
  /** What the other replicas say of the sidecars streaming from them. */
  reports: ReadonlyMap<string, SidecarSyncReport> = new Map();
  private readonly reporter: SyncReporter;
  private readonly watcher: SyncWatcher;

  constructor(opts: ReplicaSyncRecordOptions) {
    const reporter = new SyncReporter({ replica: opts.replica, localAcks: () => localAcks(opts.ads.status()), write: opts.write, logger: opts.logger });
    for (const event of ['ack', 'connect'] as const) opts.ads.on(event, () => reporter.poke());
    this.reporter = reporter;
    this.watcher = new SyncWatcher({
      client: opts.client,
      ref: opts.ref,
      onChange: (reports) => {
        this.reports = reports;
        reporter.observed(reports);
      },
      logger: opts.logger,
    });
  }

  /** Serving does not wait for it: the record only serves --wait and status. */
  start(): void {
    void this.watcher.start();
    this.reporter.poke();
  }

  stop(): void {
    this.watcher.stop();
    this.reporter.stop();
  }
}
