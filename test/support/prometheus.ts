// A real Prometheus (Debian's package, installed by `mvproxy install`) for one
// test file: a generated config, a temporary TSDB, a free loopback port; it
// dies with the test process (ManagedProcess). Queries go through its HTTP API.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findExecutable } from '../../src/tools/install/debianPackages.js';
import { freePorts } from '../../src/tools/sandbox/ports.js';
import { ManagedProcess } from '../../src/tools/sandbox/processes.js';
import type { SandboxState } from '../../src/tools/sandbox/state.js';

export interface ScrapeTargets {
  /** host:port of each control-plane replica's admin HTTP address (/metrics). */
  controlPlanes: string[];
  /** Each sidecar's stats URL (http://127.0.0.1:PORT/stats/prometheus), by apiserver name. */
  sidecars: Record<string, string>;
}

/** What a sandbox exposes to Prometheus. */
export function sandboxScrapeTargets(state: SandboxState): ScrapeTargets {
  const controlPlanes = (state.controlPlanes ?? (state.controlPlane ? [state.controlPlane] : [])).map((c) => new URL(c.admin).host);
  const sidecars: Record<string, string> = {};
  for (const a of state.apiservers) if (a.sidecarStats) sidecars[a.name] = a.sidecarStats;
  return { controlPlanes, sidecars };
}

/** Pure: the Prometheus config (JSON is YAML) that scrapes `targets` every `interval`, as docs/observability.md shows, and evaluates `ruleFiles`. */
export function prometheusConfig(targets: ScrapeTargets, interval = '1s', ruleFiles: readonly string[] = []): object {
  return {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    rule_files: ruleFiles,
    scrape_configs: [
      { job_name: 'mvproxy', static_configs: [{ targets: targets.controlPlanes }] },
      {
        job_name: 'mvproxy-sidecars',
        metrics_path: '/stats/prometheus',
        static_configs: Object.entries(targets.sidecars).map(([name, url]) => ({ targets: [new URL(url).host], labels: { sidecar: name } })),
      },
    ],
  };
}

export interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** One alert of /api/v1/alerts: pending (its `for:` not yet over) or firing. */
export interface ActiveAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

/** The alerting rule files shipped in deploy/prometheus. */
export const ALERT_RULES = fileURLToPath(new URL('../../../deploy/prometheus/mvproxy-alerts.yaml', import.meta.url));

export class TestPrometheus {
  private constructor(
    private readonly process: ManagedProcess,
    readonly url: string,
    /** Its config, TSDB and log; removed by stop(). */
    private readonly dir: string,
  ) {}

  /** `ruleFiles`: rule files it evaluates (every scrape interval), e.g. ALERT_RULES. */
  static async start(targets: ScrapeTargets, ruleFiles: readonly string[] = []): Promise<TestPrometheus> {
    const binary = findExecutable('prometheus');
    if (!binary) throw new Error('prometheus is missing: run `node dist/src/tools/cli/main.js install` (it apt-gets Debian package prometheus)');
    const dir = mkdtempSync(join(tmpdir(), 'mvproxy-prometheus-'));
    const config = join(dir, 'prometheus.yml');
    writeFileSync(config, `${JSON.stringify(prometheusConfig(targets, '1s', ruleFiles), null, 2)}\n`);
    const [port] = await freePorts(1);
    const address = `127.0.0.1:${port}`;
    const process = new ManagedProcess({
      name: 'prometheus',
      command: binary,
      args: [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=${address}`, '--log.level=warn'],
      logFile: join(dir, 'prometheus.log'),
    });
    const prometheus = new TestPrometheus(process, `http://${address}`, dir);
    await process.waitReady('Prometheus', async (signal) => (await fetch(`${prometheus.url}/-/ready`, { signal }).catch(() => undefined))?.status === 200);
    return prometheus;
  }

  /** Health of every scrape target, by its scrape URL. */
  async targetHealth(): Promise<Record<string, string>> {
    const body = (await this.api('/api/v1/targets?state=active')) as { activeTargets: Array<{ scrapeUrl: string; health: string }> };
    return Object.fromEntries(body.activeTargets.map((t) => [t.scrapeUrl, t.health]));
  }

  /** An instant query (/api/v1/query) now; throws on a query Prometheus refuses. */
  async query(expr: string): Promise<VectorSample[]> {
    const body = (await this.api(`/api/v1/query?query=${encodeURIComponent(expr)}`)) as { resultType: string; result: VectorSample[] };
    if (body.resultType !== 'vector') throw new Error(`${expr}: expected a vector, got ${body.resultType}`);
    return body.result;
  }

  /** Every alert now pending or firing (/api/v1/alerts). */
  async alerts(): Promise<ActiveAlert[]> {
    return ((await this.api('/api/v1/alerts')) as { alerts: ActiveAlert[] }).alerts;
  }

  private async api(path: string): Promise<unknown> {
    const res = await fetch(`${this.url}${path}`);
    const body = (await res.json()) as { status: string; data?: unknown; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  }

  async stop(): Promise<void> {
    await this.process.stop(5000);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
