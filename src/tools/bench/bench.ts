// `mvproxy-dev bench`: the figures issues 3 and 11 ask for, measured in one run
// against two real sandboxes side by side (kube-apiserver v1.36.3 and
// v1.37.2 each): one with mvproxy's sidecars, one with kube-apiserver's own
// Mixed Version Proxy ("upstream"), every comparison alternating round by
// round between the sides.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureDebianPackage } from '../install/debianPackages.js';
import { ensureComponents } from '../install/index.js';
import { Sandbox } from '../sandbox/sandbox.js';
import type { SandboxState } from '../sandbox/state.js';
import { httpsRequest } from '../../util/https.js';
import { startBareEnvoy } from './bareEnvoy.js';
import { convergenceBench } from './convergenceBench.js';
import { loadExtProc } from './extProcLoad.js';
import { documentDifferences } from './sameDocument.js';
import { describeH2loadFlags, type H2loadProtocol } from './h2load.js';
import { type FanoutOptions, fanoutSummary, runFanoutBench } from './fanout.js';
import { compareAlternately, compareInterleaved, type LoadTarget, type Side } from './load.js';
import { compareFigures, type ComparedFigures, measureSides, type SidesConfig } from './sides.js';
import { summarize, summarizeDiscovery } from './summary.js';
import { countedEnvoys, type CountedMeasurement, type DocumentPathsMeasurement, measureCounted, measureDocumentPaths } from './documentPaths.js';
import { summarizeDocumentPaths } from './documentPathsSummary.js';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_PROTOBUF, decodeAggregatedDiscoveryProtobuf } from '../../entry/discovery.js';
import { SIDECAR_HTTP_STAT_PREFIX } from '../../entry/sidecar.js';

export interface BenchOptions {
  rounds: number;
  roundMs: number;
  /** Requests in flight for the Node generator's throughput figures (sidecar vs direct, certificate, minimal Envoy). */
  concurrency: number;
  /** Requests in flight for h2load's throughput figures (the three-sided comparisons). */
  inFlight: number[];
  protocol: H2loadProtocol;
  convergenceSamples: number;
  convergenceCapMs: number;
  /** The fan-out part (fanout.ts), run after the side-by-side sandboxes are down. */
  fanout: Omit<FanoutOptions, 'progress'>;
  /** Changes of kas-a's own `/apis` timed on the changed-document discovery path (changedDocument.ts). */
  changedSamples: number;
  /** `convergence` or `discovery` (merged /apis against upstream and the minimal Envoy): that part alone, no fan-out. */
  /** One part: convergence or discovery alone, or side-by-side (everything but the fan-out). */
  only?: 'side-by-side' | 'convergence' | 'discovery';
  progress: (line: string) => void;
}

const VERSIONS = { 'kas-a': 'v1.36.3', 'kas-b': 'v1.37.2' } as const;
const SVM_GROUP = 'storagemigration.k8s.io';
const SVM_LIST = `/apis/${SVM_GROUP}/v1/storageversionmigrations`;
const CM_PATH = '/api/v1/namespaces/default/configmaps/bench';
const H2LOAD_WARMUP_MS = 300;
/** How long both sandboxes may take after start to answer every side right. */
const SETTLE_LIMIT_MS = 180_000;

type ApiserverState = SandboxState['apiservers'][number];

/** What the bench needs of one sandbox. */
interface Bed {
  sandbox: Sandbox;
  state: SandboxState;
  token: string;
  a: ApiserverState;
  b: ApiserverState;
}

export async function runBench(opts: BenchOptions): Promise<Record<string, unknown>> {
  const components = await ensureComponents({ kubernetesVersions: Object.values(VERSIONS), log: opts.progress });
  const h2load = opts.only === 'convergence' ? '' : await ensureDebianPackage('h2load', 'nghttp2-client', opts.progress);
  const beds: Bed[] = [];
  let figures: Awaited<ReturnType<typeof measureAll>>;
  try {
    // One after the other: two sets of apiservers starting at once on a small machine time out.
    for (const mode of ['mvproxy', 'upstream'] as const) {
      opts.progress(`starting the ${mode} sandbox ...`);
      const sandbox = await Sandbox.up({
        dir: mkdtempSync(join(tmpdir(), `mvproxy-bench-${mode}-`)),
        apiservers: Object.entries(VERSIONS).map(([name, version]) => ({ name, version })),
        components,
        mode,
        progress: opts.progress,
      });
      const state = sandbox.state();
      const [a, b] = state.apiservers as [ApiserverState, ApiserverState];
      beds.push({ sandbox, state, token: sandbox.adminBearerToken(), a, b });
    }
    const [mv, up] = beds as [Bed, Bed];
    for (const bed of beds) await seed(bed);
    if (opts.only === 'convergence') {
      const checks = await sanityChecks(mv, up);
      const c = await measureConvergencePart(opts, mv, up);
      return { summary: c.summary, checks, convergence: c.convergence };
    }
    figures = await measureAll(opts, components.envoy, h2load, mv, up);
  } finally {
    for (const bed of beds) await bed.sandbox.down();
  }
  if (opts.only === 'discovery' || opts.only === 'side-by-side') return figures;
  // Its own sandbox (three apiservers, simulated nodes), once the others are down.
  const fanout = await runFanoutBench({ ...opts.fanout, progress: opts.progress });
  return { ...figures, summary: { ...figures.summary, ...fanoutSummary(fanout) }, fanout };
}

function api(bed: Bed, base: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  return httpsRequest(
    base + path,
    { ca: bed.state.ca },
    {
      method,
      headers: { authorization: `Bearer ${bed.token}`, 'content-type': 'application/json', ...headers },
      ...(body ? { body: JSON.stringify(body) } : {}),
    },
  );
}

/** A ConfigMap (served by both) and a StorageVersionMigration (served by v1.37.2 only). */
async function seed(bed: Bed): Promise<void> {
  await api(bed, bed.a.direct, 'POST', '/api/v1/namespaces/default/configmaps', {}, { metadata: { name: 'bench' }, data: { k: 'v' } });
  await api(bed, bed.b.direct, 'POST', SVM_LIST, {}, { metadata: { name: 'bench' }, spec: { resource: { group: 'apps', resource: 'deployments' } } });
}

async function measureAll(
  opts: BenchOptions,
  envoy: string,
  h2load: string,
  mv: Bed,
  up: Bed,
): Promise<{ summary: Record<string, number> } & Record<string, unknown>> {
  const target = (bed: Bed, base: string, path: string, accept = 'application/json'): LoadTarget => ({
    url: base + path,
    ca: readFileSync(bed.state.ca),
    headers: { authorization: `Bearer ${bed.token}`, accept },
  });
  const sidecarA = mv.a.sidecar;
  if (!sidecarA) throw new Error('internal: the mvproxy sandbox has no sidecar');
  const sidecarPid = mv.sandbox.sidecarPid('kas-a');
  const load = { rounds: opts.rounds, roundMs: opts.roundMs };

  // Every side must answer right before it is timed: a fast wrong answer is no figure.
  const checks = await sanityChecks(mv, up);

  // Sidecar vs direct with the Node generator (the figures of issue 3): latency at
  // 1 in flight, throughput at --concurrency, Envoy's CPU per request over the throughput rounds.
  const pair = async (
    what: string,
    sidecar: LoadTarget,
    direct: LoadTarget,
    pid?: number,
  ): Promise<{ latency: ComparedFigures; throughput: ComparedFigures }> => {
    const sides: Side[] = [
      { name: 'sidecar', target: sidecar, ...(pid === undefined ? {} : { pid }) },
      { name: 'direct', target: direct },
    ];
    opts.progress(`measuring ${what}: latency (1 in flight) ...`);
    const latency = compareFigures(await compareInterleaved(sides, load), 'sidecar');
    opts.progress(`measuring ${what}: throughput (${opts.concurrency} in flight, Node generator) ...`);
    const throughput = compareFigures(await compareAlternately(sides, { ...load, concurrency: opts.concurrency }), 'sidecar');
    return { latency, throughput };
  };
  // mvproxy vs upstream vs direct: mvproxy's sidecar of kas-a (v1.36.3), upstream's
  // kas-a itself (its proxy on), and the apiserver that serves the request, directly.
  const cfg: SidesConfig = { ...load, h2load, inFlight: opts.inFlight, protocol: opts.protocol, h2loadWarmupMs: H2LOAD_WARMUP_MS, progress: opts.progress };
  const three = (path: string, directBed: ApiserverState, accept?: string) => [
    {
      name: 'mvproxy',
      description: `mvproxy's sidecar of kas-a (${VERSIONS['kas-a']})`,
      target: target(mv, sidecarA, path, accept),
      ...(sidecarPid === undefined ? {} : { pid: sidecarPid }),
    },
    { name: 'upstream', description: `kas-a (${VERSIONS['kas-a']}) with upstream's Mixed Version Proxy`, target: target(up, up.a.direct, path, accept) },
    { name: 'direct', description: `${directBed.name} (${directBed.version}) directly, mvproxy's sandbox`, target: target(mv, directBed.direct, path, accept) },
  ];
  // Reference: what any Envoy hop costs here, without mvproxy's configuration.
  const bare = await startBareEnvoy({
    envoy,
    dir: mv.state.dir,
    pki: mv.sandbox.pkiFiles(),
    servingName: 'kas-a',
    upstreamPort: mv.sandbox.apiserverPort('kas-a'),
  });
  const sidecarAdminSocket = mv.a.sidecarAdminSocket;
  if (!sidecarAdminSocket) throw new Error("internal: the mvproxy sandbox's sidecar has no admin socket");
  const inFlightMax = String(Math.max(...opts.inFlight));
  let minimalEnvoy: Awaited<ReturnType<typeof pair>>;
  let apisJson: CountedMeasurement;
  let apisProtobuf: CountedMeasurement;
  let documentPaths: DocumentPathsMeasurement;
  try {
    minimalEnvoy = await pair('a locally served GET, minimal Envoy vs direct', target(mv, bare.url, CM_PATH), target(mv, mv.a.direct, CM_PATH), bare.pid);
    // Every path of a merged document against the same floor, with the upstream
    // connections both Envoys open on it (documentPaths.ts).
    const sidecar = {
      url: sidecarA,
      adminSocket: sidecarAdminSocket,
      listener: SIDECAR_HTTP_STAT_PREFIX,
      description: `mvproxy's sidecar of kas-a (${VERSIONS['kas-a']})`,
      ...(sidecarPid === undefined ? {} : { pid: sidecarPid }),
    };
    const bareDescription = `the minimal Envoy in front of kas-a (${VERSIONS['kas-a']}): its own document`;
    const envoys = countedEnvoys({ sidecar, bare, bareDescription });
    // The floor on the request itself: the minimal Envoy in front of kas-a's
    // /apis (served from the apiserver's in-process cache), timed in the same
    // rounds as mvproxy, upstream and direct.
    const four = (accept: string) => [
      ...three('/apis', mv.a, accept),
      {
        name: 'minimal',
        description: bareDescription,
        target: target(mv, bare.url, '/apis', accept),
        ...(bare.pid === undefined ? {} : { pid: bare.pid }),
      },
    ];
    apisJson = await measureCounted('merged /apis (JSON)', four(AGGREGATED_DISCOVERY_JSON), cfg, envoys);
    apisProtobuf = await measureCounted('merged /apis (protobuf)', four(AGGREGATED_DISCOVERY_PROTOBUF), cfg, envoys);
    documentPaths = await measureDocumentPaths({
      cfg,
      sidecar,
      bare,
      bareDescription,
      target: (base, path, accept) => target(mv, base, path, accept),
      direct: mv.a.direct,
      tls: { ca: mv.state.ca },
      token: mv.token,
      changedSamples: opts.changedSamples,
      burst: Number(inFlightMax),
      pauseControlPlane: () => mv.sandbox.pauseControlPlane(),
      resumeControlPlane: () => mv.sandbox.resumeControlPlane(),
    });
  } finally {
    await bare.stop();
  }

  const pathsSummary = summarizeDocumentPaths({ apisJson, apisProtobuf, paths: documentPaths, inFlightHigh: inFlightMax });
  if (opts.only === 'discovery') {
    return {
      summary: { ...summarizeDiscovery({ minimalEnvoy, apisJson, apisProtobuf, inFlightHigh: inFlightMax }), ...pathsSummary },
      checks: { ...checks, ...(await sameDocuments(mv, up, 'after timing')) },
      minimalEnvoy,
      apisJson,
      apisProtobuf,
      documentPaths,
    };
  }
  const local = await pair('a locally served GET, sidecar vs direct', target(mv, sidecarA, CM_PATH), target(mv, mv.a.direct, CM_PATH), sidecarPid);
  // Certificate clients: identity computed inside Envoy (the WASM filter), front-proxy connections.
  const withCert = (t: LoadTarget): LoadTarget => ({
    url: t.url,
    ca: t.ca,
    headers: { accept: 'application/json' },
    cert: readFileSync(mv.state.clientCerts.admin.cert),
    key: readFileSync(mv.state.clientCerts.admin.key),
  });
  const certificate = await pair(
    'a locally served GET with a client certificate, sidecar vs direct',
    withCert(target(mv, sidecarA, CM_PATH)),
    withCert(target(mv, mv.a.direct, CM_PATH)),
    sidecarPid,
  );

  const reroutedGet = await measureSides('a rerouted GET', three(`${SVM_LIST}/bench`, mv.b), 'mvproxy', cfg);
  const reroutedList = await measureSides('a rerouted LIST', three(SVM_LIST, mv.b), 'mvproxy', cfg);
  const localGet = await measureSides('a locally served GET', three(CM_PATH, mv.a), 'mvproxy', cfg);

  opts.progress(`measuring the ext_proc server alone (${opts.concurrency * 2} streams in flight) ...`);
  const extProc = await loadExtProc(opts.concurrency * 2, opts.rounds * opts.roundMs);

  const convergence = await measureConvergencePart(opts, mv, up);

  const inFlightMin = String(Math.min(...opts.inFlight));
  return {
    summary: {
      ...summarize({
        local,
        minimalEnvoy,
        certificate,
        reroutedGet,
        reroutedList,
        localGet,
        apisJson,
        apisProtobuf,
        inFlightHigh: inFlightMax,
        inFlightLow: inFlightMin,
      }),
      ...pathsSummary,
      ...convergence.summary,
    },
    load: {
      rounds: opts.rounds,
      roundMs: opts.roundMs,
      latency: 'Node keep-alive HTTP/1.1 closed loop, 1 request in flight, bearer token',
      nodeGeneratorConcurrency: opts.concurrency,
      throughput: {
        tool: h2load,
        protocol: opts.protocol,
        why:
          opts.protocol === 'h2'
            ? 'client-go speaks HTTP/2: few connections, many streams'
            : 'one request per connection at a time, as non-Go clients often do',
        inFlight: opts.inFlight,
        flags: Object.fromEntries(opts.inFlight.map((n) => [String(n), describeH2loadFlags(opts.protocol, n, opts.roundMs, H2LOAD_WARMUP_MS)])),
        note: 'h2load does not verify the server certificate; its CPU per request (generatorCpuUsPerRequest) shows it is not the bottleneck',
      },
      machine: 'both sandboxes on this machine; another process may load it too: compare the by-round ratios for noise',
    },
    checks: { ...checks, ...(await sameDocuments(mv, up, 'after timing')) },
    reroutedGet,
    reroutedList,
    localGet,
    apisJson,
    apisProtobuf,
    documentPaths,
    local,
    minimalEnvoy,
    certificate,
    extProc,
    convergence: convergence.convergence,
  };
}

/** Each side answers 200 with what it should: merged discovery through mvproxy and upstream lists the group only kas-b serves. */
async function sanityChecks(mv: Bed, up: Bed): Promise<Record<string, string>> {
  const checks: Record<string, string> = {};
  const sidecar = mv.a.sidecar ?? '';
  const cases: Array<[string, Bed, string, string, string | undefined]> = [
    ['mvproxy rerouted GET', mv, sidecar, `${SVM_LIST}/bench`, undefined],
    ['upstream rerouted GET', up, up.a.direct, `${SVM_LIST}/bench`, undefined],
    ['direct rerouted GET', mv, mv.b.direct, `${SVM_LIST}/bench`, undefined],
    ['mvproxy merged /apis', mv, sidecar, '/apis', SVM_GROUP],
    ['upstream merged /apis', up, up.a.direct, '/apis', SVM_GROUP],
  ];
  // Right after start a proxy may not know its peers yet (upstream learns them from
  // identity leases and their discovery): wait for the right answer, up to a limit.
  const started = performance.now();
  for (const [name, bed, base, path, mustMention] of cases) {
    for (;;) {
      const res = await api(bed, base, 'GET', path, { accept: path === '/apis' ? AGGREGATED_DISCOVERY_JSON : 'application/json' }).catch((err: unknown) => ({
        status: 0,
        body: String(err),
      }));
      const right = res.status === 200 && (!mustMention || res.body.includes(`"${mustMention}"`));
      if (right) break;
      if (performance.now() - started > SETTLE_LIMIT_MS) {
        throw new Error(`${name}: ${res.status} ${mustMention ? `(must list ${mustMention}) ` : ''}${res.body.slice(0, 300)}`);
      }
      await sleep(200);
    }
    checks[name] = `${mustMention ? `200, lists ${mustMention}` : '200'} (after ${Math.round(performance.now() - started)} ms)`;
  }
  return { ...checks, ...(await sameDocuments(mv, up, 'before timing')) };
}

/**
 * Whether mvproxy's merged documents and upstream's are the same
 * (sameDocument.ts), `/api` and `/apis` in JSON and in protobuf, as the
 * checks' texts: made before timing and again after it, so a figure is never
 * of a document that went wrong under load.
 */
async function sameDocuments(mv: Bed, up: Bed, when: 'before timing' | 'after timing'): Promise<Record<string, string>> {
  const checks: Record<string, string> = {};
  for (const [format, accept] of [
    ['JSON', AGGREGATED_DISCOVERY_JSON],
    ['protobuf', AGGREGATED_DISCOVERY_PROTOBUF],
  ] as const) {
    const read = async (bed: Bed, base: string, path: string): Promise<unknown> => {
      const res = await api(bed, base, 'GET', path, { accept });
      if (res.status !== 200) throw new Error(`${base}${path} (${format}): ${res.status} ${res.body.slice(0, 300)}`);
      return format === 'JSON' ? JSON.parse(res.body) : decodeAggregatedDiscoveryProtobuf(res.bodyBytes);
    };
    for (const path of ['/api', '/apis']) {
      const differences = documentDifferences(await read(mv, mv.a.sidecar ?? '', path), await read(up, up.a.direct, path));
      checks[`mvproxy and upstream ${path}, ${format}, ${when}`] = differences.length === 0 ? 'the same document' : `differ: ${differences.join('; ')}`;
    }
  }
  return checks;
}

/** Convergence on both sides (convergenceBench.ts): kas-b changes, kas-a's proxy path is probed. */
function measureConvergencePart(opts: BenchOptions, mv: Bed, up: Bed): ReturnType<typeof convergenceBench> {
  return convergenceBench(
    [
      { side: 'mvproxy', sandbox: mv.sandbox, state: mv.state, token: mv.token },
      { side: 'upstream', sandbox: up.sandbox, state: up.state, token: up.token },
    ],
    { samples: opts.convergenceSamples, capMs: opts.convergenceCapMs, group: SVM_GROUP, listPath: SVM_LIST, sharedPath: CM_PATH, progress: opts.progress },
  );
}
