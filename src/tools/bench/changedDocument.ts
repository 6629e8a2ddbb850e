// The discovery path where the local apiserver's document changed since the
// sidecar last saw it (issue 28): the sidecar's first `/apis` after a change
// gets the local apiserver's new document in full (its ETag no longer
// matches), which the document filter merges at request time and caches; its
// next requests revalidate again. No steady load takes that path, so each
// sample makes one change and times what follows it:
//   - the change: a CustomResourceDefinition of a new group created on kas-a
//     (a new group in kas-a's `/apis`; CRDs are never in the peer part, so
//     only the local document changes), then kas-a polled directly until its
//     own `/apis` lists it, and asked once in each format so that both sides
//     meet the apiserver's cache warm;
//   - even samples: one request in flight, each format, through the sidecar
//     and through the minimal Envoy in turn (the first side rotating);
//   - odd samples: a burst of `burst` requests at once over 8 HTTP/2
//     connections (h2load's shape), each format, each side in turn: its
//     throughput is the burst over the time to its last answer.
// The control plane is paused for the whole part (the caller does it), so
// nothing but the local document changes under the sidecar; the CRDs are
// deleted at the end, and kas-a's own `/apis` polled until it lists none.
import { setTimeout as sleep } from 'node:timers/promises';
import { httpsRequest, type TlsFiles } from '../../util/https.js';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_PROTOBUF } from '../../entry/discovery.js';
import { type ConnectionCount, type CountedEnvoy, withConnectionCounts } from './envoyCounters.js';
import { type H2Sessions, openH2Sessions, type TimedAnswer } from './h2Requests.js';
import { percentile } from './load.js';
import { round2 } from './sides.js';
import { CRDS_PATH as CRDS, namespacedCrd } from './documentScale.js';

export const CHANGE_GROUP_SUFFIX = 'bench-change.mvproxy.example';
const CONNECTIONS = 8;
const POLL_MS = 20;
const CHANGE_LIMIT_MS = 30_000;
const FORMATS = { json: AGGREGATED_DISCOVERY_JSON, protobuf: AGGREGATED_DISCOVERY_PROTOBUF } as const;
type Format = keyof typeof FORMATS;

export interface ChangedSide extends CountedEnvoy {
  url: string;
  description: string;
}

export interface ChangedDocumentOptions {
  /** Changes made: half timed one request at a time, half in bursts. */
  samples: number;
  /** Requests in a burst (the high in-flight count). */
  burst: number;
  /** The candidate first (mvproxy's sidecar), then the floor (the minimal Envoy), both in front of kas-a. */
  sides: [ChangedSide, ChangedSide];
  /** kas-a itself, where the CRDs are made and its own document is polled. */
  direct: string;
  tls: TlsFiles;
  ca: Buffer;
  token: string;
  progress: (line: string) => void;
}

export interface ChangedSideFigures {
  /** One request in flight, the first after a change: p50 and the largest. */
  p50Ms?: number;
  maxMs?: number;
  latencySamples: number;
  /** Bursts: requests over the summed time to each burst's last answer. */
  rps?: number;
  burstRequests: number;
  /** p50 of every request's latency in the bursts. */
  burstP50Ms?: number;
  errors: number;
  /** Answers timed one at a time that listed the group just created (an answer staler than kas-a lacks it). */
  listedTheChange: number;
}

export interface ChangedFormatFigures {
  sides: Record<string, ChangedSideFigures>;
  /** The candidate over the floor. */
  p50Ratio?: number;
  throughputRatio?: number;
  /** Per sample, the candidate's time over the floor's (its spread is the noise). */
  p50RatioBySample: number[];
  throughputRatioBySample: number[];
}

export interface ChangedDocumentMeasurement {
  how: string;
  samples: number;
  burst: number;
  sides: Record<string, string>;
  formats: Record<Format, ChangedFormatFigures>;
  /** Over the whole part (every timed request, every format), by side. */
  connections: Record<string, ConnectionCount>;
}

export interface Tally {
  latencies: number[];
  burstMs: number[];
  burstRequests: number;
  burstLatencies: number[];
  errors: number;
  listed: number;
}

/** The API group of sample `i`'s CRD. */
const groupOf = (i: number): string => `c${i}.${CHANGE_GROUP_SUFFIX}`;

const crdName = (i: number): string => `benchchanges.${groupOf(i)}`;

const crd = (i: number): unknown => namespacedCrd(groupOf(i), 'benchchanges', 'BenchChange');

export async function measureChangedDocument(opts: ChangedDocumentOptions): Promise<ChangedDocumentMeasurement> {
  const auth = { authorization: `Bearer ${opts.token}` };
  const direct = (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) =>
    httpsRequest(opts.direct + path, opts.tls, {
      method,
      headers: { ...auth, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const warm = { path: '/version', headers: auth };
  const sessions: H2Sessions[] = [];
  const created: number[] = [];
  const tallies = new Map<string, Tally>();
  const tally = (side: string, format: Format): Tally => {
    const key = `${side} ${format}`;
    let t = tallies.get(key);
    if (!t) {
      t = { latencies: [], burstMs: [], burstRequests: 0, burstLatencies: [], errors: 0, listed: 0 };
      tallies.set(key, t);
    }
    return t;
  };
  try {
    for (const side of opts.sides) sessions.push(await openH2Sessions(side.url, opts.ca, CONNECTIONS, warm));
    let etag = String((await direct('GET', '/apis', { accept: FORMATS.json })).headers['etag'] ?? '');
    const { connections } = await withConnectionCounts(opts.sides, async () => {
      for (let i = 0; i < opts.samples; i++) {
        const group = groupOf(i);
        const res = await direct('POST', CRDS, {}, crd(i));
        if (res.status !== 201) throw new Error(`creating the CRD of ${group} on kas-a: ${res.status} ${res.body.slice(0, 300)}`);
        created.push(i);
        etag = await untilListed(direct, group, etag);
        await direct('GET', '/apis', { accept: FORMATS.protobuf });
        const timed = i % 2 === 0 ? 'one request' : `a burst of ${opts.burst}`;
        opts.progress(`the changed document, sample ${i + 1}/${opts.samples}: ${group} listed by kas-a; timing ${timed} per side and format ...`);
        const formats: Format[] = i % 4 < 2 ? ['json', 'protobuf'] : ['protobuf', 'json'];
        for (const format of formats) {
          const headers = { ...auth, accept: FORMATS[format] };
          for (let k = 0; k < opts.sides.length; k++) {
            const index = (i + k) % opts.sides.length;
            const side = opts.sides[index];
            const client = sessions[index];
            if (!side || !client) throw new Error('internal: side index');
            const t = tally(side.side, format);
            if (i % 2 === 0) {
              const answer = await client.get('/apis', headers);
              t.latencies.push(answer.ms);
              if (answer.status !== 200) t.errors++;
              // The group's name is in the body as it is in either format (a protobuf string is its UTF-8 bytes).
              if (answer.body.includes(group)) t.listed++;
            } else {
              const { answers, ms } = await client.burst('/apis', headers, opts.burst);
              t.burstMs.push(ms);
              t.burstRequests += answers.length;
              t.burstLatencies.push(...answers.map((a: TimedAnswer) => a.ms));
              t.errors += answers.filter((a) => a.status !== 200).length;
            }
          }
        }
      }
    });
    const [candidate, floor] = opts.sides;
    const formats = Object.fromEntries(
      (Object.keys(FORMATS) as Format[]).map((format) => [
        format,
        changedFigures(tally(candidate.side, format), tally(floor.side, format), candidate.side, floor.side),
      ]),
    ) as Record<Format, ChangedFormatFigures>;
    return {
      how: `each sample: a CRD of a new group created on kas-a, kas-a polled directly until its /apis lists it; then even samples time one request in flight per format and side, odd samples a burst of ${opts.burst} over ${CONNECTIONS} HTTP/2 connections; the control plane paused throughout`,
      samples: opts.samples,
      burst: opts.burst,
      sides: Object.fromEntries(opts.sides.map((s) => [s.side, s.description])),
      formats,
      connections,
    };
  } finally {
    for (const s of sessions) s.close();
    await deleteCreated(direct, created, opts.progress);
  }
}

type DirectRequest = (method: string, path: string, headers?: Record<string, string>) => ReturnType<typeof httpsRequest>;

/** Polls kas-a's own `/apis` (JSON) until `done` holds of it: its ETag then; past CHANGE_LIMIT_MS, the last status instead. */
async function untilOwnApis(direct: DirectRequest, done: (body: string) => boolean, etag: string): Promise<{ etag: string } | { lastStatus: number }> {
  const started = performance.now();
  for (;;) {
    const res = await direct('GET', '/apis', { accept: FORMATS.json, ...(etag ? { 'if-none-match': etag } : {}) });
    if (res.status === 200 && done(res.body)) return { etag: String(res.headers['etag'] ?? '') };
    if (performance.now() - started > CHANGE_LIMIT_MS) return { lastStatus: res.status };
    await sleep(POLL_MS);
  }
}

/** Polls kas-a's own `/apis` until it lists `group`; its new ETag. */
async function untilListed(direct: DirectRequest, group: string, etag: string): Promise<string> {
  const outcome = await untilOwnApis(direct, (body) => body.includes(`"${group}"`), etag);
  if ('lastStatus' in outcome) throw new Error(`kas-a's /apis did not list ${group} within ${CHANGE_LIMIT_MS} ms (last: ${outcome.lastStatus})`);
  return outcome.etag;
}

/**
 * Deletes the CRDs the samples made and waits until kas-a's own `/apis`
 * lists none of their groups, so a check made next (the same-document check
 * after timing) meets kas-a as it was before the part; says so when it still
 * lists one past CHANGE_LIMIT_MS.
 */
async function deleteCreated(direct: DirectRequest, created: readonly number[], progress: (line: string) => void): Promise<void> {
  for (const i of created) await direct('DELETE', `${CRDS}/${crdName(i)}`).catch(() => undefined);
  const groups = created.map((i) => `"${groupOf(i)}"`);
  const outcome = await untilOwnApis(direct, (body) => !groups.some((group) => body.includes(group)), '').catch((err: Error) => ({ lastStatus: err.message }));
  if ('lastStatus' in outcome)
    progress(`kas-a's /apis still lists a group of the changed-document CRDs ${CHANGE_LIMIT_MS} ms after their deletion (last: ${outcome.lastStatus})`);
}

/** Pure: one format's figures of both sides, and the candidate's ratios over the floor. */
export function changedFigures(mine: Tally, floor: Tally, candidate: string, floorName: string): ChangedFormatFigures {
  const side = (t: Tally): ChangedSideFigures => {
    const sorted = [...t.latencies].sort((a, b) => a - b);
    const burstSeconds = t.burstMs.reduce((n, ms) => n + ms, 0) / 1000;
    const burstSorted = [...t.burstLatencies].sort((a, b) => a - b);
    return {
      ...(sorted.length > 0 ? { p50Ms: round2(percentile(sorted, 50)), maxMs: round2(sorted.at(-1) ?? NaN) } : {}),
      latencySamples: sorted.length,
      ...(burstSeconds > 0 ? { rps: Math.round(t.burstRequests / burstSeconds) } : {}),
      burstRequests: t.burstRequests,
      ...(burstSorted.length > 0 ? { burstP50Ms: round2(percentile(burstSorted, 50)) } : {}),
      errors: t.errors,
      listedTheChange: t.listed,
    };
  };
  const a = side(mine);
  const b = side(floor);
  const ratio = (x: number | undefined, y: number | undefined): number | undefined =>
    x === undefined || y === undefined || y === 0 ? undefined : round2(x / y);
  const p50Ratio = ratio(a.p50Ms, b.p50Ms);
  const throughputRatio = ratio(a.rps, b.rps);
  return {
    sides: { [candidate]: a, [floorName]: b },
    ...(p50Ratio === undefined ? {} : { p50Ratio }),
    ...(throughputRatio === undefined ? {} : { throughputRatio }),
    p50RatioBySample: mine.latencies.map((ms, i) => round2(ms / (floor.latencies[i] ?? NaN))),
    // Throughput of a burst is its size over its time: the floor's time over the candidate's.
    throughputRatioBySample: mine.burstMs.map((ms, i) => round2((floor.burstMs[i] ?? NaN) / ms)),
  };
}
