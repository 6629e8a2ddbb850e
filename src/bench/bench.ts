// `mvproxy bench`: the figures issue 3 asks for, measured in one run against
// a real sandbox (kube-apiserver v1.36.3 and v1.37.2, Envoy sidecars).
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureComponents } from '../install/index.js';
import { Sandbox } from '../sandbox/sandbox.js';
import type { SandboxState } from '../sandbox/state.js';
import { httpsRequest } from '../util/https.js';
import { loadExtProc } from './extProcLoad.js';
import { startBareEnvoy } from './bareEnvoy.js';
import { compareAlternately, percentile, type Comparison, type LoadTarget } from './load.js';

export interface BenchOptions {
  rounds: number;
  roundMs: number;
  concurrency: number;
  convergenceSamples: number;
  progress: (line: string) => void;
}

const NOPEER_ACCEPT = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer';

export async function runBench(opts: BenchOptions): Promise<Record<string, unknown>> {
  const components = await ensureComponents({ kubernetesVersions: ['v1.36.3', 'v1.37.2'], log: opts.progress });
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-bench-'));
  const sandbox = await Sandbox.up({
    dir,
    apiservers: [
      { name: 'kas-a', version: 'v1.36.3' },
      { name: 'kas-b', version: 'v1.37.2' },
    ],
    components,
    progress: opts.progress,
  });
  try {
    const state = sandbox.state();
    const token = sandbox.adminBearerToken();
    const [a, b] = state.apiservers as [SandboxState['apiservers'][number], SandboxState['apiservers'][number]];
    const api = (base: string, method: string, path: string, body?: unknown) =>
      httpsRequest(
        base + path,
        { ca: state.ca },
        { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) },
      );
    await api(a.direct, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'bench' }, data: { k: 'v' } });
    await api(b.direct, 'POST', '/apis/storagemigration.k8s.io/v1/storageversionmigrations', {
      metadata: { name: 'bench' },
      spec: { resource: { group: 'apps', resource: 'deployments' } },
    });
    const target = (base: string, path: string): LoadTarget => ({
      url: base + path,
      ca: readFileSync(state.ca),
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
    });
    const load = { rounds: opts.rounds, roundMs: opts.roundMs, concurrency: opts.concurrency };

    // Latency is measured with one request in flight (what a client waits for);
    // throughput with `concurrency` in flight (the machine saturated).
    // With the Envoy's pid, its CPU time per request is read over the throughput rounds.
    const measure = async (what: string, sidecar: LoadTarget, direct: LoadTarget, envoyPid?: number): Promise<Measured> => {
      opts.progress(`measuring ${what}: latency (1 in flight) ...`);
      const latency = await compareAlternately(sidecar, direct, { ...load, concurrency: 1 });
      opts.progress(`measuring ${what}: throughput (${opts.concurrency} in flight) ...`);
      const throughput = await compareAlternately(sidecar, direct, { ...load, ...(envoyPid === undefined ? {} : { candidatePid: envoyPid }) });
      const envoyCpu = throughput.candidateCpuMicrosPerRequest;
      return {
        latency: withRatios(latency),
        throughput: withRatios(throughput),
        ...(envoyCpu === undefined ? {} : { envoyCpuMicrosPerRequest: Math.round(envoyCpu) }),
      };
    };
    const cmPath = '/api/v1/namespaces/default/configmaps/bench';
    const sidecarPid = sandbox.sidecarPid('kas-a');
    const local = await measure('a locally served GET, sidecar vs direct', target(a.sidecar ?? '', cmPath), target(a.direct, cmPath), sidecarPid);
    // Reference: what any Envoy hop costs here, without mvproxy's configuration.
    const bare = await startBareEnvoy({
      envoy: components.envoy,
      dir,
      pki: sandbox.pkiFiles(),
      servingName: 'kas-a',
      upstreamPort: sandbox.apiserverPort('kas-a'),
    });
    const minimalEnvoy = await measure('a locally served GET, minimal Envoy vs direct', target(bare.url, cmPath), target(a.direct, cmPath), bare.pid).finally(
      () => bare.stop(),
    );
    const svmPath = '/apis/storagemigration.k8s.io/v1/storageversionmigrations/bench';
    const rerouted = await measure(
      'a rerouted GET, v1.36.3 sidecar vs the v1.37.2 apiserver directly',
      target(a.sidecar ?? '', svmPath),
      target(b.direct, svmPath),
    );
    // Certificate clients: identity computed inside Envoy (the WASM filter), front-proxy connections.
    const withCert = (t: LoadTarget): LoadTarget => ({
      url: t.url,
      ca: t.ca,
      headers: { accept: 'application/json' },
      cert: readFileSync(state.clientCerts.admin.cert),
      key: readFileSync(state.clientCerts.admin.key),
    });
    const certificate = await measure(
      'a locally served GET with a client certificate, sidecar vs direct',
      withCert(target(a.sidecar ?? '', cmPath)),
      withCert(target(a.direct, cmPath)),
      sidecarPid,
    );
    opts.progress(`measuring the ext_proc server alone (${opts.concurrency * 2} streams in flight) ...`);
    const extProc = await loadExtProc(opts.concurrency * 2, opts.rounds * opts.roundMs);

    opts.progress(`measuring convergence over ${opts.convergenceSamples} served-set changes ...`);
    const convergenceMs: number[] = [];
    for (let i = 0; i < opts.convergenceSamples; i++) {
      const batchOff = i % 2 === 0;
      convergenceMs.push(await measureConvergence(sandbox, state, token, batchOff));
      opts.progress(`  sample ${i + 1}: ${convergenceMs.at(-1)?.toFixed(0)} ms`);
    }
    const sorted = [...convergenceMs].sort((x, y) => x - y);
    const convergence = {
      samplesMs: convergenceMs.map((v) => Math.round(v)),
      p50Ms: Math.round(percentile(sorted, 50)),
      p99Ms: Math.round(percentile(sorted, 99)),
    };
    return {
      summary: summarize({ local, minimalEnvoy, rerouted, certificate, convergenceP99Ms: convergence.p99Ms }),
      concurrency: opts.concurrency,
      rounds: opts.rounds,
      roundMs: opts.roundMs,
      local,
      minimalEnvoy,
      rerouted,
      certificate,
      extProc,
      convergence,
    };
  } finally {
    await sandbox.down();
  }
}

interface WithRatios {
  p50Ratio: number;
  throughputRatio: number;
  [figure: string]: unknown;
}

interface Measured {
  latency: WithRatios;
  throughput: WithRatios;
  envoyCpuMicrosPerRequest?: number;
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

/**
 * The figures the targets are stated in, flat (ratios are the first side over
 * the second): the sidecar over direct access, for token and certificate
 * clients; the minimal Envoy hop over direct access (the floor of any sidecar
 * here); the certificate client's ratios over the token client's (what
 * identity costs); the sidecar over the minimal hop; Envoy's CPU per request.
 */
function summarize(m: {
  local: Measured;
  minimalEnvoy: Measured;
  rerouted: Measured;
  certificate: Measured;
  convergenceP99Ms: number;
}): Record<string, number | undefined> {
  return {
    local_token_p50_ratio: m.local.latency.p50Ratio,
    local_cert_p50_ratio: m.certificate.latency.p50Ratio,
    minimal_envoy_p50_ratio: m.minimalEnvoy.latency.p50Ratio,
    rerouted_p50_ratio: m.rerouted.latency.p50Ratio,
    local_token_throughput_ratio: m.local.throughput.throughputRatio,
    local_cert_throughput_ratio: m.certificate.throughput.throughputRatio,
    minimal_envoy_throughput_ratio: m.minimalEnvoy.throughput.throughputRatio,
    cert_vs_token_p50_ratio: round2(m.certificate.latency.p50Ratio / m.local.latency.p50Ratio),
    cert_vs_token_throughput_ratio: round2(m.certificate.throughput.throughputRatio / m.local.throughput.throughputRatio),
    local_vs_minimal_envoy_p50_ratio: round2(m.local.latency.p50Ratio / m.minimalEnvoy.latency.p50Ratio),
    envoy_cpu_us_per_request_token: m.local.envoyCpuMicrosPerRequest,
    envoy_cpu_us_per_request_cert: m.certificate.envoyCpuMicrosPerRequest,
    envoy_cpu_us_per_request_minimal: m.minimalEnvoy.envoyCpuMicrosPerRequest,
    convergence_p99_ms: m.convergenceP99Ms,
  };
}

function withRatios(r: Comparison): WithRatios {
  const round = round2;
  return {
    sidecar: { p50Ms: round(r.candidate.p50), p99Ms: round(r.candidate.p99), rps: Math.round(r.candidate.throughput), errors: r.candidate.errors },
    direct: { p50Ms: round(r.baseline.p50), p99Ms: round(r.baseline.p99), rps: Math.round(r.baseline.throughput), errors: r.baseline.errors },
    p50Ratio: round(r.candidate.p50 / r.baseline.p50),
    p99Ratio: round(r.candidate.p99 / r.baseline.p99),
    throughputRatio: round(r.candidate.throughput / r.baseline.throughput),
    // The same ratios round by round: their spread is the noise of the machine.
    p50RatioByRound: r.rounds.map((x) => round(x.candidate.p50 / x.baseline.p50)),
    throughputRatioByRound: r.rounds.map((x) => round(x.candidate.throughput / x.baseline.throughput)),
  };
}

/**
 * Restarts kas-b with batch/v1 off (or back on), then measures from the moment
 * it is ready (/readyz) with its own discovery showing the change to the
 * moment every sidecar has ACKed routes that reflect it. Until it is ready
 * mvproxy deliberately routes around it (drained while starting), so the
 * clock starts when it could take the traffic.
 */
async function measureConvergence(sandbox: Sandbox, state: SandboxState, token: string, batchOff: boolean): Promise<number> {
  const b = state.apiservers.find((x) => x.name === 'kas-b');
  if (!b || !state.controlPlane) throw new Error('bench needs kas-b and the control plane');
  await sandbox.stopApiserver('kas-b');
  const restarted = sandbox.startApiserver('kas-b', { runtimeConfig: batchOff ? 'batch/v1=false' : '' });
  // Poll the apiserver's own discovery until it shows the change.
  let visibleAt = 0;
  for (;;) {
    try {
      const [res, ready] = await Promise.all([
        httpsRequest(`${b.direct}/apis`, { ca: state.ca }, { headers: { authorization: `Bearer ${token}`, accept: NOPEER_ACCEPT }, timeoutMs: 1000 }),
        httpsRequest(`${b.direct}/readyz`, { ca: state.ca }, { headers: { authorization: `Bearer ${token}` }, timeoutMs: 1000 }),
      ]);
      if (res.status === 200 && ready.status === 200) {
        const servesBatch = (JSON.parse(res.body) as { items: { metadata: { name: string } }[] }).items.some((g) => g.metadata.name === 'batch');
        if (servesBatch !== batchOff) {
          visibleAt = performance.now();
          break;
        }
      }
    } catch {
      // still starting
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  // Poll the control plane until kas-b's plan reflects it and every sidecar ACKed what was sent.
  for (;;) {
    const status = (await (await fetch(`${state.controlPlane.admin}/status`)).json()) as ControlPlaneStatus;
    const plan = status.plans.find((p) => p.node === 'kas-b');
    const reroutesBatch = plan?.routes.some((r) => r.group === 'batch') ?? false;
    const acked = Object.values(status.xds).every((n) => n.connected && Object.values(n.types).every((t) => t.versionAcked === t.versionSent));
    if (reroutesBatch === batchOff && acked) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const convergedAt = performance.now();
  await restarted;
  return convergedAt - visibleAt;
}

interface ControlPlaneStatus {
  plans: { node: string; routes: { group: string }[] }[];
  xds: Record<string, { connected: boolean; types: Record<string, { versionSent?: string; versionAcked?: string }> }>;
}
