// The certificate files the sidecars on this node use, as this replica sees
// them (one replica per node: the same paths on the same host). Polled by
// content, which notices a file rewritten in place as well as one renamed
// into place. Two things follow a change:
// - the client CA bundle's digest goes into the listener (listener.ts,
//   clientCaMetadata), so connections made under the old bundle drain;
// - a marker file is renamed into the directory of each changed file, which
//   Envoy watches (secrets.ts, watched_directory): Envoy notices renames only,
//   so without this a file rewritten in place (`kubeadm certs renew`) would
//   not be re-read until the next rename there.
// A file renamed into place needs neither this replica nor the control plane:
// Envoy re-reads it by itself.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileAtomicSync } from '../util/atomicWrite.js';
import type { Logger } from '../util/log.js';
import { RELOAD_MARKER } from '../xds/reloadMarker.js';

export interface CertificateFilesOptions {
  /** Every certificate, key and CA file a sidecar on this host names. */
  files: readonly string[];
  /** The client CA bundle, whose digest the listener carries. */
  clientCa: string;
  /** How often the files are read (the serve config's certificatePollMillis). */
  certificatePollMs: number;
  /** Called with the bundle's new digest when it changes (not at start). */
  onClientCaChange: (sha256: string | undefined) => void;
  logger: Logger;
}

/** SHA-256 (hex) of a file's content; undefined when it cannot be read. */
export function fileSha256(path: string): string | undefined {
  try {
    return createHash('sha256').update(readFileSync(path)).digest('hex');
  } catch {
    return undefined;
  }
}

export class CertificateFiles {
  private readonly digests = new Map<string, string | undefined>();
  private timer: NodeJS.Timeout | undefined;
  private readonly unwritable = new Set<string>();

  constructor(private readonly opts: CertificateFilesOptions) {
    for (const file of new Set(opts.files)) this.digests.set(file, fileSha256(file));
    this.digests.set(opts.clientCa, fileSha256(opts.clientCa));
  }

  /** The client CA bundle's digest as last read. */
  get clientCaSha256(): string | undefined {
    return this.digests.get(this.opts.clientCa);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.poll(), this.opts.certificatePollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads every file once; reports what changed since the last read. */
  poll(): void {
    const changedDirs = new Set<string>();
    let clientCaChanged = false;
    for (const [file, before] of this.digests) {
      const now = fileSha256(file);
      // Gone for now (mid-rename, or removed): Envoy keeps what it has, and so does this.
      if (now === undefined || now === before) continue;
      this.digests.set(file, now);
      changedDirs.add(dirname(file));
      if (file === this.opts.clientCa) clientCaChanged = true;
    }
    for (const dir of changedDirs) this.nudge(dir);
    if (clientCaChanged) {
      this.opts.logger.info({ clientCa: this.opts.clientCa }, 'client CA bundle changed: connections made under the old one will drain');
      this.opts.onClientCaChange(this.clientCaSha256);
    }
  }

  /** Renames a marker into `dir`, which Envoy watches: it re-reads the certificate files there. */
  private nudge(dir: string): void {
    const marker = join(dir, RELOAD_MARKER);
    try {
      writeFileAtomicSync(marker, `${new Date().toISOString()}\n`, { mode: 0o600 });
      this.unwritable.delete(dir);
    } catch (err) {
      if (this.unwritable.has(dir)) return;
      this.unwritable.add(dir);
      this.opts.logger.warn(
        { dir, err: (err as Error).message },
        'certificate files changed but the reload marker cannot be written there: Envoy re-reads files rewritten in place only after a rename in that directory',
      );
    }
  }
}
