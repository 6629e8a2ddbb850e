// The alerting rules shipped in deploy/prometheus, checked by Prometheus's own
// promtool (Debian's `prometheus` package, which `mvproxy-dev install`
// apt-gets): the file is valid, and each alert fires on its condition after
// its `for:` and stays silent in the steady state (mvproxy-alerts.test.yaml,
// series written by hand). test/e2e/alerts.test.ts makes them fire for real.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { findExecutable } from '../../src/tools/install/debianPackages.js';
import { ALERT_RULES } from '../support/prometheus.js';

const execFileAsync = promisify(execFile);
const RULE_TESTS = ALERT_RULES.replace(/\.yaml$/, '.test.yaml');

function promtool(): string {
  const binary = findExecutable('promtool');
  if (!binary) throw new Error('promtool is missing: run `node dist/src/tools/cli/main.js install` (it apt-gets Debian package prometheus, which has it)');
  return binary;
}

test('promtool check rules accepts the alerting rules', async () => {
  const { stdout } = await execFileAsync(promtool(), ['check', 'rules', ALERT_RULES]);
  assert.match(stdout, /SUCCESS: 7 rules found/);
});

test('promtool test rules: every alert fires on its condition and none in the steady state', async () => {
  const { stdout, stderr } = await execFileAsync(promtool(), ['test', 'rules', RULE_TESTS], { cwd: dirname(RULE_TESTS) });
  assert.match(`${stdout}${stderr}`, /SUCCESS/);
});
