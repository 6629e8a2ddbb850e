// Issue 3 with real skew: kube-apiserver v1.36.3 does not serve
// storagemigration.k8s.io/v1, v1.37.2 does. Everything goes through the
// v1.36.3 apiserver's sidecar.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import { startTestSandbox, eventually, serviceAccountToken, tokenClient, apiserverNamed, freshKubectlCacheDir, type TestSandbox } from '../support/sandbox.js';

const SVM_PATH = '/apis/storagemigration.k8s.io/v1/storageversionmigrations';
const svm = (name: string) => ({
  apiVersion: 'storagemigration.k8s.io/v1',
  kind: 'StorageVersionMigration',
  metadata: { name },
  spec: { resource: { group: 'apps', resource: 'deployments' } },
});

/** Opens a watch and resolves with the first event about `name`. */
function firstWatchEvent(
  url: string,
  ca: string,
  token: string,
  name: string,
  opened: () => void,
): Promise<{ type: string; object: { metadata: { name: string } } }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: readFileSync(ca), headers: { authorization: `Bearer ${token}` } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`watch answered ${res.statusCode}`));
      opened();
      let buffered = '';
      res.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        for (let newline = buffered.indexOf('\n'); newline !== -1; newline = buffered.indexOf('\n')) {
          const event = JSON.parse(buffered.slice(0, newline)) as { type: string; object: { metadata: { name: string } } };
          buffered = buffered.slice(newline + 1);
          if (event.object.metadata.name === name) {
            req.destroy();
            resolve(event);
          }
        }
      });
    });
    req.setTimeout(30_000, () => req.destroy(new Error('no watch event within 30 s')));
    req.on('error', (err) => ((err as { code?: string }).code === 'ECONNRESET' ? undefined : reject(err)));
    req.end();
  });
}

describe('real skew: v1.36.3 and v1.37.2, through the v1.36.3 sidecar', () => {
  let tb: TestSandbox;
  let token: string;
  const old = () => {
    const s = tb.state();
    return tokenClient(s, apiserverNamed(s, 'kas-a').sidecar ?? '', token);
  };

  before(async () => {
    tb = await startTestSandbox([
      { name: 'kas-a', version: 'v1.36.3' },
      { name: 'kas-b', version: 'v1.37.2' },
    ]);
    token = await serviceAccountToken(tb.state(), 'skew-admin', 'cluster-admin');
  });
  after(() => tb?.sandbox.down());

  it('creates a StorageVersionMigration that only v1.37.2 serves', async () => {
    const res = await old()('POST', SVM_PATH, svm('through-old'));
    assert.equal(res.status, 201, res.body);
  });

  it('gets it', async () => {
    const res = await old()('GET', `${SVM_PATH}/through-old`);
    assert.equal(res.status, 200, res.body);
    assert.equal((JSON.parse(res.body) as { metadata: { name: string } }).metadata.name, 'through-old');
  });

  it('lists it', async () => {
    const res = await old()('GET', SVM_PATH);
    assert.equal(res.status, 200, res.body);
    assert.ok((JSON.parse(res.body) as { items: { metadata: { name: string } }[] }).items.some((i) => i.metadata.name === 'through-old'));
  });

  it('watches it: events arrive through the reroute', async () => {
    const s = tb.state();
    let opened!: () => void;
    const watchOpen = new Promise<void>((r) => (opened = r));
    const event = firstWatchEvent(`${apiserverNamed(s, 'kas-a').sidecar}${SVM_PATH}?watch=1`, s.ca, token, 'watched', opened);
    await watchOpen;
    const created = await old()('POST', SVM_PATH, svm('watched'));
    assert.equal(created.status, 201, created.body);
    assert.equal((await event).type, 'ADDED');
  });

  it('deletes it', async () => {
    const res = await old()('DELETE', `${SVM_PATH}/through-old`);
    assert.equal(res.status, 200, res.body);
    await eventually(async () => assert.equal((await old()('GET', `${SVM_PATH}/through-old`)).status, 404));
  });

  it('kubectl api-resources and get storageversionmigrations work through the v1.36.3 sidecar with the admin certificate', async () => {
    const kubeconfig = apiserverNamed(tb.state(), 'kas-a').kubeconfig.sidecar ?? '';
    const cacheDir = freshKubectlCacheDir();
    const resources = await tb.kubectl(kubeconfig, ['api-resources', '--cache-dir', cacheDir, '-o', 'name']);
    assert.equal(resources.code, 0, resources.stderr);
    assert.match(resources.stdout, /^storageversionmigrations\.storagemigration\.k8s\.io$/m);
    const listed = await tb.kubectl(kubeconfig, ['get', 'storageversionmigrations', '--cache-dir', cacheDir, '-o', 'name']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /storageversionmigration\.storagemigration\.k8s\.io\/watched/);
  });

  it('per-group discovery of storagemigration.k8s.io/v1 answers on the v1.36.3 sidecar as on an apiserver that serves it', async () => {
    const kubeconfig = apiserverNamed(tb.state(), 'kas-a').kubeconfig.sidecar ?? '';
    const groupVersion = await tb.kubectl(kubeconfig, ['get', '--raw', '/apis/storagemigration.k8s.io/v1']);
    assert.equal(groupVersion.code, 0, groupVersion.stderr);
    const list = JSON.parse(groupVersion.stdout) as { kind: string; resources: { name: string }[] };
    assert.equal(list.kind, 'APIResourceList');
    assert.ok(list.resources.some((r) => r.name === 'storageversionmigrations'));
    const group = await tb.kubectl(kubeconfig, ['get', '--raw', '/apis/storagemigration.k8s.io']);
    assert.equal(group.code, 0, group.stderr);
    assert.equal((JSON.parse(group.stdout) as { kind: string; name: string }).name, 'storagemigration.k8s.io');
  });

  it('kubectl explain storageversionmigrations works through the v1.36.3 sidecar, which cannot explain it alone', async () => {
    const a = apiserverNamed(tb.state(), 'kas-a');
    const explain = (kubeconfig: string) => tb.kubectl(kubeconfig, ['explain', 'storageversionmigrations.spec', '--cache-dir', freshKubectlCacheDir()]);
    const through = await explain(a.kubeconfig.sidecar ?? '');
    assert.equal(through.code, 0, through.stderr);
    assert.match(through.stdout, /KIND:\s+StorageVersionMigration/);
    assert.match(through.stdout, /FIELD:\s+spec <StorageVersionMigrationSpec>/);
    const direct = await explain(a.kubeconfig.direct);
    assert.notEqual(direct.code, 0, 'the v1.36.3 apiserver explained a resource it does not serve');
  });

  it("the OpenAPI v3 index through the v1.36.3 sidecar adds kas-b's entry for storagemigration.k8s.io/v1 to its own, and its ETag answers 304", async () => {
    const index = async (url: string, headers: Record<string, string> = {}) => {
      const res = await tokenClient(tb.state(), url, token)('GET', '/openapi/v3', undefined, headers);
      return { res, paths: res.status === 200 ? (JSON.parse(res.body) as { paths: Record<string, { serverRelativeURL: string }> }).paths : {} };
    };
    const a = apiserverNamed(tb.state(), 'kas-a');
    const b = apiserverNamed(tb.state(), 'kas-b');
    const [merged, ownA, ownB] = await Promise.all([index(a.sidecar ?? ''), index(a.direct), index(b.direct)]);
    assert.equal(merged.res.status, 200, merged.res.body.slice(0, 300));
    const gv = 'apis/storagemigration.k8s.io/v1';
    assert.ok(!(gv in ownA.paths), 'v1.36.3 lists storagemigration.k8s.io/v1 itself');
    assert.deepEqual(merged.paths[gv], ownB.paths[gv]);
    // Everything else is kas-a's own entry: those documents are served by kas-a.
    assert.deepEqual(Object.fromEntries(Object.entries(merged.paths).filter(([path]) => path !== gv)), ownA.paths);
    const etag = String(merged.res.headers['etag']);
    assert.equal((await index(a.sidecar ?? '', { 'if-none-match': etag })).res.status, 304);
  });

  it('the control plane killed and restarted under traffic fails no request, and the sidecars resync', async () => {
    let failures = 0;
    let requests = 0;
    let running = true;
    const traffic = (async () => {
      while (running) {
        const [rerouted, local] = await Promise.all([old()('GET', SVM_PATH), old()('GET', '/api/v1/namespaces/default/configmaps')]);
        requests += 2;
        if (rerouted.status !== 200) failures++;
        if (local.status !== 200) failures++;
      }
    })();
    await tb.sandbox.killControlPlane();
    await new Promise((r) => setTimeout(r, 3000));
    await tb.sandbox.restartControlPlane();
    const adminUrl = tb.state().controlPlane?.admin ?? '';
    await eventually(async () => {
      const status = (await (await fetch(`${adminUrl}/status`)).json()) as {
        xds: Record<string, { connected: boolean; types: Record<string, { versionSent?: string; versionAcked?: string }> }>;
      };
      for (const node of ['kas-a', 'kas-b']) {
        const n = status.xds[node];
        assert.ok(n?.connected, `${node} reconnected`);
        for (const t of Object.values(n.types)) assert.equal(t.versionAcked, t.versionSent);
      }
    }, 30_000);
    running = false;
    await traffic;
    assert.ok(requests > 10, `only ${requests} requests were made`);
    assert.equal(failures, 0, `${failures} of ${requests} requests failed`);
  });
});
