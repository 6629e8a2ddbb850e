// The alerting rules (deploy/prometheus/mvproxy-alerts.yaml) read as data:
// what every alert must carry, and that the control-plane metrics they read
// are ones mvproxy exports. promtool checks the rules themselves
// (test/e2e/alertRules.test.ts); a real Prometheus makes them fire
// (test/e2e/alerts*.test.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { createMetrics } from '../../../src/metrics.js';
import { queriedMetrics } from '../../support/dashboardQueries.js';

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const RULES = new URL('../../../../deploy/prometheus/mvproxy-alerts.yaml', import.meta.url);
const rules = (): AlertRule[] => (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: AlertRule[] }> }).groups.flatMap((g) => g.rules);

test('every alert has a for:, a severity, a summary, a description and a runbook section in docs/observability.md', () => {
  const doc = readFileSync(new URL('../../../../docs/observability.md', import.meta.url), 'utf8');
  assert.ok(rules().length > 0);
  for (const r of rules()) {
    assert.match(r.for ?? '', /^\d+m$/, r.alert);
    assert.ok(['critical', 'warning'].includes(r.labels?.['severity'] ?? ''), r.alert);
    assert.ok(r.annotations?.['summary'], r.alert);
    assert.ok(r.annotations?.['description'], r.alert);
    assert.equal(r.annotations?.['runbook_url'], `docs/observability.md#${r.alert.toLowerCase()}`);
    assert.ok(doc.includes(`\n### ${r.alert}\n`), `docs/observability.md has no section ${r.alert}`);
  }
});

test('every control-plane metric an alert reads is one mvproxy exports (src/metrics.ts)', async () => {
  const exported = new Set((await createMetrics().registry.getMetricsAsJSON()).map((m) => m.name));
  const controlPlane = rules()
    .flatMap((r) => queriedMetrics(r.expr))
    .filter((name) => name.startsWith('mvproxy_') || name.startsWith('apiserver_'));
  assert.ok(controlPlane.length > 0);
  for (const name of controlPlane) assert.ok(exported.has(name), `${name} is not exported by createMetrics()`);
});
