// Issue 2: the sandbox is a real mixed-version control plane.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { httpsGet } from '../../src/util/https.js';
import { createServer, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { envoyAdminGet } from '../../src/util/envoyAdmin.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxState } from '../../src/tools/sandbox/state.js';
import { startTestSandbox, eventually, AGGREGATED_DISCOVERY_NOPEER_ACCEPT, type TestSandbox } from '../support/sandbox.js';
import type { SandboxApiserverState } from '../../src/tools/sandbox/state.js';

const execFileAsync = promisify(execFile);
/** The tools' command line, mvproxy-dev (its sandbox runs the product's mvproxy serve). */
const cli = fileURLToPath(new URL('../../src/tools/cli/main.js', import.meta.url));

describe('sandbox with kube-apiserver v1.36.3 and v1.37.2 sharing one etcd', () => {
  let tb: TestSandbox;
  let old: SandboxApiserverState;
  let current: SandboxApiserverState;

  before(async () => {
    tb = await startTestSandbox([
      { name: 'kas-a', version: 'v1.36.3' },
      { name: 'kas-b', version: 'v1.37.2' },
    ]);
    [old, current] = tb.state().apiservers as [SandboxApiserverState, SandboxApiserverState];
  });
  after(() => tb?.sandbox.down());

  const adminGet = (a: SandboxApiserverState, path: string, headers: Record<string, string> = {}) => {
    const s = tb.state();
    return httpsGet(a.direct + path, { ca: s.ca, ...s.clientCerts.admin }, headers);
  };

  it('each apiserver reports its real release on /version', async () => {
    for (const a of [old, current]) {
      const res = await adminGet(a, '/version');
      assert.equal(res.status, 200);
      assert.equal((JSON.parse(res.body) as { gitVersion: string }).gitVersion, a.version);
    }
  });

  it('only v1.37.2 lists storagemigration.k8s.io/v1 in its own aggregated discovery', async () => {
    const groupVersions = async (a: SandboxApiserverState): Promise<string[]> => {
      const res = await adminGet(a, '/apis', { accept: AGGREGATED_DISCOVERY_NOPEER_ACCEPT });
      assert.equal(res.status, 200);
      const doc = JSON.parse(res.body) as { kind: string; items: { metadata: { name: string }; versions: { version: string }[] }[] };
      assert.equal(doc.kind, 'APIGroupDiscoveryList');
      return doc.items.flatMap((g) => g.versions.map((v) => `${g.metadata.name}/${v.version}`));
    };
    assert.ok((await groupVersions(current)).includes('storagemigration.k8s.io/v1'));
    assert.ok(!(await groupVersions(old)).includes('storagemigration.k8s.io/v1'));
  });

  it('lays the nodes out as kubeadm does: each apiserver on its node address at 6444, its sidecar at 6443', () => {
    const s = tb.state();
    assert.equal(s.network?.mode, 'namespace');
    assert.deepEqual(
      s.apiservers.map((a) => [a.nodeAddress, a.inNamespace?.direct, a.inNamespace?.sidecar]),
      [
        ['192.0.2.11', 'https://192.0.2.11:6444', 'https://192.0.2.11:6443'],
        ['192.0.2.12', 'https://192.0.2.12:6444', 'https://192.0.2.12:6443'],
      ],
    );
  });

  it("the kubernetes Service lists every node's sidecar, published by mvproxy's control plane", async () => {
    await eventually(async () => {
      const res = await adminGet(old, '/api/v1/namespaces/default/endpoints/kubernetes');
      assert.equal(res.status, 200, res.body);
      const subsets = (JSON.parse(res.body) as { subsets?: { addresses?: { ip: string }[]; ports?: { port: number }[] }[] }).subsets ?? [];
      const listed = subsets.flatMap((e) => (e.addresses ?? []).flatMap((a) => (e.ports ?? []).map((p) => `${a.ip}:${p.port}`)));
      assert.deepEqual(listed.sort(), ['192.0.2.11:6443', '192.0.2.12:6443']);
    }, 30_000);
  });

  it('an object created through one apiserver is read through the other', async () => {
    const created = await tb.kubectl(old.kubeconfig.direct, ['create', 'configmap', 'shared-etcd-probe', '-n', 'default', '--from-literal=k=v']);
    assert.equal(created.code, 0, created.stderr);
    const read = await tb.kubectl(current.kubeconfig.direct, ['get', 'configmap', 'shared-etcd-probe', '-n', 'default', '-o', 'jsonpath={.data.k}']);
    assert.equal(read.code, 0, read.stderr);
    assert.equal(read.stdout, 'v');
  });

  it('both apiservers hold identity leases with distinct names', async () => {
    const names = await eventually(async () => {
      const res = await tb.kubectl(current.kubeconfig.direct, [
        'get',
        'leases',
        '-n',
        'kube-system',
        '-l',
        'apiserver.kubernetes.io/identity=kube-apiserver',
        '-o',
        'jsonpath={range .items[*]}{.metadata.labels.kubernetes\\.io/hostname}={.metadata.name}{"\\n"}{end}',
      ]);
      assert.equal(res.code, 0, res.stderr);
      const byHost = new Map(
        res.stdout
          .trim()
          .split('\n')
          .map((l) => l.split('=') as [string, string]),
      );
      assert.ok(byHost.has('kas-a') && byHost.has('kas-b'), `leases: ${res.stdout}`);
      return [byHost.get('kas-a'), byHost.get('kas-b')];
    });
    assert.notEqual(names[0], names[1]);
  });

  it('the admin certificate authenticates as a member of system:masters', async () => {
    const res = await tb.kubectl(old.kubeconfig.direct, ['auth', 'whoami', '-o', 'json']);
    assert.equal(res.code, 0, res.stderr);
    const review = JSON.parse(res.stdout) as { status: { userInfo: { username: string; groups: string[] } } };
    assert.equal(review.status.userInfo.username, 'mvproxy-admin');
    assert.ok(review.status.userInfo.groups.includes('system:masters'));
  });

  it('the ordinary user certificate is only itself and is forbidden to list secrets', async () => {
    const who = await tb.kubectl(old.kubeconfig.direct, ['auth', 'whoami', '-o', 'json'], { user: 'user' });
    assert.equal(who.code, 0, who.stderr);
    const review = JSON.parse(who.stdout) as { status: { userInfo: { username: string; groups: string[] } } };
    assert.equal(review.status.userInfo.username, 'alice');
    assert.deepEqual(review.status.userInfo.groups, ['system:authenticated']);
    const list = await tb.kubectl(current.kubeconfig.direct, ['get', 'secrets', '-n', 'default'], { user: 'user' });
    assert.notEqual(list.code, 0);
    assert.match(list.stderr, /forbidden/i);
  });

  it("the control plane runs with deploy/rbac.yaml's rights and no more", async () => {
    const canI = async (...args: string[]): Promise<string> =>
      (await tb.kubectl(current.kubeconfig.direct, ['auth', 'can-i', '--as', 'mvproxy-control-plane', ...args])).stdout.trim();
    assert.equal(await canI('watch', 'leases.coordination.k8s.io', '-n', 'kube-system'), 'yes');
    assert.equal(await canI('list', 'customresourcedefinitions.apiextensions.k8s.io'), 'yes');
    assert.equal(await canI('patch', 'configmap/mvproxy-drains', '-n', 'kube-system'), 'yes');
    assert.equal(await canI('patch', 'configmap/kube-root-ca.crt', '-n', 'kube-system'), 'no');
    assert.equal(await canI('list', 'secrets', '-n', 'kube-system'), 'no');
    assert.equal(await canI('update', 'leases.coordination.k8s.io', '-n', 'kube-system'), 'no');
    const kubeconfig = readFileSync(join(tb.state().dir, 'kubeconfig-mvproxy-control-plane'), 'utf8');
    assert.match(kubeconfig, /control-plane-client\.crt/);
  });

  it("each sidecar's Envoy admin interface is an owner-only Unix socket, not a port", async () => {
    for (const a of tb.state().apiservers) {
      const socket = a.sidecarAdminSocket ?? '';
      const stat = statSync(socket);
      assert.ok(stat.isSocket(), socket);
      assert.equal(stat.mode & 0o777, 0o600, socket);
      assert.equal((await envoyAdminGet(socket, '/ready')).trim(), 'LIVE');
    }
  });
});

/** Processes whose command line mentions `dir`: what a sandbox in `dir` could have left behind. */
async function processesUsing(dir: string): Promise<string[]> {
  const { stdout } = await execFileAsync('ps', ['-eo', 'pid=,args=']);
  return stdout.split('\n').filter((line) => line.includes(dir) && !line.includes('ps -eo'));
}

describe('sandbox command errors', () => {
  it('a port already taken is named in the error and nothing is left running', async () => {
    const blocker = createServer().listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const port = (blocker.address() as AddressInfo).port;
    const dir = mkdtempSync(join(tmpdir(), 'mvproxy-port-'));
    try {
      await assert.rejects(
        execFileAsync(process.execPath, [cli, 'sandbox', 'up', '--apiserver', 'v1.37.2', '--dir', dir, '--base-port', String(port)]),
        (err: { stderr: string }) => {
          assert.match(err.stderr, new RegExp(`port ${port} for etcd \\(client\\) is not available`));
          return true;
        },
      );
      assert.deepEqual(await processesUsing(dir), []);
    } finally {
      blocker.close();
    }
  });

  it('a component that dies on start fails with the tail of its log and nothing is left running', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mvproxy-dies-'));
    await assert.rejects(
      execFileAsync(process.execPath, [cli, 'sandbox', 'up', '--apiserver', 'v1.37.2:no.such.group/v1=true', '--dir', dir]),
      (err: { stderr: string }) => {
        assert.match(err.stderr, /kube-apiserver kas-a failed to start: exited with code/);
        assert.match(err.stderr, /--- last lines of .*kas-a\.log ---/);
        assert.match(err.stderr, /no\.such\.group/);
        return true;
      },
    );
    assert.deepEqual(await processesUsing(dir), []);
  });

  it('up --detach returns once ready and down stops every process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mvproxy-detach-'));
    const up = await execFileAsync(process.execPath, [cli, 'sandbox', 'up', '--detach', '--apiserver', 'v1.37.2', '--dir', dir], { timeout: 180_000 });
    const statePath = up.stdout.trim();
    const state = JSON.parse(readFileSync(statePath, 'utf8')) as SandboxState;
    const a = state.apiservers[0];
    assert.ok(a?.sidecar);
    const ready = await httpsGet(`${a.direct}/readyz`, { ca: state.ca, ...state.clientCerts.admin });
    assert.equal(ready.status, 200);
    assert.ok((await processesUsing(dir)).length >= 4, 'etcd, apiserver, control plane and sidecar are running');
    await execFileAsync(process.execPath, [cli, 'sandbox', 'down', '--dir', dir], { timeout: 120_000 });
    assert.deepEqual(await processesUsing(dir), []);
  });

  it('an unknown release fails fast naming the releases that can be used', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mvproxy-unknown-release-'));
    const started = Date.now();
    await assert.rejects(execFileAsync(process.execPath, [cli, 'sandbox', 'up', '--apiserver', 'v1.99.0', '--dir', dir]), (err: { stderr: string }) => {
      assert.match(err.stderr, /v1\.99\.0/);
      assert.match(err.stderr, /v1\.37\.2/);
      return true;
    });
    assert.ok(Date.now() - started < 60_000);
  });

  it('a malformed release is rejected before anything starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mvproxy-malformed-release-'));
    await assert.rejects(execFileAsync(process.execPath, [cli, 'sandbox', 'up', '--apiserver', 'latest', '--dir', dir]), (err: { stderr: string }) => {
      assert.match(err.stderr, /latest/);
      return true;
    });
  });
});
