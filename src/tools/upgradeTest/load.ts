// The continuous mixed load: workers per client kind (token, certificate),
// each owning the objects it creates so that its writes to them never race
// and the ledger can fold them in order. Every request is recorded.
import type { Balancer } from './balancer.js';
import type { Ledger } from './ledger.js';
import { classifyWrite, RESOURCE_SPECS, type ClientKind, type RequestRecord, type ResourceKey, type Verb } from './observations.js';
import { collectionPath, genPatch, MERGE_PATCH, newObject, objectPath, readMeta } from './objects.js';
import { setTimeout as sleep } from 'node:timers/promises';

export interface LoadOptions {
  workersPerKind: number;
  /** Pause between one worker's requests: keeps a 2-core machine able to run the apiservers too. */
  thinkMs: number;
  /** Milliseconds since the mode's start. */
  now: () => number;
  /** Name prefix, unique per run. */
  prefix: string;
  /** What the workers write and read (the version pair's resources). */
  resources: readonly ResourceKey[];
}

export class Load {
  readonly records: RequestRecord[] = [];
  private running = false;
  private paused = false;
  private busy = 0;
  private gen = 0;
  private loops: Promise<void>[] = [];
  /** Resources no worker writes to (it reads them instead): held while the last apiserver serving them leaves, after their read-back. */
  private held = new Set<ResourceKey>();

  constructor(
    private readonly balancer: Balancer,
    private readonly ledger: Ledger,
    private readonly opts: LoadOptions,
  ) {}

  start(): void {
    this.running = true;
    const kinds: ClientKind[] = ['token', 'cert'];
    this.loops = kinds.flatMap((kind) => Array.from({ length: this.opts.workersPerKind }, (_, i) => this.worker(kind, `${this.opts.prefix}-${kind}${i}`)));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Stops sending new requests and waits until none is in flight (a consistent moment to read the cluster back). */
  async pause(): Promise<void> {
    this.paused = true;
    while (this.busy > 0) await sleep(20);
  }

  resume(): void {
    this.paused = false;
  }

  /** From now on, no write to `resources` (reads go on): whatever is acknowledged of them is what was read back. */
  holdWrites(resources: readonly ResourceKey[]): void {
    for (const r of resources) this.held.add(r);
  }

  releaseWrites(): void {
    this.held.clear();
  }

  private async worker(kind: ClientKind, id: string): Promise<void> {
    const { resources } = this.opts;
    const owned = new Map<ResourceKey, string[]>(resources.map((r) => [r, []]));
    let seq = 0;
    while (this.running) {
      if (this.paused) {
        await sleep(20);
        continue;
      }
      this.busy++;
      try {
        const resource = resources[Math.floor(Math.random() * resources.length)] as ResourceKey;
        const mine = owned.get(resource) ?? [];
        const chosen = chooseVerb(mine.length);
        const verb: Verb = this.held.has(resource) && chosen !== 'get' && chosen !== 'list' ? (mine.length > 0 ? 'get' : 'list') : chosen;
        const name = verb === 'create' ? `${id}-${seq++}` : mine[Math.floor(Math.random() * mine.length)];
        await this.operate(kind, resource, verb, name, mine);
      } finally {
        this.busy--;
      }
      await sleep(this.opts.thinkMs);
    }
  }

  private async operate(kind: ClientKind, resource: ResourceKey, verb: Verb, name: string | undefined, mine: string[]): Promise<void> {
    const entry = this.balancer.pick();
    const t0 = this.opts.now();
    const gen = ++this.gen;
    let method = 'GET';
    const spec = RESOURCE_SPECS[resource];
    let path = collectionPath(spec);
    let body: unknown;
    let headers: Record<string, string> = {};
    if (verb === 'create') {
      method = 'POST';
      body = newObject(spec, name ?? '', gen);
    } else if (name !== undefined && verb !== 'list') {
      path = objectPath(spec, name);
      if (verb === 'update') {
        method = 'PATCH';
        body = genPatch(gen);
        headers = { 'content-type': MERGE_PATCH };
      } else if (verb === 'delete') {
        method = 'DELETE';
        // Jobs default to orphaning their pods: a finalizer only the garbage collector (not running here) would remove.
        path += '?propagationPolicy=Background';
      }
    }
    const answer = await this.balancer.send(entry, kind, method, path, body, headers);
    const t1 = this.opts.now();
    const record: RequestRecord = { t0, t1, entry: entry.name, client: kind, verb, resource, status: answer.status, retryAfter: answer.retryAfter };
    if (name !== undefined && verb !== 'list') record.name = name;
    if (answer.status === 0 || answer.status >= 400) record.detail = (answer.error ?? answer.body).slice(0, 300);
    this.records.push(record);
    if ((verb === 'create' || verb === 'update' || verb === 'delete') && name !== undefined) {
      const outcome = classifyWrite(answer.status);
      const meta = outcome === 'ack' ? readMeta(answer.body) : {};
      this.ledger.record({
        resource,
        name,
        verb,
        t0,
        t1,
        outcome,
        ...(verb === 'delete' ? {} : { gen }),
        ...(meta.rv !== undefined && verb !== 'delete' ? { rv: meta.rv } : {}),
      });
      // Keep using only objects whose existence is certain: an unanswered create or delete leaves it in doubt.
      if (verb === 'create' && outcome === 'ack') mine.push(name);
      if (verb === 'delete' && outcome !== 'rejected') mine.splice(mine.indexOf(name), 1);
    }
  }
}

/** Mostly reads and updates, with enough creates and deletes to keep each worker holding a few objects of each kind. */
function chooseVerb(owned: number): Verb {
  if (owned === 0) return Math.random() < 0.7 ? 'create' : 'list';
  const x = Math.random();
  if (owned > 6 && x < 0.2) return 'delete';
  if (x < 0.25) return 'get';
  if (x < 0.4) return 'list';
  if (x < 0.6) return 'create';
  if (x < 0.85) return 'update';
  return 'delete';
}
