// What an operator watches during an upgrade, end to end: the status page in a
// real headless browser (Debian's chromium, driven by playwright-core) and
// `mvproxy admin events`, against a real sandbox of kube-apiserver v1.36.3
// (kas-a) and v1.37.2 (kas-b) with their sidecars.
import { describe, it, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startTestSandbox, eventually, adminCli, type TestSandbox } from '../support/sandbox.js';
import { CORE, GRACE_MS, NOW, model, plannerOptions, served } from '../support/clusterModel.js';
import { planSidecars } from '../../src/planner/planner.js';
import { apiserverStandings } from '../../src/model/liveness.js';
import { statusPageData } from '../../src/servers/statusPage.js';
import { startAdminHttp, stopAdminHttp } from '../../src/servers/adminHttp.js';

const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
/** Into the repository (docs/observability.md shows it), from dist/test/e2e. */
/** docs/observability.md's picture is replaced only when asked (MVPROXY_UPDATE_SCREENSHOT=1), so a test run leaves the tree clean. */
const SCREENSHOT =
  process.env['MVPROXY_UPDATE_SCREENSHOT'] === '1'
    ? fileURLToPath(new URL('../../../docs/status-page.png', import.meta.url))
    : join(tmpdir(), 'mvproxy-status-page.png');
/** Debian's package, installed by `mvproxy install`; never a browser Playwright downloads. */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const CRDS = 500;

/**
 * An admin HTTP server whose page data is a synthetic cluster: three
 * apiservers, 500 CRD group-versions every one serves, one built-in only the
 * newest serves, and a resource whose name is markup.
 */
async function syntheticPage(t: TestContext): Promise<string> {
  const crds = Array.from({ length: CRDS }, (_, i) => served(`widgets-${i}.example.com`, 'v1', 'widgets'));
  const evil = served('evil.example.com', 'v1', '<img src=x onerror=alert(1)>');
  const m = model({
    'kas-a': { serves: [...CORE, ...crds] },
    'kas-b': { serves: [...CORE, ...crds] },
    'kas-c': { serves: [...CORE, ...crds, evil, served('storagemigration.k8s.io', 'v1', 'storageversionmigrations')] },
  });
  const draining = new Set<string>();
  const data = statusPageData({
    model: m,
    plans: planSidecars(m, plannerOptions(m, draining)),
    ads: {},
    draining,
    standings: apiserverStandings(m, GRACE_MS),
    replica: 'synthetic',
    reports: new Map(),
    kubernetesService: {
      enabled: true,
      state: 'failing',
      message: 'Endpoints default/kubernetes does not exist: <i>not italic</i>',
      nodes: [
        { apiserver: 'kas-a', published: 'sidecar', sidecar_live: true, apiserver_ready: true, sidecar_seen_by: ['r1', 'r2'] },
        { apiserver: 'kas-b', published: 'apiserver', sidecar_live: false, apiserver_ready: true, sidecar_seen_by: [] },
        { apiserver: 'kas-c', published: '', sidecar_live: false, apiserver_ready: false, sidecar_seen_by: [] },
      ],
      other_addresses: ['10.0.0.9'],
      foreign_writes: 3,
      confirmed_at: '2026-12-04T15:00:00Z',
    },
    events: [{ sequence: 1, at: NOW, kind: 'nack', subject: 'kas-a', message: '<b>not bold</b>' }],
  });
  const { server, url } = await startAdminHttp('127.0.0.1', 0, {
    metrics: async () => ({ type: 'text/plain', body: '' }),
    status: () => ({}),
    page: () => data,
  });
  t.after(() => stopAdminHttp(server));
  return url;
}

const SVM_ROW = '[data-gvr="storagemigration.k8s.io/v1/storageversionmigrations"]';

describe('the status page and admin events, kas-a (v1.36.3) next to kas-b (v1.37.2)', () => {
  let tb: TestSandbox;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  const consoleErrors: string[] = [];

  const socket = (): string => {
    const path = tb.state().controlPlane?.adminSocket;
    if (!path) throw new Error('sandbox has no control plane');
    return path;
  };
  const admin = (...args: string[]): Promise<string> => adminCli(tb, ...args);

  before(async () => {
    tb = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3' },
        { name: 'kas-b', version: 'v1.37.2' },
      ],
      { mode: 'mvproxy', network: 'loopback', controlPlaneReplicas: 'one' },
    );
    profile = mkdtempSync(join(tmpdir(), 'mvproxy-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (err) => consoleErrors.push(err.message));
  });
  after(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await tb?.sandbox.down();
  });

  it('admin events lists each apiserver arriving, with its version', async () => {
    const lines = await eventually(async () => {
      const out = (await admin('events')).split('\n');
      assert.ok(
        out.some((l) => /apiserver-arrived\s+kas-a\s+available at v1\.36\.3/.test(l)) &&
          out.some((l) => /apiserver-arrived\s+kas-b\s+available at v1\.37\.2/.test(l)),
        out.join('\n'),
      );
      return out;
    });
    assert.match(lines[0] ?? '', /^TIME\s+KIND\s+SUBJECT\s+MESSAGE$/);
  });

  it('the page loads from the admin HTTP address without console errors', async () => {
    const url = tb.state().controlPlane?.admin;
    assert.ok(url, 'the control plane serves an admin HTTP address');
    const response = await page.goto(`${url}/`);
    assert.equal(response?.status(), 200);
    await page.waitForSelector('#apiservers [data-apiserver="kas-b"]');
    assert.deepEqual(consoleErrors, []);
  });

  it('the kubernetes Service panel says publishing is off (the sandbox on loopback: the apiservers publish themselves)', async () => {
    await page.waitForSelector('#publication-state:text-is("off")');
    assert.match((await page.textContent('#publication-message')) ?? '', /kubernetesService\.publish is not set/);
    assert.equal(await page.isHidden('#publication-nodes'), true);
  });

  it('the matrix shows storagemigration.k8s.io/v1 served only by the v1.37 apiserver and rerouted by the v1.36 sidecar', async () => {
    await page.waitForSelector(`${SVM_ROW} td[data-route="kas-b"]`, { timeout: 30_000 });
    const cells = await page.$$eval(`${SVM_ROW} td.cell`, (tds) => tds.map((td) => [td.getAttribute('data-served'), td.getAttribute('data-route')]));
    // Columns in apiserver order: kas-a lacks it and its sidecar sends it to kas-b; kas-b serves it itself.
    assert.deepEqual(cells, [
      ['no', 'kas-b'],
      ['yes', 'local'],
    ]);
    const header = await page.textContent('#matrix thead');
    assert.match(header ?? '', /kas-a \(v1\.36\.3\).*kas-b \(v1\.37\.2\)/);
  });

  it('after admin drain, the page shows the drain (and its event) by itself', async () => {
    const started = Date.now();
    await admin('drain', 'kas-a');
    const asked = Date.now();
    await page.waitForSelector('#apiservers [data-apiserver="kas-a"] td.draining:text-is("yes")', { timeout: 10_000 });
    const shown = Date.now();
    await page.waitForSelector('#events tr[data-kind="drain"][data-subject="kas-a"]', { timeout: 10_000 });
    process.stderr.write(`# the page showed the drain ${shown - asked} ms after admin drain returned (${shown - started} ms after it was run)\n`);
    // The drained apiserver's own sidecar now sends what kas-b also serves there.
    await page.waitForSelector('[data-gvr="v1/configmaps"] td.cell[data-route="kas-b"]', { timeout: 10_000 });
    assert.deepEqual(consoleErrors, []);
  });

  it('admin events shows the drain, and --follow prints the undrain as it happens', async () => {
    const listed = await admin('events');
    assert.match(listed, /drain\s+kas-a\s+drained: traffic moves off it \((asked|drained) through mvproxy admin on /);
    assert.match(listed, /plan-changed\s+kas-a/);
    const follower = spawn(process.execPath, [CLI, 'admin', '--socket', socket(), 'events', '--follow'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    follower.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    try {
      await eventually(async () => assert.match(out, /drain\s+kas-a/), 10_000, 50);
      await admin('undrain', 'kas-a');
      await eventually(async () => assert.match(out, /undrain\s+kas-a\s+drain ended/), 10_000, 50);
    } finally {
      follower.kill('SIGINT');
    }
    const code = await new Promise<number | null>((resolve) => follower.once('exit', (c) => resolve(c)));
    assert.equal(code, 0, 'Ctrl-C ends admin events --follow normally');
  });

  it('after the undrain, the page shows the whole story in its events (the screenshot in docs/observability.md)', async () => {
    await page.waitForSelector('#events tr[data-kind="undrain"][data-subject="kas-a"]', { timeout: 10_000 });
    await page.waitForSelector('#apiservers [data-apiserver="kas-a"] td.draining:text-is("no")', { timeout: 10_000 });
    await page.waitForSelector('#sidecars [data-sidecar="kas-a"] td:nth-child(3):text-is("yes")', { timeout: 30_000 });
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    process.stderr.write(`# screenshot: ${SCREENSHOT}\n`);
    assert.deepEqual(consoleErrors, []);
  });

  it('with 3 apiservers and 500 CRDs the page expands only the differences, filters, and shows cluster strings as text', async (t) => {
    const url = await syntheticPage(t);
    await page.goto(`${url}/`);
    await page.waitForSelector('#matrix [data-gvr]');
    const drawn = await page.$$eval('#matrix tr[data-gvr]', (rows) => rows.map((r) => r.getAttribute('data-gvr')));
    process.stderr.write(`# 3 apiservers, ${CRDS + 2} resources: ${drawn.length} rows expanded by default\n`);
    assert.deepEqual(drawn, ['evil.example.com/v1/<img src=x onerror=alert(1)>', 'storagemigration.k8s.io/v1/storageversionmigrations']);
    // What a CRD author wrote is text on the page, never markup.
    assert.equal(await page.$('#matrix img'), null);
    await page.fill('#filter', 'widgets-42.');
    await page.waitForFunction(() => document.querySelectorAll('#matrix tr[data-gvr]').length === 1);
    assert.equal(await page.getAttribute('#matrix tr[data-gvr]', 'data-gvr'), 'widgets-42.example.com/v1/widgets');
    assert.deepEqual(consoleErrors, []);
  });

  it("the kubernetes Service panel shows the publisher's state, why, what each node publishes, foreign writes and when it confirmed", async (t) => {
    const url = await syntheticPage(t);
    await page.goto(`${url}/`);
    await page.waitForSelector('#publication-state:text-is("failing")');
    assert.equal(await page.getAttribute('#publication-state', 'class'), 'bad');
    assert.equal(await page.textContent('#publication-message'), 'Endpoints default/kubernetes does not exist: <i>not italic</i>');
    assert.equal(await page.$('#publication i'), null);
    const published = await page.$$eval('#publication-nodes tbody tr', (rows) =>
      rows.map((r) => [
        r.getAttribute('data-node'),
        r.querySelector('td.field-published')?.textContent,
        r.querySelector('td.field-sidecar_seen_by')?.textContent,
      ]),
    );
    assert.deepEqual(published, [
      ['kas-a', 'sidecar', 'r1, r2'],
      ['kas-b', 'apiserver', '-'],
      ['kas-c', '-', '-'],
    ]);
    const fields = await page.$$eval('#publication-fields tr[data-field]', (rows) =>
      rows.map((r) => [r.getAttribute('data-field'), r.querySelector('td')?.textContent]),
    );
    assert.deepEqual(fields, [
      ['other_addresses', '10.0.0.9'],
      ['foreign_writes', '3'],
      ['confirmed_at', '2026-12-04T15:00:00Z'],
    ]);
    assert.deepEqual(consoleErrors, []);
  });
});
