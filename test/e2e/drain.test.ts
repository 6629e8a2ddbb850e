// The operator's upgrade of one apiserver, through `mvproxy admin`: see the
// cluster, drain kas-a, stop it without failing a request, start it at the
// new release, and give it its traffic back. Real apiservers (v1.36.3 and
// v1.37.2), real sidecars, the real CLI talking to the real control plane.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { fileURLToPath } from 'node:url';
import {
  startTestSandbox,
  eventually,
  serviceAccountToken,
  tokenClient,
  apiserverNamed,
  freshKubectlCacheDir,
  adminCli,
  type TestSandbox,
} from '../support/sandbox.js';
import type { Status__Output } from '../../src/generated/mvproxy/admin/v1/Status.js';
import type { Explanation__Output } from '../../src/generated/mvproxy/admin/v1/Explanation.js';

const execFileAsync = promisify(execFile);
const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const PLUGIN = fileURLToPath(new URL('../../src/cli/kubectl.js', import.meta.url));
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';
const MIGRATIONS = '/apis/storagemigration.k8s.io/v1/storageversionmigrations';

describe('draining kas-a (v1.36.3) for its upgrade, next to kas-b (v1.37.2)', () => {
  let tb: TestSandbox;
  let token: string;

  const admin = (...args: string[]): Promise<string> => adminCli(tb, ...args);
  const explain = async (sidecar: string, path: string): Promise<Explanation__Output> =>
    JSON.parse(await admin('explain', sidecar, path, '-o', 'json')) as Explanation__Output;
  const through = (name: string) => {
    const s = tb.state();
    const sidecar = apiserverNamed(s, name).sidecar;
    if (!sidecar) throw new Error('sandbox has no sidecars');
    return tokenClient(s, sidecar, token);
  };
  const reroutedCount = async (resource: string): Promise<number> => {
    const text = await (await fetch(`${tb.state().controlPlane?.admin}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('apiserver_rerouted_request_total{') && l.includes(`resource="${resource}"`) && l.includes('code="200"'));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  /** GETs ConfigMaps through a sidecar, one at a time, from 0.5 s before `action` until 2 s after it. */
  const loadWhile = async (sidecar: string, action: () => Promise<void>): Promise<{ failures: string[]; sent: number }> => {
    const failures: string[] = [];
    let sent = 0;
    let running = true;
    const load = (async () => {
      while (running) {
        const res = await through(sidecar)('GET', CONFIGMAPS).catch((err: Error) => ({ status: 0, body: err.message }));
        sent++;
        if (res.status !== 200) failures.push(`${res.status} ${res.body.slice(0, 200)}`);
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    await action();
    await new Promise((r) => setTimeout(r, 2000));
    running = false;
    await load;
    return { failures, sent };
  };

  before(async () => {
    tb = await startTestSandbox([
      // As in production behind a load balancer: after SIGTERM, 3 s of serving with /readyz failing.
      { name: 'kas-a', version: 'v1.36.3', shutdownDelaySeconds: 3 },
      { name: 'kas-b', version: 'v1.37.2' },
    ]);
    token = await serviceAccountToken(tb.state(), 'drain-admin', 'cluster-admin');
  });
  after(async () => {
    await tb?.sandbox.down();
  });

  it('admin status lists both apiservers as available and both sidecars in sync', async () => {
    const status = await eventually(async () => {
      const s = JSON.parse(await admin('status', '-o', 'json')) as Status__Output;
      assert.ok(
        s.sidecars.every((sidecar) => sidecar.in_sync),
        JSON.stringify(s.sidecars),
      );
      return s;
    });
    assert.deepEqual(
      status.apiservers.map((a) => [a.name, a.standing, a.draining]),
      [
        ['kas-a', 'available', false],
        ['kas-b', 'available', false],
      ],
    );
    const table = await admin('status');
    assert.match(table, /^APISERVER +VERSION +STANDING +READY +DRAINING/m);
    // The version is what the apiserver's /version says.
    assert.match(table, /^kas-a +v1\.36\.3 +available +yes +no /m);
    assert.match(table, /^kas-b +v1\.37\.2 +available /m);
    assert.match(table, /^kas-b +yes +yes /m, 'sidecar kas-b connected and in sync');
    assert.ok(status.apiservers.find((a) => a.name === 'kas-b')?.group_versions.includes('storagemigration.k8s.io/v1'));
    assert.ok(!status.apiservers.find((a) => a.name === 'kas-a')?.group_versions.includes('storagemigration.k8s.io/v1'));
  });

  it("admin explain says a resource only kas-b serves goes from kas-a's sidecar to kas-b, and why", async () => {
    const e = await explain('kas-a', MIGRATIONS);
    assert.equal(e.destination, 'peers');
    assert.deepEqual(e.apiservers, ['kas-b']);
    assert.match(e.reason, /does not serve storagemigration\.k8s\.io\/v1 storageversionmigrations/);
    assert.equal(e.request?.resource, 'storageversionmigrations');
    assert.match(await admin('explain', 'kas-a', MIGRATIONS), /^destination: peers kas-b$/m);
  });

  it("admin config shows what kas-a's sidecar was pushed: its storageversionmigrations route goes to kas-b, every type ACKed", async () => {
    const routes = await admin('config', 'kas-a', '--type', 'routes');
    assert.match(routes, /^# routes version \S+ \(ACKed\)$/m);
    const svm = routes.split('\n').filter((line) => line.includes('storageversionmigrations'));
    assert.ok(svm.length > 0 && svm.every((line) => /kas-b/.test(line)), routes);
    const all = parseYaml(await admin('config', 'kas-a', '-o', 'yaml')) as {
      types: { type_url: string; version: string; version_acked: string; resources: unknown[] }[];
    };
    assert.deepEqual(
      all.types.map((t) => t.type_url.split('.').at(-1)),
      ['Cluster', 'ClusterLoadAssignment', 'Secret', 'Listener', 'RouteConfiguration', 'TypedExtensionConfig'],
    );
    for (const t of all.types) assert.equal(t.version_acked, t.version, t.type_url);
  });

  it("kubectl mvproxy status works through kubectl's plugin mechanism, as mvproxy admin status", async () => {
    const bin = mkdtempSync(join(tmpdir(), 'kubectl-plugins-'));
    const plugin = join(bin, 'kubectl-mvproxy');
    // What npm does for the package's bin entry: an executable link on PATH.
    chmodSync(PLUGIN, 0o755);
    symlinkSync(PLUGIN, plugin);
    const socket = tb.state().controlPlane?.adminSocket ?? '';
    const { stdout } = await execFileAsync(tb.state().kubectl, ['mvproxy', 'status', '--socket', socket], {
      env: { ...process.env, PATH: `${bin}:${process.env['PATH'] ?? ''}` },
      timeout: 30_000,
    });
    rmSync(bin, { recursive: true, force: true });
    assert.equal(stdout, await admin('status'));
  });

  it('a drain never causes a 503: with kas-b drained, what only it serves still goes to it, and metrics show the drain', async () => {
    await admin('drain', 'kas-b', '--wait');
    const e = await explain('kas-a', MIGRATIONS);
    assert.deepEqual([e.destination, e.apiservers], ['peers', ['kas-b']]);
    const res = await through('kas-a')('GET', MIGRATIONS);
    assert.equal(res.status, 200, res.body);
    const text = await (await fetch(`${tb.state().controlPlane?.admin}/metrics`)).text();
    assert.match(text, /^mvproxy_apiserver_draining\{apiserver="kas-b"\} 1$/m);
    await admin('undrain', 'kas-b', '--wait');
    const after = await (await fetch(`${tb.state().controlPlane?.admin}/metrics`)).text();
    assert.match(after, /^mvproxy_apiserver_draining\{apiserver="kas-b"\} 0$/m);
  });

  it("after a drain, what kas-b also serves goes from kas-a's sidecar to kas-b, counted as rerouted", async () => {
    await admin('drain', 'kas-a', '--wait');
    const e = await explain('kas-a', CONFIGMAPS);
    assert.equal(e.destination, 'peers');
    assert.deepEqual(e.apiservers, ['kas-b']);
    assert.match(e.reason, /draining/);
    const before = await reroutedCount('configmaps');
    const res = await through('kas-a')('GET', CONFIGMAPS);
    assert.equal(res.status, 200, res.body);
    // The access log reaches the control plane within its flush interval.
    await eventually(async () => assert.ok((await reroutedCount('configmaps')) > before));
  });

  it('the drain is recorded in the Kubernetes API: one key of the ConfigMap kube-system/mvproxy-drains', async () => {
    const kasB = apiserverNamed(tb.state(), 'kas-b');
    const got = await tb.kubectl(kasB.kubeconfig.direct, ['-n', 'kube-system', 'get', 'configmap', 'mvproxy-drains', '-o', 'json']);
    assert.equal(got.code, 0, got.stderr);
    const data = (JSON.parse(got.stdout) as { data: Record<string, string> }).data;
    assert.deepEqual(Object.keys(data), ['kas-a']);
    assert.match(data['kas-a'] ?? '', /^drained through mvproxy admin on .+ at \d{4}-/);
  });

  it('a drain written with kubectl alone is followed by the control plane, and so is its removal', async () => {
    const kasB = apiserverNamed(tb.state(), 'kas-b');
    const patch = (value: string | null) =>
      tb.kubectl(kasB.kubeconfig.direct, [
        '-n',
        'kube-system',
        'patch',
        'configmap',
        'mvproxy-drains',
        '--type',
        'merge',
        '-p',
        JSON.stringify({ data: { 'kas-b': value } }),
      ]);
    const draining = async (): Promise<string[]> =>
      (JSON.parse(await admin('status', '-o', 'json')) as Status__Output).apiservers.filter((a) => a.draining).map((a) => a.name);
    assert.equal((await patch('by hand')).code, 0);
    await eventually(async () => assert.deepEqual(await draining(), ['kas-a', 'kas-b']), 5000, 50);
    assert.equal((await patch(null)).code, 0);
    await eventually(async () => assert.deepEqual(await draining(), ['kas-a']), 5000, 50);
  });

  it('the drain outlives a restart of the control plane', async () => {
    await tb.sandbox.killControlPlane();
    await tb.sandbox.restartControlPlane();
    const status = await eventually(async () => {
      const s = JSON.parse(await admin('status', '-o', 'json')) as Status__Output;
      assert.ok(
        s.sidecars.every((sidecar) => sidecar.in_sync),
        JSON.stringify(s.sidecars),
      );
      return s;
    });
    assert.deepEqual(
      status.apiservers.map((a) => [a.name, a.draining]),
      [
        ['kas-a', true],
        ['kas-b', false],
      ],
    );
    assert.equal((await explain('kas-a', CONFIGMAPS)).destination, 'peers');
  });

  it('stopping the drained apiserver fails no request sent through its sidecar', async () => {
    const { failures, sent } = await loadWhile('kas-a', () => tb.sandbox.stopApiserver('kas-a'));
    assert.ok(sent > 10, `only ${sent} requests sent`);
    assert.deepEqual(failures, []);
  });

  it('while kas-a is down, kubectl through its sidecar still discovers everything and lists', async () => {
    const kubeconfig = apiserverNamed(tb.state(), 'kas-a').kubeconfig.sidecar ?? '';
    const cacheDir = freshKubectlCacheDir();
    const resources = await tb.kubectl(kubeconfig, ['api-resources', '--cache-dir', cacheDir, '-o', 'name']);
    assert.equal(resources.code, 0, resources.stderr);
    assert.match(resources.stdout, /^storageversionmigrations\.storagemigration\.k8s\.io$/m);
    const listed = await tb.kubectl(kubeconfig, ['get', 'configmaps', '-n', 'kube-system', '--cache-dir', cacheDir, '-o', 'name']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^configmap\/extension-apiserver-authentication$/m);
  });

  it('kas-a, started at v1.37.2 and undrained, serves its own requests again, including what it newly serves', async () => {
    await tb.sandbox.startApiserver('kas-a', { version: 'v1.37.2' });
    await admin('undrain', 'kas-a', '--wait');
    await eventually(async () => {
      const e = await explain('kas-a', MIGRATIONS);
      assert.equal(e.destination, 'local', e.reason);
    });
    assert.equal((await explain('kas-a', CONFIGMAPS)).destination, 'local');
    const res = await through('kas-a')('GET', MIGRATIONS);
    assert.equal(res.status, 200, res.body);
  });

  it('stopping kas-a again, without a drain, fails no request either: during its shutdown delay (lease deleted, /readyz failing) its traffic moves off', async () => {
    const { failures, sent } = await loadWhile('kas-a', () => tb.sandbox.stopApiserver('kas-a'));
    assert.ok(sent > 10, `only ${sent} requests sent`);
    assert.deepEqual(failures, []);
    const status = JSON.parse(await admin('status', '-o', 'json')) as Status__Output;
    assert.ok(
      status.apiservers.every((a) => !a.draining),
      'nobody drained it',
    );
  });

  it('admin drain of an apiserver nobody declared fails with the declared names, and changes nothing', async () => {
    await assert.rejects(admin('drain', 'kas-z'), (err: Error & { stderr?: string }) => {
      assert.match(err.stderr ?? '', /NOT_FOUND: no apiserver named "kas-z" \(declared: kas-a, kas-b\)/);
      return true;
    });
    const status = JSON.parse(await admin('status', '-o', 'json')) as Status__Output;
    assert.ok(status.apiservers.every((a) => !a.draining));
  });

  it('admin without a reachable socket says which socket it tried', async () => {
    await assert.rejects(
      execFileAsync(process.execPath, [CLI, 'admin', '--socket', '/nonexistent/admin.sock', 'status'], { timeout: 60_000 }),
      (err: Error & { stderr?: string }) => {
        assert.match(err.stderr ?? '', /cannot reach the control plane: \/nonexistent\/admin\.sock does not exist/);
        return true;
      },
    );
  });
});
