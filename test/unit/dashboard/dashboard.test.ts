// The Grafana dashboard (deploy/grafana/mvproxy-dashboard.json): rendered from
// src/dashboard/panels.ts, and read back by the queries the tests evaluate.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { grafanaDashboard } from '../../../src/dashboard/grafana.js';
import { dashboardQueries, evaluableExpr, queriedMetrics } from '../../support/dashboardQueries.js';
import { DASHBOARD_ROWS, DOCUMENT_FILTER_COUNTERS } from '../../../src/dashboard/panels.js';
import { DASHBOARD_FILE, dashboardFileText } from '../../../src/dashboard/write.js';
import { createMetrics } from '../../../src/metrics.js';
import type { JsonValue } from '../../../src/xds/bootstrap.js';

const committed = (): string => readFileSync(new URL(`../../../../${DASHBOARD_FILE}`, import.meta.url), 'utf8');

test('the committed dashboard is what panels.ts renders (after a change: npm run dashboard:update)', () => {
  assert.equal(committed(), dashboardFileText());
});

test('every query of the dashboard file is read back, under its row and panel, in order', () => {
  const queries = dashboardQueries(JSON.parse(committed()) as JsonValue);
  const expected = DASHBOARD_ROWS.flatMap((row) =>
    row.panels.flatMap((panel) => panel.targets.map((t) => ({ row: row.title, panel: panel.title, expr: t.expr }))),
  );
  assert.deepEqual(
    queries.map(({ row, panel, expr }) => ({ row, panel, expr })),
    expected,
  );
});

test('every panel and query reads the Prometheus datasource variable', () => {
  const dashboard = grafanaDashboard();
  const variables = (dashboard['templating'] as { list: Array<Record<string, unknown>> }).list;
  assert.deepEqual(
    variables.map((v) => [v['name'], v['type'], v['query']]),
    [['datasource', 'datasource', 'prometheus']],
  );
  for (const q of dashboardQueries(dashboard)) assert.equal(q.datasource, `\${datasource}`, `${q.panel} ${q.refId}`);
});

test('panel titles are unique and every panel sits under a row', () => {
  const titles = DASHBOARD_ROWS.flatMap((r) => r.panels.map((p) => p.title));
  assert.equal(new Set(titles).size, titles.length);
  for (const q of dashboardQueries(grafanaDashboard())) assert.notEqual(q.row, '', q.panel);
});

test('every control-plane metric the dashboard queries is one mvproxy exports (src/metrics.ts)', async () => {
  const exported = new Set((await createMetrics().registry.getMetricsAsJSON()).map((m) => m.name));
  const base = (name: string): string => name.replace(/_(bucket|sum|count)$/, '');
  const controlPlane = dashboardQueries(grafanaDashboard())
    .flatMap((q) => queriedMetrics(q.expr))
    .filter((name) => !name.startsWith('envoy_') && !(DOCUMENT_FILTER_COUNTERS as readonly string[]).includes(name));
  assert.ok(controlPlane.length > 0);
  for (const name of controlPlane) assert.ok(exported.has(base(name)), `${name} is not exported by createMetrics()`);
});

test('every document filter counter the dashboard knows is one the filter defines, and a panel queries it', () => {
  const filterSource = readFileSync(new URL('../../../../envoy/filters/assembly/metrics.ts', import.meta.url), 'utf8');
  const defined = [...filterSource.matchAll(/String\.UTF8\.encode\("([a-z_]+)"\)/g)].map((m) => m[1]);
  const queried = new Set(dashboardQueries(grafanaDashboard()).flatMap((q) => queriedMetrics(q.expr)));
  for (const name of DOCUMENT_FILTER_COUNTERS) {
    assert.ok(defined.includes(name), `${name} is not defined by the document filter`);
    assert.ok(queried.has(name), `${name} has no panel`);
  }
});

test('a query of a counter that may never have been incremented still returns a series (held-back xDS updates)', () => {
  const heldBack = dashboardQueries(grafanaDashboard()).filter((q) => queriedMetrics(q.expr).includes('mvproxy_xds_held_back_total'));
  assert.equal(heldBack.length, 1);
  assert.match(heldBack[0]?.expr ?? '', / or vector\(0\)$/);
});

test('metric names are read from selectors, range vectors and bare function arguments, not from label values', () => {
  assert.deepEqual(queriedMetrics('sum by (type) (rate(a_total{type!="b_total"}[$__rate_interval])) + max by (x) (c_gauge)'), ['a_total', 'c_gauge']);
});

test("Grafana's interval variables become a window Prometheus accepts", () => {
  assert.equal(evaluableExpr('rate(x[$__rate_interval]) / rate(y[$__interval])', '30s'), 'rate(x[30s]) / rate(y[30s])');
});

test('a target without an expr is refused, not skipped', () => {
  assert.throws(() => dashboardQueries({ panels: [{ type: 'timeseries', title: 'p', targets: [{ refId: 'A' }] }] }), /panel "p" has a target without an expr/);
});
