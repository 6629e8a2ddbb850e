// Issue 29, item 2: the sandbox's kube-apiservers and kube-controller-manager
// run kubeadm's own command lines. Each running process's /proc/PID/cmdline is
// compared with a fresh `kubeadm init phase control-plane all --dry-run`
// render of its version (src/tools/sandbox/kubeadmRender.ts): apart from the
// named flags the sandbox substitutes (kubeadmCommands.ts), every flag is
// kubeadm's, with kubeadm's value, none missing, none added. And `kubeadm
// upgrade node phase control-plane --dry-run --patches` against the sandbox
// (with kube-system/kubeadm-config as kubeadm uploads it) keeps mvproxy's
// patch in the manifest it would write for the other version.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { componentPaths } from '../../src/tools/install/index.js';
import {
  APISERVER_SUBSTITUTED_FLAGS,
  CONTROLLER_MANAGER_SUBSTITUTED_FLAGS,
  parseKubeadmCommand,
  type SubstitutedFlags,
} from '../../src/tools/sandbox/kubeadmCommands.js';
import { renderControlPlaneManifests, staticPodCommand, writeRenderInputs } from '../../src/tools/sandbox/kubeadmRender.js';
import { startTestSandbox, apiserverNamed, type TestSandbox } from '../support/sandbox.js';

const run = promisify(execFile);
const kubeadmOf = (version: string): string => componentPaths({ kubernetesVersions: [version] }).kubernetes[version]?.kubeadm ?? '';

/** Every running process's arguments (argv[0] first), by /proc. */
function processes(): string[][] {
  const out: string[][] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      out.push(readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').slice(0, -1));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The one process running `program` (the binary itself, not a wrapper) with argument `arg`. */
function runningWith(program: string, arg: string): string[] {
  const found = processes().filter((args) => args[0] === program && args.includes(arg));
  assert.equal(found.length, 1, `processes running ${program} with ${arg}`);
  return found[0] ?? [];
}

/** The flags of a command that the sandbox does not substitute, sorted by name. */
function kubeadmsOwn(command: readonly string[], named: SubstitutedFlags): Array<[string, string]> {
  const flags = parseKubeadmCommand(command).flags;
  return [...flags].filter(([flag]) => !Object.hasOwn(named, flag)).sort(([a], [b]) => a.localeCompare(b));
}

/** The names of the flags a command line gives, in order, repeats included. */
const flagNames = (command: readonly string[]): string[] => command.slice(1).map((a) => a.slice(2, a.indexOf('=')));

for (const network of ['loopback', 'namespace'] as const) {
  describe(`the sandbox's control plane runs kubeadm's command lines (network ${network})`, () => {
    let tb: TestSandbox;

    before(async () => {
      tb = await startTestSandbox(
        [
          { name: 'kas-a', version: 'v1.36.3' },
          { name: 'kas-b', version: 'v1.37.2', endpointReconciler: 'lease' },
        ],
        { controllerManager: true, network },
      );
    });
    after(() => tb?.sandbox.down());

    for (const [name, version, endpointReconciler] of [
      ['kas-a', 'v1.36.3', 'none'],
      ['kas-b', 'v1.37.2', 'lease'],
    ] as const) {
      it(`${name} (${version}, endpoint reconciler ${endpointReconciler}) runs kubeadm's kube-apiserver flags, except the named ones`, async () => {
        const serving = tb.sandbox.pkiFiles().serving[name];
        assert.ok(serving);
        const binary = componentPaths({ kubernetesVersions: [version] }).kubernetes[version]?.kubeApiserver ?? '';
        const running = runningWith(binary, `--tls-cert-file=${serving.cert}`);
        const rendered = staticPodCommand((await renderControlPlaneManifests(kubeadmOf(version), { version, endpointReconciler })).apiserver, 'kube-apiserver');
        assert.deepEqual(kubeadmsOwn(running, APISERVER_SUBSTITUTED_FLAGS), kubeadmsOwn(rendered, APISERVER_SUBSTITUTED_FLAGS));
        assert.deepEqual(flagNames(running), [...new Set(flagNames(running))], 'no flag given twice');
      });
    }

    it("kube-controller-manager (v1.36.3) runs kubeadm's flags, except the named ones", async () => {
      const cm = tb.state().controllerManager;
      assert.ok(cm);
      const binary = componentPaths({ kubernetesVersions: ['v1.36.3'] }).kubernetes['v1.36.3']?.kubeControllerManager ?? '';
      const running = runningWith(binary, `--kubeconfig=${cm.kubeconfig}`);
      const manifests = await renderControlPlaneManifests(kubeadmOf('v1.36.3'), { version: 'v1.36.3', endpointReconciler: 'none' });
      const rendered = staticPodCommand(manifests.controllerManager, 'kube-controller-manager');
      assert.deepEqual(kubeadmsOwn(running, CONTROLLER_MANAGER_SUBSTITUTED_FLAGS), kubeadmsOwn(rendered, CONTROLLER_MANAGER_SUBSTITUTED_FLAGS));
      assert.deepEqual(flagNames(running), [...new Set(flagNames(running))], 'no flag given twice');
    });
  });
}

describe("kubeadm upgrade node keeps mvproxy's patch (v1.36.3 node, cluster configuration at v1.37.2)", () => {
  let tb: TestSandbox;
  let admin: string;

  before(async () => {
    tb = await startTestSandbox(
      [
        { name: 'kas-a', version: 'v1.36.3' },
        { name: 'kas-b', version: 'v1.37.2' },
      ],
      { controllerManager: true },
    );
    admin = apiserverNamed(tb.state(), 'kas-a').kubeconfig.direct;
  });
  after(() => tb?.sandbox.down());

  async function kubectlOk(args: string[], what: string): Promise<string> {
    const res = await tb.kubectl(admin, args);
    assert.equal(res.code, 0, `${what}: ${res.stderr}`);
    return res.stdout;
  }

  it('writes the v1.37.2 kube-apiserver manifest with the patch applied: off the public port, probes with it, certificate UIDs, no endpoint reconciler', async () => {
    const work = mkdtempSync(join(tmpdir(), 'mvproxy-kubeadm-upgrade-'));
    // The node as kubeadm finds it: its Node, its apiserver's mirror pod (kubeadm reads its advertised endpoint from the annotation).
    const current = (await renderControlPlaneManifests(kubeadmOf('v1.36.3'), { version: 'v1.36.3', endpointReconciler: 'none' })).apiserver;
    const pod = parse(current) as { spec: Record<string, unknown> };
    pod.spec['nodeName'] = 'kas-a';
    writeFileSync(join(work, 'node.json'), JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'kas-a' } }));
    writeFileSync(join(work, 'pod.json'), JSON.stringify(pod));
    await kubectlOk(['create', '-f', join(work, 'node.json')], 'the Node');
    const sa = await tb.kubectl(admin, ['create', 'serviceaccount', 'default', '-n', 'kube-system']);
    assert.ok(sa.code === 0 || /already exists/.test(sa.stderr), sa.stderr);
    await kubectlOk(['create', '-f', join(work, 'pod.json')], 'the mirror pod');
    // As `kubeadm upgrade apply v1.37.2` on the first node leaves kube-system/kubeadm-config (and kubelet-config, which kubeadm also reads).
    const { config } = await writeRenderInputs(join(work, 'upload'), { version: 'v1.37.2', endpointReconciler: 'none' });
    await run(kubeadmOf('v1.37.2'), ['init', 'phase', 'upload-config', 'all', '--config', config, '--kubeconfig', admin]);

    // The node's root as kubeadm reads it (--rootfs): its current manifest, admin.conf (certificates inlined) and mvproxy's patches.
    const root = join(work, 'root');
    mkdirSync(join(root, 'etc/kubernetes/manifests'), { recursive: true });
    mkdirSync(join(root, 'tmp/dryrun'), { recursive: true });
    writeFileSync(join(root, 'etc/kubernetes/manifests/kube-apiserver.yaml'), current);
    writeFileSync(join(root, 'etc/kubernetes/admin.conf'), await kubectlOk(['config', 'view', '--raw', '--flatten', '--minify'], 'admin.conf'));
    await writeRenderInputs(join(root, 'etc/mvproxy'), { version: 'v1.37.2', endpointReconciler: 'none' });

    const upgrade = await run(
      'unshare',
      [
        '--uts',
        'sh',
        '-c',
        'hostname kas-a && exec "$@"',
        'sh',
        kubeadmOf('v1.37.2'),
        '--rootfs',
        root,
        'upgrade',
        'node',
        'phase',
        'control-plane',
        '--dry-run',
        '--patches',
        '/etc/mvproxy/patches',
        '--kubeconfig',
        '/etc/kubernetes/admin.conf',
      ],
      { env: { ...process.env, KUBEADM_UPGRADE_DRYRUN_DIR: '/tmp/dryrun' }, maxBuffer: 16 << 20 },
    );
    const printed = upgrade.stdout.split(/\[dryrun\] Would write file "([^"]+)" with content:\n/);
    const at = printed.indexOf('/etc/kubernetes/manifests/kube-apiserver.yaml');
    assert.ok(at > 0, `kubeadm printed no kube-apiserver manifest:\n${upgrade.stdout}\n${upgrade.stderr}`);
    const upgraded = parse(printed[at + 1] ?? '') as {
      spec: { containers: Array<{ image: string; command: string[]; ports: Array<{ name: string; containerPort: number }> }> };
    };
    const c = upgraded.spec.containers[0];
    assert.ok(c);
    assert.equal(c.image, 'registry.k8s.io/kube-apiserver:v1.37.2');
    const flags = parseKubeadmCommand(c.command).flags;
    assert.equal(flags.get('secure-port'), '6444', 'the last --secure-port, the patch’s');
    assert.equal(flags.get('requestheader-uid-headers'), 'X-Remote-Uid');
    assert.equal(flags.get('endpoint-reconciler-type'), 'none');
    assert.deepEqual(c.ports, [{ name: 'probe-port', containerPort: 6444, protocol: 'TCP' }]);
  });
});
