// The status page: its data (a pure function of what GetStatus reads) and how
// the admin HTTP address serves it (own files only, user data never markup).
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import type { ClusterModel } from '../../../src/model/cluster.js';
import { planSidecars } from '../../../src/planner/planner.js';
import { kubernetesServicePanel, statusPageData } from '../../../src/servers/statusPage.js';
import { STATUS_PAGE_HTML, STATUS_PAGE_JS } from '../../../src/servers/statusPageAssets.js';
import { startAdminHttp, stopAdminHttp } from '../../../src/servers/adminHttp.js';
import { CORE, GRACE_MS, NOW, model, plannerOptions, served } from '../../support/clusterModel.js';
import { apiserverStandings } from '../../../src/model/liveness.js';

const SVM = served('storagemigration.k8s.io', 'v1', 'storageversionmigrations');

function data(m: ClusterModel, draining: string[] = []) {
  const drains = new Set(draining);
  return statusPageData({
    model: m,
    plans: planSidecars(m, plannerOptions(m, drains)),
    ads: {},
    draining: drains,
    standings: apiserverStandings(m, GRACE_MS),
    replica: 'replica-here',
    reports: new Map(),
    events: [{ sequence: 1, at: NOW, kind: 'drain', subject: 'a', message: 'drained' }],
  });
}

describe('statusPageData: the skew matrix', () => {
  test('one column per apiserver, one row per resource a live apiserver serves, with who serves it and where each sidecar sends it', () => {
    const d = data(model({ a: { serves: CORE }, b: { serves: [...CORE, SVM] } }));
    assert.deepEqual(d.matrix.columns, ['a', 'b']);
    const svm = d.matrix.rows.find((r) => r.resource === 'storageversionmigrations');
    assert.deepEqual(svm, {
      group: 'storagemigration.k8s.io',
      version: 'v1',
      resource: 'storageversionmigrations',
      served: [false, true],
      routes: ['b', 'local'],
      notable: true,
    });
    const pods = d.matrix.rows.find((r) => r.resource === 'pods');
    assert.deepEqual(pods, { group: 'core', version: 'v1', resource: 'pods', served: [true, true], routes: ['local', 'local'], notable: false });
  });

  test('a resource served only by an unreachable apiserver is a 503 on every sidecar, its own included', () => {
    const d = data(model({ a: { serves: CORE }, b: { serves: [...CORE, SVM], reachable: false } }));
    assert.deepEqual(d.matrix.rows.find((r) => r.resource === 'storageversionmigrations')?.routes, ['503', '503']);
  });

  test('an apiserver gone past its grace period contributes no rows', () => {
    const d = data(model({ a: { serves: CORE }, b: { serves: [...CORE, SVM], leaseGoneForMs: GRACE_MS + 1 } }));
    assert.equal(
      d.matrix.rows.some((r) => r.resource === 'storageversionmigrations'),
      false,
    );
  });
});

describe('statusPageData: apiservers, sidecars, events', () => {
  test('apiservers say whether they are draining; sidecars say whether connected; events come newest first', () => {
    const d = data(model({ a: { serves: CORE }, b: { serves: CORE } }), ['a']);
    assert.deepEqual(
      d.apiservers.map((a) => [a.name, a.draining, a.standing]),
      [
        ['a', true, 'available'],
        ['b', false, 'available'],
      ],
    );
    assert.deepEqual(
      d.sidecars.map((s) => [s.node, s.connected, s.inSync]),
      [
        ['a', 'no', false],
        ['b', 'no', false],
      ],
    );
    assert.deepEqual(d.events, [{ sequence: 1, time: new Date(NOW).toISOString(), kind: 'drain', subject: 'a', message: 'drained' }]);
  });
});

async function page(t: TestContext): Promise<string> {
  const { server, url } = await startAdminHttp('127.0.0.1', 0, {
    metrics: async () => ({ type: 'text/plain', body: '' }),
    status: () => ({}),
    page: () => ({ evil: '<script>alert(1)</script>' }),
  });
  t.after(() => stopAdminHttp(server));
  return url;
}

describe('statusPageData: the kubernetes Service panel', () => {
  test('while publishing is off the panel says so and lists nothing', () => {
    const d = data(model({ a: { serves: CORE } }));
    assert.equal(d.kubernetesService.state, 'off');
    assert.match(d.kubernetesService.message, /kubernetesService.publish is not set/);
    assert.deepEqual(d.kubernetesService.fields, []);
    assert.deepEqual(d.kubernetesService.nodes, []);
  });

  test('state and message apart; every other field and every node field as text, lists joined, booleans yes/no, empty values "-"', () => {
    const panel = kubernetesServicePanel({
      enabled: true,
      state: 'failing',
      message: 'Endpoints default/kubernetes does not exist',
      nodes: [
        { apiserver: 'a', published: 'sidecar', sidecar_live: true, sidecar_seen_by: ['r1', 'r2'] },
        { apiserver: 'b', published: '', sidecar_live: false, sidecar_seen_by: [] },
      ],
      other_addresses: ['10.0.0.9'],
      foreign_writes: 3,
      confirmed_at: '',
    });
    assert.equal(panel.state, 'failing');
    assert.equal(panel.message, 'Endpoints default/kubernetes does not exist');
    assert.deepEqual(panel.fields, [
      { name: 'other_addresses', value: '10.0.0.9' },
      { name: 'foreign_writes', value: '3' },
      { name: 'confirmed_at', value: '-' },
    ]);
    assert.deepEqual(panel.nodes, [
      [
        { name: 'apiserver', value: 'a' },
        { name: 'published', value: 'sidecar' },
        { name: 'sidecar_live', value: 'yes' },
        { name: 'sidecar_seen_by', value: 'r1, r2' },
      ],
      [
        { name: 'apiserver', value: 'b' },
        { name: 'published', value: '-' },
        { name: 'sidecar_live', value: 'no' },
        { name: 'sidecar_seen_by', value: '-' },
      ],
    ]);
  });

  test('a field the panel does not know yet is drawn like the others', () => {
    const status = { state: 'publishing', message: 'ok', nodes: [], added_later: 7 };
    assert.deepEqual(kubernetesServicePanel(status).fields, [{ name: 'added_later', value: '7' }]);
  });
});

describe('the status page over HTTP', () => {
  test('/ serves the page with a policy that allows only its own files', async (t) => {
    const url = await page(t);
    const response = await fetch(`${url}/`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(response.headers.get('content-security-policy') ?? '', /default-src 'none'; script-src 'self'/);
    assert.equal(await response.text(), STATUS_PAGE_HTML);
    for (const file of ['/status-page.js', '/status-page.css']) assert.equal((await fetch(`${url}${file}`)).status, 200, file);
  });

  test('the page has no inline script and its script never writes markup', () => {
    assert.doesNotMatch(STATUS_PAGE_HTML, /<script>|<script [^>]*>[^<]/);
    assert.doesNotMatch(STATUS_PAGE_JS, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  test('/status-page.json is the page data as JSON, cluster strings as data', async (t) => {
    const url = await page(t);
    const response = await fetch(`${url}/status-page.json`);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await response.json(), { evil: '<script>alert(1)</script>' });
  });
});
