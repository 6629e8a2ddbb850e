// What each apiserver serves, read from its own discovery while the run goes
// on: `/api` and `/apis` asked directly of the apiserver (never through a
// sidecar or the load balancer) with the aggregated Accept and
// `profile=nopeer`, as mvproxy's own discovery sources ask (src/sources), so
// that an apiserver with upstream's Mixed Version Proxy on answers with what
// it serves itself, not its peers' merged document.
import type { Sandbox } from '../sandbox/sandbox.js';
import { AGGREGATED_DISCOVERY_ACCEPT, type DiscoveredServedSet, servedByDiscovery } from '../../entry/discovery.js';
import { httpsRequest } from '../../util/https.js';
import { RESOURCE_SPECS, RESOURCES, type ResourceKey } from './observations.js';
import { SERVES_NOTHING, type ServedSet, type Timeline } from './timeline.js';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The test's resources and the API groups two aggregated discovery documents
 * (`/api`, `/apis`) list, read as mvproxy's own sources read them
 * (servedByDiscovery); undefined when either is not one.
 */
export function servedFromDiscovery(apiBody: string, apisBody: string, resources: readonly ResourceKey[] = RESOURCES): ServedSet | undefined {
  let served: DiscoveredServedSet;
  try {
    served = servedByDiscovery(JSON.parse(apiBody), JSON.parse(apisBody));
  } catch {
    return undefined;
  }
  const servedResources = resources.filter((r) => served.resources.has(`${RESOURCE_SPECS[r].group}/${RESOURCE_SPECS[r].version}/${r}`));
  return { resources: new Set<ResourceKey>(servedResources), groups: new Set(served.groups) };
}

/** Reads every apiserver's served set every `intervalMs` into the timeline, until stopped. */
export class ServedSetObserver {
  private running = true;
  private readonly stopped = new Set<string>();
  private loop: Promise<void> = Promise.resolve();
  /** Readings of a running apiserver that failed (no answer, an error status, not an aggregated document): they change nothing, the last reading holds. */
  failedReadings = 0;

  constructor(
    private readonly sandbox: Sandbox,
    private readonly timeline: Timeline,
    private readonly now: () => number,
    private readonly intervalMs: number,
    private readonly resources: readonly ResourceKey[],
  ) {}

  /** One reading of every apiserver now, then one every `intervalMs`. */
  async start(): Promise<void> {
    await this.readAll();
    this.loop = (async () => {
      while (this.running) {
        await sleep(this.intervalMs);
        if (this.running) await this.readAll();
      }
    })();
  }

  /** `apiserver` is being stopped: from now on it serves nothing, and is not read, until `started`. */
  stopping(apiserver: string): void {
    this.stopped.add(apiserver);
    this.timeline.observe(apiserver, this.now(), SERVES_NOTHING);
  }

  /** `apiserver` has started again (ready): read it from now on. */
  started(apiserver: string): void {
    this.stopped.delete(apiserver);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private async readAll(): Promise<void> {
    const state = this.sandbox.state();
    const tls = { ca: state.ca, ...state.clientCerts.admin };
    await Promise.all(
      state.apiservers.map(async (a) => {
        if (!a.running || this.stopped.has(a.name)) return;
        const get = (path: string) => httpsRequest(`${a.direct}${path}`, tls, { headers: { accept: AGGREGATED_DISCOVERY_ACCEPT }, timeoutMs: 2000 });
        const [api, apis] = await Promise.all([get('/api'), get('/apis')]).catch(() => [undefined, undefined] as const);
        const served = api?.status === 200 && apis?.status === 200 ? servedFromDiscovery(api.body, apis.body, this.resources) : undefined;
        // Stamped when the answer came: a resource counts as served from the moment it was seen served.
        // A reading begun before the apiserver was being stopped no longer says anything.
        if (this.stopped.has(a.name)) return;
        if (served) this.timeline.observe(a.name, this.now(), served);
        else this.failedReadings++;
      }),
    );
  }
}
