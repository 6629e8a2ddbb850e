// The upgrade test's in-cluster clients (podLoad.ts starts this with node
// inside the sandbox's network namespace): what pods do with the `kubernetes`
// Service, in every mode alike. A kube-proxy stand-in reads the Service's
// EndpointSlices every `sliceIntervalMs` through an endpoint it knows and
// keeps the ready ones; each worker LISTs one of the pair's resources at a
// random one of them, on a new connection verified for the ClusterIP, with a
// service-account token (podHttp.ts). In modes none and upstream the
// apiservers publish themselves; in the mvproxy modes mvproxy publishes the
// sidecars. One JSON line per request (`record`) and per change of the
// endpoints (`endpoints`) on stdout, until SIGTERM.
// Usage: node podLoadClient.js '<PodLoadInput as JSON>'
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseSlices, podGet, SERVICE_SLICES_PATH, serviceEndpoints, type PodIdentity } from '../sandbox/podHttp.js';
import type { RequestRecord, ResourceKey } from './observations.js';

export interface PodLoadInput {
  /** The Service's endpoints when the load starts (read by the harness). */
  bootstraps: Endpoint[];
  /** The cluster CA file. */
  ca: string;
  token: string;
  clusterIp: string;
  /** Date.now() at the mode's start: records' times are milliseconds since then, as the harness's. */
  startEpochMs: number;
  workers: number;
  thinkMs: number;
  sliceIntervalMs: number;
  /** What the workers LIST, by resource. */
  paths: { resource: ResourceKey; path: string }[];
  /** Each node address's apiserver name: the entry a record names. */
  entries: Record<string, string>;
}

export interface Endpoint {
  address: string;
  port: number;
}

/** A line of this process's output. */
export type PodLoadLine = { record: RequestRecord } | { endpoints: string[]; t: number };

const REQUEST_TIMEOUT_MS = 30_000;
const SLICE_READ_TIMEOUT_MS = 2000;

const key = (e: Endpoint): string => `${e.address}:${e.port}`;

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '{}') as PodLoadInput;
  const who: PodIdentity = { ca: readFileSync(input.ca, 'utf8'), token: input.token, clusterIp: input.clusterIp };
  const now = (): number => Date.now() - input.startEpochMs;
  const emit = (line: PodLoadLine): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
  let running = true;
  process.on('SIGTERM', () => {
    running = false;
  });
  let endpoints = input.bootstraps;

  // kube-proxy's part: the ready endpoints, read through any endpoint that answers (the last set kept when none does).
  const proxyLoop = async (): Promise<void> => {
    while (running) {
      await sleep(input.sliceIntervalMs);
      for (const via of shuffled(endpoints.length > 0 ? endpoints : input.bootstraps)) {
        const listed = await podGet(who, via.address, via.port, SERVICE_SLICES_PATH, SLICE_READ_TIMEOUT_MS).catch(() => undefined);
        if (listed?.status !== 200) continue;
        const ready = serviceEndpoints(parseSlices(listed.body), 'ready');
        if (ready.map(key).sort().join() !== endpoints.map(key).sort().join()) emit({ endpoints: ready.map(key).sort(), t: now() });
        endpoints = ready;
        break;
      }
    }
  };

  const worker = async (): Promise<void> => {
    while (running) {
      const to = shuffled(endpoints)[0];
      const target = shuffled(input.paths)[0];
      if (to === undefined || target === undefined) {
        await sleep(input.thinkMs);
        continue;
      }
      const t0 = now();
      const base = { t0, entry: input.entries[to.address] ?? to.address, client: 'pod', verb: 'list', resource: target.resource } as const;
      try {
        const answer = await podGet(who, to.address, to.port, target.path, REQUEST_TIMEOUT_MS);
        const ok = answer.status >= 200 && answer.status < 300;
        emit({
          record: {
            ...base,
            t1: now(),
            status: answer.status,
            retryAfter: answer.headers['retry-after'] !== undefined,
            ...(ok ? {} : { detail: answer.body.slice(0, 300) }),
          },
        });
      } catch (err) {
        emit({ record: { ...base, t1: now(), status: 0, retryAfter: false, detail: `${key(to)}: ${(err as Error).message}` } });
      }
      await sleep(input.thinkMs);
    }
  };

  await Promise.all([proxyLoop(), ...Array.from({ length: input.workers }, worker)]);
}

/** A copy of `items` in random order (kube-proxy's iptables mode picks an endpoint at random per connection). */
function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
