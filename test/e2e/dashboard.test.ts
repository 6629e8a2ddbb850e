// The Grafana dashboard (deploy/grafana/mvproxy-dashboard.json) against a real
// Prometheus scraping the sandbox as operators would: the control plane's
// /metrics, and each sidecar's Envoy stats on its loopback stats listener.
// Under rerouting load (StorageVersionMigrations, served only by v1.37.2,
// listed through the v1.36.3 sidecar), merged discovery, a drain and undrain,
// and 503s while kas-b is stopped, every query of every panel returns data.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { dashboardQueries, evaluableExpr } from '../support/dashboardQueries.js';
import type { JsonValue } from '../../src/xds/bootstrap.js';
import { startTestSandbox, eventually, serviceAccountToken, tokenClient, apiserverNamed, adminCli, type TestSandbox } from '../support/sandbox.js';
import { sandboxScrapeTargets, TestPrometheus } from '../support/prometheus.js';
import { AGGREGATED_DISCOVERY_JSON } from '../../src/model/discovery.js';
import { PUBLISHER_ROW } from '../../src/dashboard/panels.js';

const DASHBOARD = new URL('../../../deploy/grafana/mvproxy-dashboard.json', import.meta.url);
const MIGRATIONS = '/apis/storagemigration.k8s.io/v1/storageversionmigrations';
/** What Grafana's $__rate_interval becomes here: long enough to span the whole load with 1 s scrapes. */
const WINDOW = '2m';

/** A plain HTTP request with the path sent exactly as given (no client-side normalization). */
function rawRequest(url: string, method: string, path: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the Grafana dashboard, read by a real Prometheus scraping the sandbox', () => {
  let tb: TestSandbox;
  let prometheus: TestPrometheus;
  let token: string;

  const admin = (...args: string[]): Promise<string> => adminCli(tb, ...args);
  const throughKasA = () => {
    const s = tb.state();
    const sidecar = apiserverNamed(s, 'kas-a').sidecar;
    if (!sidecar) throw new Error('sandbox has no sidecars');
    return tokenClient(s, sidecar, token);
  };
  const statsUrl = (name: string): string => {
    const url = apiserverNamed(tb.state(), name).sidecarStats;
    if (!url) throw new Error(`no stats listener for the sidecar of ${name}`);
    return url;
  };

  before(async () => {
    tb = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3' },
        { name: 'kas-b', version: 'v1.37.2' },
      ],
      { mode: 'mvproxy', network: 'loopback', controlPlaneReplicas: 'one' },
    );
    token = await serviceAccountToken(tb.state(), 'dashboard-admin', 'cluster-admin');
    prometheus = await TestPrometheus.start(sandboxScrapeTargets(tb.state()));
  });
  after(async () => {
    await prometheus?.stop();
    await tb?.sandbox.down();
  });

  it("a sidecar's stats listener serves GET /stats/prometheus and nothing else of the admin interface", async () => {
    const url = statsUrl('kas-a');
    assert.equal(await rawRequest(url, 'GET', '/stats/prometheus'), 200);
    assert.equal(await rawRequest(url, 'POST', '/quitquitquit'), 404);
    assert.equal(await rawRequest(url, 'POST', '/stats/prometheus'), 404);
    assert.equal(await rawRequest(url, 'GET', '/stats/prometheus/../../quitquitquit'), 404);
    assert.equal(await rawRequest(url, 'GET', '/config_dump'), 404);
    assert.equal(await rawRequest(url, 'GET', '/clusters'), 404);
    // The sidecar is still there.
    assert.equal(await rawRequest(url, 'GET', '/stats/prometheus?usedonly'), 200);
  });

  it('Prometheus scrapes the control plane and every sidecar', async () => {
    const expected = Object.fromEntries([`${tb.state().controlPlane?.admin}/metrics`, statsUrl('kas-a'), statsUrl('kas-b')].map((url) => [url, 'up']));
    await eventually(async () => assert.deepEqual(await prometheus.targetHealth(), expected));
  });

  it('under rerouting load, a drain and 503s, every query of every panel returns data', async (t) => {
    const statuses = new Map<number, number>();
    let running = true;
    const load = (async () => {
      while (running) {
        for (const [path, headers] of [
          [MIGRATIONS, {}],
          ['/apis', { accept: AGGREGATED_DISCOVERY_JSON }],
        ] as const) {
          const res = await throughKasA()('GET', path, undefined, headers).catch(() => ({ status: 0 }));
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        }
      }
    })();
    try {
      await eventually(async () => assert.ok((statuses.get(200) ?? 0) > 20, JSON.stringify([...statuses])));
      await admin('drain', 'kas-a', '--wait');
      await admin('undrain', 'kas-a', '--wait');
      await tb.sandbox.stopApiserver('kas-b');
      // Served only by the stopped v1.37.2: the v1.36.3 sidecar answers 503 (never 404).
      await eventually(async () => assert.ok((statuses.get(503) ?? 0) > 0, JSON.stringify([...statuses])));
      await tb.sandbox.startApiserver('kas-b');
      await eventually(async () => assert.equal((await throughKasA()('GET', MIGRATIONS)).status, 200));

      // The publisher's row: only replicas that publish (network mode `namespace`) export it; alertsPublisher.test.ts evaluates it.
      const queries = dashboardQueries(JSON.parse(readFileSync(DASHBOARD, 'utf8')) as JsonValue).filter((q) => q.row !== PUBLISHER_ROW);
      const counts = await eventually(
        async () => {
          const results = await Promise.all(queries.map(async (q) => ({ q, samples: await prometheus.query(evaluableExpr(q.expr, WINDOW)) })));
          const empty = results.filter((r) => r.samples.length === 0).map((r) => `${r.q.panel} (${r.q.refId}): ${r.q.expr}`);
          assert.deepEqual(empty, [], `queries without data:\n${empty.join('\n')}`);
          return results;
        },
        90_000,
        1000,
      );
      t.diagnostic(`requests through kas-a's sidecar by status: ${JSON.stringify(Object.fromEntries(statuses))}`);
      for (const { q, samples } of counts) {
        const first = samples.slice(0, 2).map((x) => JSON.stringify(x.metric));
        t.diagnostic(`${q.row} / ${q.panel} [${q.refId}]: ${samples.length} series, e.g. ${first.join(' ')}`);
      }
      const rerouted = counts.filter((r) => r.q.panel === 'Rerouted requests by resource and code').flatMap((r) => r.samples.map((x) => x.metric['resource']));
      assert.ok(rerouted.includes('storageversionmigrations'), JSON.stringify(rerouted));
    } finally {
      running = false;
      await load;
    }
  });
});
