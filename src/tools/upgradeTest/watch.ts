// The resuming watch client and the discovery refresher, both through the
// load balancer. A watch that ends (cut by the balancer, closed by the
// server, broken, failed) resumes from the last resourceVersion it saw
// (objects or bookmarks) through another entry point, as client-go's
// reflector does. A watch that fails before its answer is a transport error;
// one that breaks after its 200 is a broken watch; both are counted.
import type { Balancer } from './balancer.js';
import { RESOURCE_SPECS, type BrokenWatch, type ClientKind, type RequestRecord, type ResourceKey, type WatchEventRecord } from './observations.js';
import { collectionPath, discoveryGroups } from './objects.js';
import { AGGREGATED_DISCOVERY_JSON_ACCEPT } from '../../entry/discovery.js';
import { setTimeout as sleep } from 'node:timers/promises';

interface WatchLine {
  type?: string;
  object?: { code?: number; metadata?: { name?: string; resourceVersion?: string } };
}

export class Watcher {
  private running = true;
  private done: Promise<void> = Promise.resolve();
  /** The moment the initial list answered: writes that began after it must all arrive. */
  startedAt?: number;
  /** Re-lists after a `410 Gone` (the resourceVersion was compacted away): events in between are lost to a watcher. */
  relists = 0;
  /** Streams that broke after their 200 (not cut by the load balancer). */
  readonly broken: BrokenWatch[] = [];
  /** Streams the server ended cleanly after their 200 (not cut by the load balancer). */
  endedByServer = 0;

  constructor(
    private readonly balancer: Balancer,
    private readonly resource: ResourceKey,
    private readonly kind: ClientKind,
    private readonly now: () => number,
    private readonly records: RequestRecord[],
    readonly events: WatchEventRecord[],
  ) {}

  get resourceKey(): ResourceKey {
    return this.resource;
  }

  /** Lists (until that succeeds) for a starting resourceVersion, then watches until `stop`. */
  async start(): Promise<void> {
    let rv = await this.list();
    this.done = (async () => {
      let last: string | undefined;
      while (this.running) {
        const entry = this.balancer.pick(last);
        last = entry.name;
        const t0 = this.now();
        let gone = false;
        const path = `${collectionPath(RESOURCE_SPECS[this.resource])}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`;
        const end = await this.balancer.watch(
          entry,
          this.kind,
          path,
          (status, retryAfter) => this.record(t0, entry.name, status, retryAfter),
          (line) => {
            const event = parse(line);
            const newRv = event?.object?.metadata?.resourceVersion;
            if (event?.type === 'ERROR') gone = event.object?.code === 410;
            else if (newRv !== undefined) rv = newRv;
            const name = event?.object?.metadata?.name;
            if ((event?.type === 'ADDED' || event?.type === 'MODIFIED' || event?.type === 'DELETED') && name !== undefined && newRv !== undefined)
              this.events.push({ resource: this.resource, type: event.type, name, rv: newRv, t: this.now() });
          },
        );
        if (!end.cut && end.status === 200) {
          if (end.error === undefined) this.endedByServer++;
          else this.broken.push({ t0, t: this.now(), entry: entry.name, resource: this.resource, error: end.error });
        }
        if (!end.cut && end.error !== undefined && !this.recordedSince(t0)) {
          this.records.push({
            t0,
            t1: this.now(),
            entry: entry.name,
            client: this.kind,
            verb: 'watch',
            resource: this.resource,
            status: 0,
            retryAfter: false,
            detail: end.error,
          });
        }
        if (gone) {
          this.relists++;
          rv = await this.list();
        }
        if (this.running && (end.error !== undefined || end.body !== undefined)) await sleep(100);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.balancer.close();
    await this.done;
  }

  private recorded = new Set<number>();
  private recordedSince(t0: number): boolean {
    return this.recorded.has(t0);
  }

  private record(t0: number, entry: string, status: number, retryAfter: boolean): void {
    this.recorded.add(t0);
    this.records.push({ t0, t1: this.now(), entry, client: this.kind, verb: 'watch', resource: this.resource, status, retryAfter });
  }

  private async list(): Promise<string> {
    for (;;) {
      const entry = this.balancer.pick();
      const t0 = this.now();
      const answer = await this.balancer.send(entry, this.kind, 'GET', collectionPath(RESOURCE_SPECS[this.resource]));
      this.records.push({
        t0,
        t1: this.now(),
        entry: entry.name,
        client: this.kind,
        verb: 'list',
        resource: this.resource,
        status: answer.status,
        retryAfter: answer.retryAfter,
      });
      const rv = answer.status === 200 ? (JSON.parse(answer.body) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion : undefined;
      if (rv !== undefined) {
        this.startedAt ??= this.now();
        return rv;
      }
      await sleep(200);
    }
  }
}

function parse(line: string): WatchLine | undefined {
  try {
    return JSON.parse(line) as WatchLine;
  } catch {
    return undefined;
  }
}

/** Refreshes discovery as client-go does (/api, then /apis, aggregated Accept), every `intervalMs`, alternating client kinds. */
export function discoveryLoop(balancer: Balancer, now: () => number, records: RequestRecord[], intervalMs: number): { stop: () => Promise<void> } {
  let running = true;
  const loop = (async () => {
    let i = 0;
    while (running) {
      const kind: ClientKind = i++ % 2 === 0 ? 'token' : 'cert';
      for (const path of ['/api', '/apis'] as const) {
        const entry = balancer.pick();
        const t0 = now();
        const answer = await balancer.send(entry, kind, 'GET', path, undefined, { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT });
        const record: RequestRecord = {
          t0,
          t1: now(),
          entry: entry.name,
          client: kind,
          verb: 'discovery',
          resource: path,
          status: answer.status,
          retryAfter: answer.retryAfter,
        };
        if (path === '/apis' && answer.status === 200) record.groups = discoveryGroups(answer.body) ?? [];
        if (answer.status === 0 || answer.status >= 400) record.detail = (answer.error ?? answer.body).slice(0, 300);
        records.push(record);
      }
      await sleep(intervalMs);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
