// The convergence bench's instruments: a loop of probes through a proxy path
// (one sent every few milliseconds, each with an id of its own in its query
// string, several in flight when answers are slow), and a reader of an
// apiserver's audit log that follows it as it grows and tells which probes
// reached that apiserver.
import { closeSync, existsSync, fstatSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { probeIdsInAuditLines, type Probe } from './convergenceProbes.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** The query parameter that carries a probe's id (kube-apiserver ignores unknown parameters of a GET). */
export const PROBE_PARAM = 'mvproxy-probe';
/** Probes in flight at most: a path that hangs is not flooded. */
const MAX_IN_FLIGHT = 16;

let runs = 0;

export interface IdentifiedProbe extends Probe {
  id: string;
}

export class ProbeLoop {
  readonly probes: IdentifiedProbe[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;
  private readonly running: Promise<void>;
  private readonly run = `${process.pid}-${++runs}`;

  /** Starts at once: `send` GETs a URL and resolves with its status. */
  constructor(
    private readonly send: (url: string) => Promise<number>,
    private readonly url: string,
    private readonly everyMs: number,
  ) {
    this.running = this.loop();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      if (this.inFlight.size < MAX_IN_FLIGHT) this.launch();
      await sleep(this.everyMs);
    }
  }

  private launch(): void {
    const id = `${this.run}-${this.probes.length + 1}`;
    const probe: IdentifiedProbe = { id, sentAt: performance.now(), status: 0, reached: false };
    this.probes.push(probe);
    const url = `${this.url}${this.url.includes('?') ? '&' : '?'}${PROBE_PARAM}=${id}`;
    const done: Promise<void> = this.send(url).then(
      (status) => {
        probe.status = status;
        probe.receivedAt = performance.now();
      },
      () => {
        probe.receivedAt = performance.now();
      },
    );
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
  }

  /** Sends no more and waits for the probes in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
    await Promise.all([...this.inFlight]);
  }

  /** Mean time between two probes sent, ms: the resolution the loop achieved. */
  meanGapMs(): number | undefined {
    const first = this.probes[0];
    const last = this.probes.at(-1);
    return first && last && this.probes.length > 1 ? (last.sentAt - first.sentAt) / (this.probes.length - 1) : undefined;
  }
}

/** Follows an audit log (one JSON event per line) and keeps the ids of the probes it names. */
export class AuditTail {
  private offset = 0;
  private rest = Buffer.alloc(0);
  private readonly ids = new Set<string>();

  /** `fresh`: the file is removed first (the apiserver is stopped and will write a new one); else what it holds already is skipped. */
  constructor(
    private readonly file: string,
    opts: { fresh: boolean },
  ) {
    if (opts.fresh) rmSync(file, { force: true });
    else if (existsSync(file)) this.offset = statSync(file).size;
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** Reads what was appended since the last read; a file that shrank (rotated) is read from its start. */
  read(): void {
    if (!existsSync(this.file)) return;
    const fd = openSync(this.file, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size < this.offset) {
        this.offset = 0;
        this.rest = Buffer.alloc(0);
      }
      if (size === this.offset) return;
      const chunk = Buffer.alloc(size - this.offset);
      const n = readSync(fd, chunk, 0, chunk.length, this.offset);
      this.offset += n;
      const text = Buffer.concat([this.rest, chunk.subarray(0, n)]);
      const cut = text.lastIndexOf(0x0a) + 1;
      this.rest = Buffer.from(text.subarray(cut));
      for (const id of probeIdsInAuditLines(text.subarray(0, cut).toString('utf8'), PROBE_PARAM)) this.ids.add(id);
    } finally {
      closeSync(fd);
    }
  }
}
