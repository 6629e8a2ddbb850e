// The operator's procedure, alike in every mode: before a restart, take the
// apiserver's entry point out of the load balancer (mode mvproxy-drain also
// drains it with mvproxy and waits); if it is the last apiserver in service
// serving some resources, read every object of those back from it first and
// write them no more; stop it, start the other version (the sandbox waits for
// its /readyz), (mvproxy-drain: undrain and wait), then put it back in the
// load balancer, which sends it traffic again once its health check has
// passed `rise` times. The read-backs compare the cluster with the ledger.
import type { Sandbox } from '../sandbox/sandbox.js';
import type { Balancer } from './balancer.js';
import type { ChartBand } from './chart.js';
import type { ClusterReader } from './cluster.js';
import type { Ledger } from './ledger.js';
import type { Load } from './load.js';
import type { ResourceKey, StepRecord } from './observations.js';
import type { CheckRecord } from './outcomes.js';
import type { ServedSetObserver } from './servedSets.js';
import { servedOnlyBy, type Timeline } from './timeline.js';
import { setTimeout as sleep } from 'node:timers/promises';

export interface OperatorParts {
  sandbox: Sandbox;
  balancer: Balancer;
  cluster: ClusterReader;
  ledger: Ledger;
  load: Load;
  timeline: Timeline;
  observer: ServedSetObserver;
  now: () => number;
  log: (line: string) => void;
  /** mvproxy's drain (mode mvproxy-drain); absent in the other modes. */
  drain?: (verb: 'Drain' | 'Undrain', apiserver: string) => Promise<void>;
  /** Time with nothing done between steps. */
  holdMs: number;
}

export interface StepExtras {
  /** Why a step that is no upgrade is made (the stories' restart). */
  purpose?: string;
  /** Run once the apiserver has stopped, before it starts again. */
  afterStop?: () => Promise<void>;
}

export class Operator {
  readonly steps: StepRecord[] = [];
  readonly checks: CheckRecord[] = [];
  readonly marks: ChartBand['marks'] = [];

  constructor(private readonly p: OperatorParts) {}

  hold(): Promise<void> {
    return sleep(this.p.holdMs);
  }

  /**
   * Replaces `apiserver` (running version `from`) by version `to` (the same
   * version: a restart), then holds. `purpose` names a step outside the
   * upgrade in its record and marks; `afterStop` runs once it has stopped.
   */
  async step(apiserver: string, from: string, to: string, extra: StepExtras = {}): Promise<StepRecord> {
    const { balancer, sandbox, load, log, drain } = this.p;
    const onlyHere = servedOnlyBy(this.p.timeline, apiserver, this.p.now());
    const tag = extra.purpose === undefined ? '' : ` (${extra.purpose})`;
    const outAt = this.mark(`${apiserver} out${tag}`);
    log(`${apiserver}: out of rotation${drain ? ', drain' : ''}`);
    // Out of the rotation first (no new requests reach it), then the drain moves what sidecars send it to peers.
    const takeOut = balancer.takeOut(apiserver);
    await drain?.('Drain', apiserver);
    await takeOut;
    if (onlyHere.length > 0) {
      // Nothing in service will serve these once it stops: read them back from it now, and write them no more.
      load.holdWrites(onlyHere);
      await this.readBack(`read back (last to serve ${onlyHere.join(', ')})`, Object.fromEntries(onlyHere.map((r) => [r, apiserver])));
    }
    log(`${apiserver}: stop`);
    this.p.observer.stopping(apiserver);
    await sandbox.stopApiserver(apiserver);
    await extra.afterStop?.();
    log(`${apiserver}: start ${to}`);
    await sandbox.startApiserver(apiserver, { version: to });
    const readyAt = this.p.now();
    this.p.observer.started(apiserver);
    await drain?.('Undrain', apiserver);
    log(`${apiserver}: ready; back in the load balancer, waiting for its health check`);
    const inAt = await balancer.putBack(apiserver);
    this.marks.push({ second: inAt / 1000, label: `${apiserver} ${to} in${tag}` });
    load.releaseWrites();
    const record: StepRecord = { apiserver, from, to, outAt, readyAt, inAt, ...(extra.purpose === undefined ? {} : { purpose: extra.purpose }) };
    this.steps.push(record);
    log(`${apiserver}: in rotation at ${to}, ${Math.round(inAt - readyAt)} ms after /readyz passed`);
    await this.hold();
    return record;
  }

  /** Reads back every resource some apiserver in service is observed serving, each from one that serves it; resources none serves are left out. */
  async readBackServed(label: string, resources: readonly ResourceKey[]): Promise<void> {
    const served = [...this.p.timeline.servedAt(this.p.now())];
    const readFrom: Partial<Record<ResourceKey, string>> = {};
    for (const r of resources) {
      const via = served.find(([, s]) => s.resources.has(r))?.[0];
      if (via !== undefined) readFrom[r] = via;
    }
    await this.readBack(label, readFrom);
  }

  /** With the load paused (nothing in flight), every object of each resource read from the apiserver named for it, compared with the ledger. */
  private async readBack(label: string, readFrom: Partial<Record<ResourceKey, string>>): Promise<void> {
    const { load, cluster, ledger, log } = this.p;
    await load.pause();
    try {
      const at = this.mark(label);
      const lost = ledger.lostWrites(await cluster.snapshot(readFrom), at);
      this.checks.push({ label, at, resources: Object.keys(readFrom) as ResourceKey[], readFrom, lost });
      log(`${label}: ${lost.length} acknowledged writes missing`);
    } finally {
      load.resume();
    }
  }

  /** Records an operator event for the picture; returns its time. */
  mark(label: string): number {
    const t = this.p.now();
    this.marks.push({ second: t / 1000, label });
    return t;
  }
}
