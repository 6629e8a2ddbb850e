// Document changes and a filter-module upgrade drain nothing, on the real
// sandbox (kube-apiserver v1.36.3 and v1.37.2, Envoy sidecars, the control
// plane): the merged documents follow the local apiserver inside the sidecar
// (the document filter merges at each request), and peer parts and the
// filter modules reach the sidecars over ECDS (src/translator/documentFilters.ts),
// which replaces a filter's configuration for new requests only, never the
// listener. Watches held open through kas-a's sidecar over HTTP/2 and
// HTTP/1.1 live through ten `/apis` changes (CRDs created and deleted, each
// waited for through the sidecar) and through a control-plane restart with a changed module
// (a custom section appended to dist/envoy/identity.wasm, restored
// afterwards); Envoy never modifies the listener, drains no filter chain and
// closes no connection for draining.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type ClientHttp2Session } from 'node:http2';
import { request } from 'node:https';
import { after, before, describe, test } from 'node:test';
import type { SandboxApiserverState } from '../../src/tools/sandbox/state.js';
import { IDENTITY_MODULE_PATH as FILTER_MODULE_PATH } from '../../src/xds/filterModule.js';
import { AGGREGATED_DISCOVERY_JSON_ACCEPT } from '../../src/model/discovery.js';
import { envoyAdminJson } from '../support/envoyAdmin.js';
import { eventually, startTestSandbox, tokenClient, type TestSandbox } from '../support/sandbox.js';

const NAMESPACE = 'default';
const LABEL = 'nodrain=test';
const WATCH_PATH = `/api/v1/namespaces/${NAMESPACE}/configmaps?watch=true&labelSelector=${encodeURIComponent(LABEL)}`;
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const STAT = {
  identityReloads: 'extension_config_discovery.http_filter.mvproxy.identity.config_reload',
  identityFails: 'extension_config_discovery.http_filter.mvproxy.identity.config_fail',
  listenerModified: 'listener_manager.listener_modified',
  listenerAdded: 'listener_manager.listener_added',
  chainsDraining: 'listener_manager.total_filter_chains_draining',
  listenersDraining: 'listener_manager.total_listeners_draining',
  drainClose: 'http.apiserver.downstream_cx_drain_close',
  http1SoftDrain: 'http.apiserver.downstream_cx_http1_soft_drain',
} as const;

let tb: TestSandbox;
let kasA: SandboxApiserverState;
let kasB: SandboxApiserverState;
let ca: Buffer;
const originalModule = readFileSync(FILTER_MODULE_PATH);

before(async () => {
  tb = await startTestSandbox([
    { name: 'kas-a', version: 'v1.36.3' },
    { name: 'kas-b', version: 'v1.37.2' },
  ]);
  [kasA, kasB] = tb.state().apiservers as [SandboxApiserverState, SandboxApiserverState];
  ca = readFileSync(tb.state().ca);
});
after(async () => {
  writeFileSync(FILTER_MODULE_PATH, originalModule);
  await tb?.sandbox.down();
});

/** Envoy stats of a sidecar, by name (the exact names asked for; absent ones missing). */
async function stats(sidecar: SandboxApiserverState, names: readonly string[]): Promise<Record<string, number>> {
  const filter = `^(${names.map((n) => n.replace(/[.]/g, '\\.')).join('|')})$`;
  const reply = await envoyAdminJson<{ stats: Array<{ name: string; value: number }> }>(
    sidecar.sidecarAdminSocket ?? '',
    `/stats?format=json&filter=${encodeURIComponent(filter)}`,
  );
  return Object.fromEntries(reply.stats.filter((s) => typeof s.value === 'number').map((s) => [s.name, s.value]));
}

async function stat(sidecar: SandboxApiserverState, name: string): Promise<number> {
  const value = (await stats(sidecar, [name]))[name];
  assert.ok(value !== undefined, `Envoy has no stat ${name}`);
  return value;
}

/** A watch held open through a sidecar: the configmap names it saw ADDED, and whether it ended. */
interface Watch {
  label: string;
  names: Set<string>;
  status: Promise<number>;
  ended: boolean;
  errors: string[];
  close: () => void;
}

function readEvents(watch: Watch, chunkSource: NodeJS.EventEmitter): void {
  let buffered = '';
  chunkSource.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    for (let newline = buffered.indexOf('\n'); newline !== -1; newline = buffered.indexOf('\n')) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      const event = JSON.parse(line) as { type: string; object: { metadata: { name: string } } };
      if (event.type === 'ADDED') watch.names.add(event.object.metadata.name);
    }
  });
}

function http2Watch(session: ClientHttp2Session, token: string, label: string): Watch {
  const stream = session.request({ ':path': WATCH_PATH, authorization: `Bearer ${token}`, accept: 'application/json' });
  const watch: Watch = { label, names: new Set(), status: Promise.resolve(0), ended: false, errors: [], close: () => stream.close() };
  watch.status = new Promise((resolve) => stream.on('response', (headers) => resolve(Number(headers[':status']))));
  readEvents(watch, stream);
  stream.on('end', () => (watch.ended = true));
  stream.on('close', () => (watch.ended = true));
  stream.on('error', (err) => watch.errors.push(err.message));
  return watch;
}

function http1Watch(base: string, token: string, label: string): Watch {
  const watch: Watch = { label, names: new Set(), status: Promise.resolve(0), ended: false, errors: [], close: () => undefined };
  watch.status = new Promise((resolve) => {
    const req = request(`${base}${WATCH_PATH}`, { ca, headers: { authorization: `Bearer ${token}` }, agent: false }, (res) => {
      resolve(res.statusCode ?? 0);
      readEvents(watch, res);
      res.on('end', () => (watch.ended = true));
      res.on('close', () => (watch.ended = true));
      res.on('error', (err) => watch.errors.push(err.message));
    });
    req.on('error', (err) => {
      watch.errors.push(err.message);
      resolve(0);
    });
    req.end();
    watch.close = () => req.destroy();
  });
  return watch;
}

/** A module that differs from the built one by a custom section only (ignored by the VM). */
function upgradedModule(original: Buffer): Buffer {
  const name = Buffer.from('mvproxy.nodrain-test');
  const payload = Buffer.concat([Buffer.from([name.length]), name, Buffer.from(new Date().toISOString())]);
  assert.ok(payload.length < 128, 'one-byte LEB128 size');
  return Buffer.concat([original, Buffer.from([0x00, payload.length]), payload]);
}

describe('document changes and a module upgrade drain no connection', () => {
  test('ten /apis changes and a filter-module upgrade over ECDS: no listener change, no drain, every watch still open', async (t) => {
    const token = tb.sandbox.adminBearerToken();
    const direct = tokenClient(tb.state(), kasA.direct, token);
    const sidecarBase = kasA.sidecar ?? '';
    const sidecars = [kasA, kasB];
    const drainStats = [STAT.listenerModified, STAT.listenerAdded, STAT.chainsDraining, STAT.listenersDraining, STAT.drainClose, STAT.http1SoftDrain];
    const baseline = await Promise.all(sidecars.map((s) => stats(s, drainStats)));
    for (const [i, b] of baseline.entries()) {
      for (const name of drainStats) assert.ok(b[name] !== undefined, `${sidecars[i]?.name}: Envoy has the stat ${name}`);
    }
    const groupsThroughKasA = async (): Promise<string[]> => {
      const reply = await tokenClient(tb.state(), sidecarBase, token)('GET', '/apis', undefined, { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT });
      assert.equal(reply.status, 200, reply.body);
      return (JSON.parse(reply.body) as { items: { metadata: { name: string } }[] }).items.map((g) => g.metadata.name);
    };

    // Watches through kas-a's sidecar: two on one HTTP/2 connection, two on their own HTTP/1.1 connections.
    const session = connect(sidecarBase, { ca });
    session.on('error', () => undefined);
    const watches = [
      http2Watch(session, token, 'HTTP/2 #1'),
      http2Watch(session, token, 'HTTP/2 #2'),
      http1Watch(sidecarBase, token, 'HTTP/1.1 #1'),
      http1Watch(sidecarBase, token, 'HTTP/1.1 #2'),
    ];
    assert.deepEqual(await Promise.all(watches.map((w) => w.status)), [200, 200, 200, 200]);
    const cxActive = await stat(kasA, 'http.apiserver.downstream_cx_active');
    let configmaps = 0;
    const createConfigMap = async (): Promise<string> => {
      const name = `nodrain-${++configmaps}`;
      const reply = await direct('POST', `/api/v1/namespaces/${NAMESPACE}/configmaps`, { metadata: { name, labels: { nodrain: 'test' } } });
      assert.equal(reply.status, 201, reply.body);
      return name;
    };
    const everyWatchSaw = async (name: string): Promise<void> =>
      eventually(async () => {
        for (const w of watches) assert.ok(w.names.has(name), `${w.label} saw ${name}`);
      }, 15_000);
    await everyWatchSaw(await createConfigMap());

    // Ten document changes: five CRDs of new groups created, then deleted; each waited for in kas-a's sidecar.
    const groups = Array.from({ length: 5 }, (_, i) => `g${i}.nodrain.example.com`);
    const changes: Array<{ group: string; create: boolean }> = [
      ...groups.map((group) => ({ group, create: true })),
      ...groups.map((group) => ({ group, create: false })),
    ];
    for (const { group, create } of changes) {
      const crd = `widgets.${group}`;
      const reply = create
        ? await direct('POST', CRDS, {
            apiVersion: 'apiextensions.k8s.io/v1',
            kind: 'CustomResourceDefinition',
            metadata: { name: crd },
            spec: {
              group,
              names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
              scope: 'Namespaced',
              versions: [
                { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
              ],
            },
          })
        : await direct('DELETE', `${CRDS}/${crd}`);
      assert.ok(reply.status === 200 || reply.status === 201, `${create ? 'create' : 'delete'} ${crd}: ${reply.status} ${reply.body}`);
      // The merged document kas-a's sidecar serves follows its apiserver (a CRD is never in the peer part).
      await eventually(async () => assert.equal((await groupsThroughKasA()).includes(group), create, `${group} in kas-a's merged /apis`), 60_000);
      await everyWatchSaw(await createConfigMap());
    }

    // The module upgrade: a control plane restarted with a module that differs in a custom section.
    const reloads = await Promise.all(sidecars.map((s) => stat(s, STAT.identityReloads)));
    await tb.sandbox.killControlPlane();
    try {
      writeFileSync(FILTER_MODULE_PATH, upgradedModule(originalModule));
      await tb.sandbox.restartControlPlane();
      await eventually(async () => {
        for (const [i, s] of sidecars.entries()) assert.ok((await stat(s, STAT.identityReloads)) > (reloads[i] ?? 0), `${s.name} took the new module`);
      }, 60_000);
    } finally {
      writeFileSync(FILTER_MODULE_PATH, originalModule);
    }
    for (const s of sidecars) assert.equal(await stat(s, STAT.identityFails), 0, `${s.name}: the new module loads`);
    // The new module runs: certificate identity and merged documents through the sidecar.
    const pki = tb.state().clientCerts.admin;
    const withCert = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${sidecarBase}/api/v1/namespaces/${NAMESPACE}/configmaps?limit=1`,
        { ca, cert: readFileSync(pki.cert), key: readFileSync(pki.key), agent: false },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(withCert, 200, 'a certificate client through the upgraded identity filter');
    assert.ok((await groupsThroughKasA()).includes('storagemigration.k8s.io'), 'merged /apis after the upgrade');
    await everyWatchSaw(await createConfigMap());

    // Nothing drained; every watch is still open, on the connections it started on.
    const end = await Promise.all(sidecars.map((s) => stats(s, drainStats)));
    for (const [i, s] of sidecars.entries()) {
      const was = baseline[i] ?? {};
      const now = end[i] ?? {};
      assert.equal(now[STAT.listenerModified], was[STAT.listenerModified], `${s.name}: ${STAT.listenerModified}`);
      assert.equal(now[STAT.listenerAdded], was[STAT.listenerAdded], `${s.name}: ${STAT.listenerAdded}`);
      assert.equal(now[STAT.chainsDraining], 0, `${s.name}: ${STAT.chainsDraining}`);
      assert.equal(now[STAT.listenersDraining], 0, `${s.name}: ${STAT.listenersDraining}`);
      assert.equal(now[STAT.drainClose], 0, `${s.name}: ${STAT.drainClose}`);
      assert.equal(now[STAT.http1SoftDrain], 0, `${s.name}: ${STAT.http1SoftDrain}`);
    }
    for (const w of watches) {
      assert.equal(w.ended, false, `${w.label} still open`);
      assert.deepEqual(w.errors, [], w.label);
    }
    assert.ok((await stat(kasA, 'http.apiserver.downstream_cx_active')) >= cxActive, 'the watch connections are still there');
    assert.ok((await stat(kasA, 'http.apiserver.downstream_cx_http2_active')) >= 1, 'the HTTP/2 connection is still there');
    assert.ok((await stat(kasA, 'http.apiserver.downstream_cx_http1_active')) >= 2, 'the HTTP/1.1 connections are still there');
    // Every merged document came from the pushed filters: no ext_proc stream at all.
    for (const s of sidecars) assert.equal(await stat(s, 'http.apiserver.ext_proc.mvproxy.streams_started'), 0, `${s.name}: ext_proc streams`);
    t.diagnostic(`${changes.length} /apis changes; ${configmaps} configmaps seen by all ${watches.length} watches`);
    for (const w of watches) w.close();
    session.close();
  });
});
