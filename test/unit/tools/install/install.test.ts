import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  envoyPaths,
  etcdPaths,
  goWorkspaceDir,
  installFileAtomically,
  kubernetesPaths,
  logPath,
  removeStaleTemps,
  resolveCacheRoot,
} from '../../../../src/tools/install/cache.js';
import {
  countGoBuildLine,
  etcdBuildGoMod,
  goDirective,
  godebugSettings,
  kubernetesBuildGoMod,
  kubernetesLdflags,
  stagingModules,
  withBuildVcsOff,
} from '../../../../src/tools/install/gomod.js';
import { componentPaths, ensureComponents, ensureEnvoyOnly } from '../../../../src/tools/install/index.js';
import { tempSiblingPath } from '../../../../src/util/atomicWrite.js';
import { formatDuration } from '../../../../src/tools/install/progress.js';
import { commandFailureMessage, formatCommand, LineSplitter, runLogged, Tail, versionLine } from '../../../../src/tools/install/run.js';
import { assertPublished, parseEnvoyVersion, parseEtcdVersion, parseKubernetesVersion, suggestReleases } from '../../../../src/tools/install/versions.js';

// Trimmed from k8s.io/kubernetes v1.37.2's go.mod: the parts the generator reads.
const SAMPLE_KUBERNETES_GO_MOD = `// This is a generated file. Do not edit directly.

module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
	github.com/blang/semver/v4 v4.0.0
	k8s.io/api v0.0.0
	k8s.io/apimachinery v0.0.0
)

replace (
	github.com/example/forked => github.com/example/forked v1.2.3
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apiextensions-apiserver => ./staging/src/k8s.io/apiextensions-apiserver
	k8s.io/apimachinery => ./staging/src/k8s.io/apimachinery
	k8s.io/kube-aggregator => ./staging/src/k8s.io/kube-aggregator
	k8s.io/mismatched => ./staging/src/k8s.io/other
)
`;

const V1_37_2 = parseKubernetesVersion('v1.37.2');

const tempDirs: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'mvproxy-install-test-'));
  tempDirs.push(dir);
  return dir;
}

after(async () => {
  for (const dir of tempDirs) await fs.rm(dir, { recursive: true, force: true });
});

describe('parseKubernetesVersion', () => {
  it('accepts a release and derives the staging module version', () => {
    assert.deepEqual(parseKubernetesVersion('v1.37.2'), { version: 'v1.37.2', minor: 37, patch: 2, stagingVersion: 'v0.37.2' });
  });

  const garbage = ['1.37', 'v1.37', '1.37.2', 'latest', 'v1.37.2; rm -rf', 'v1.37.2-rc.0', 'v2.0.0', 'v1.037.2', ' v1.37.2', ''];
  for (const bad of garbage) {
    it(`rejects ${JSON.stringify(bad)}`, () => {
      assert.throws(() => parseKubernetesVersion(bad), /invalid Kubernetes version/);
    });
  }
});

describe('parseEtcdVersion and parseEnvoyVersion', () => {
  it('etcd: strips the v for what etcd --version prints', () => {
    assert.deepEqual(parseEtcdVersion('v3.6.16'), { version: 'v3.6.16', bare: '3.6.16' });
  });

  it('etcd: rejects a version without the v or outside 3.x', () => {
    assert.throws(() => parseEtcdVersion('3.6.16'), /invalid etcd version/);
    assert.throws(() => parseEtcdVersion('v2.3.8'), /invalid etcd version/);
  });

  it('envoy: accepts a plain release', () => {
    assert.equal(parseEnvoyVersion('1.40.0'), '1.40.0');
  });

  it('envoy: rejects a v prefix or a pip requirement specifier', () => {
    assert.throws(() => parseEnvoyVersion('v1.40.0'), /invalid Envoy version/);
    assert.throws(() => parseEnvoyVersion('>=1.40'), /invalid Envoy version/);
  });
});

describe('suggestReleases and assertPublished', () => {
  const published = ['v1.34.0', 'v1.35.4', 'v1.36.1', 'v1.36.3', 'v1.37.2', 'v1.38.0-beta.0', 'v1.4.0'];

  it('suggests the stable patches of the newest three minors, newest first', () => {
    assert.deepEqual(suggestReleases(published), ['v1.37.2', 'v1.36.3', 'v1.36.1', 'v1.35.4']);
  });

  it('suggests at most the given number of releases', () => {
    assert.deepEqual(suggestReleases(published, 3, 2), ['v1.37.2', 'v1.36.3']);
  });

  it('passes a published release', () => {
    assert.doesNotThrow(() => assertPublished('Kubernetes', 'v1.37.2', published));
  });

  it('names the usable releases when the requested one is not published', () => {
    assert.throws(
      () => assertPublished('Kubernetes', 'v1.37.9', published),
      (err: Error) => err.message.includes('v1.37.9') && err.message.includes('v1.37.2, v1.36.3, v1.36.1, v1.35.4'),
    );
  });
});

describe('go.mod generation', () => {
  it('finds only the replaces that point a k8s.io module at its own staging folder', () => {
    assert.deepEqual(stagingModules(SAMPLE_KUBERNETES_GO_MOD), [
      'k8s.io/api',
      'k8s.io/apiextensions-apiserver',
      'k8s.io/apimachinery',
      'k8s.io/kube-aggregator',
    ]);
  });

  it('reads the single-line replace form too', () => {
    assert.deepEqual(stagingModules('replace k8s.io/api => ./staging/src/k8s.io/api\n'), ['k8s.io/api']);
  });

  it('reads the go directive', () => {
    assert.equal(goDirective(SAMPLE_KUBERNETES_GO_MOD), '1.26.0');
    assert.equal(goDirective('module x\n'), undefined);
  });

  it('reads godebug settings in line and block form', () => {
    assert.deepEqual(godebugSettings(SAMPLE_KUBERNETES_GO_MOD), ['default=go1.26']);
    assert.deepEqual(godebugSettings('godebug (\n\tdefault=go1.25\n\tpanicnil=1 // why\n)\n'), ['default=go1.25', 'panicnil=1']);
  });

  it('writes a kubernetes build go.mod that requires the release and replaces each staging module by its v0 version', () => {
    assert.equal(
      kubernetesBuildGoMod(SAMPLE_KUBERNETES_GO_MOD, V1_37_2),
      [
        'module mvproxy.local/k8sbuild',
        '',
        'go 1.26.0',
        '',
        'godebug (',
        '\tdefault=go1.26',
        ')',
        '',
        'require k8s.io/kubernetes v1.37.2',
        '',
        'replace (',
        '\tk8s.io/api => k8s.io/api v0.37.2',
        '\tk8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.37.2',
        '\tk8s.io/apimachinery => k8s.io/apimachinery v0.37.2',
        '\tk8s.io/kube-aggregator => k8s.io/kube-aggregator v0.37.2',
        ')',
        '',
      ].join('\n'),
    );
  });

  it('refuses a kubernetes go.mod without staging replaces', () => {
    assert.throws(() => kubernetesBuildGoMod('module k8s.io/kubernetes\n\ngo 1.26.0\n', V1_37_2), /staging/);
  });

  it('writes an etcd build go.mod requiring the server module', () => {
    assert.equal(
      etcdBuildGoMod('module go.etcd.io/etcd/server/v3\n\ngo 1.25.0\n\ntoolchain go1.25.5\n', parseEtcdVersion('v3.6.16')),
      'module mvproxy.local/etcdbuild\n\ngo 1.25.0\n\nrequire go.etcd.io/etcd/server/v3 v3.6.16\n',
    );
  });
});

describe('go flags', () => {
  it('stamps the version into both component-base and client-go', () => {
    const flags = kubernetesLdflags(V1_37_2);
    for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
      assert.ok(flags.includes(`-X ${pkg}.gitVersion=v1.37.2`), flags);
      assert.ok(flags.includes(`-X ${pkg}.gitMajor=1`), flags);
      assert.ok(flags.includes(`-X ${pkg}.gitMinor=37`), flags);
    }
  });

  it('adds -buildvcs=false to GOFLAGS, keeping what is there', () => {
    assert.equal(withBuildVcsOff(''), '-buildvcs=false');
    assert.equal(withBuildVcsOff('-mod=mod'), '-mod=mod -buildvcs=false');
  });

  it('leaves an explicit -buildvcs setting alone', () => {
    assert.equal(withBuildVcsOff('-buildvcs=true -x'), '-buildvcs=true -x');
  });

  it('counts module downloads and compiled packages from go build -v output', () => {
    const counts = { downloads: 0, packages: 0 };
    for (const line of [
      'go: downloading k8s.io/api v0.37.2',
      'go: finding module for package x',
      'k8s.io/apimachinery/pkg/util/sets',
      'github.com/spf13/pflag',
      '# k8s.io/some/pkg',
      'some warning: text with spaces',
    ]) {
      countGoBuildLine(counts, line);
    }
    assert.deepEqual(counts, { downloads: 1, packages: 2 });
  });
});

describe('cache paths', () => {
  it('honours MVPROXY_CACHE', () => {
    assert.equal(resolveCacheRoot({ MVPROXY_CACHE: '/var/tmp/mvp' }, '/home/u'), '/var/tmp/mvp');
  });

  it('makes a relative MVPROXY_CACHE absolute', () => {
    assert.equal(resolveCacheRoot({ MVPROXY_CACHE: 'rel/cache' }, '/home/u'), path.resolve('rel/cache'));
  });

  it('defaults to ~/.cache/mvproxy when MVPROXY_CACHE is unset or empty', () => {
    assert.equal(resolveCacheRoot({}, '/home/u'), '/home/u/.cache/mvproxy');
    assert.equal(resolveCacheRoot({ MVPROXY_CACHE: '' }, '/home/u'), '/home/u/.cache/mvproxy');
  });

  it('lays out components by name and version', () => {
    assert.equal(envoyPaths('/c', '1.40.0').binary, '/c/envoy/1.40.0/envoy/_bin/envoy');
    assert.equal(etcdPaths('/c', 'v3.6.16').binary, '/c/etcd/v3.6.16/etcd');
    assert.deepEqual(kubernetesPaths('/c', 'v1.37.2'), {
      dir: '/c/kubernetes/v1.37.2',
      kubeApiserver: '/c/kubernetes/v1.37.2/kube-apiserver',
      kubectl: '/c/kubernetes/v1.37.2/kubectl',
      kubeControllerManager: '/c/kubernetes/v1.37.2/kube-controller-manager',
      marker: '/c/kubernetes/v1.37.2/.ok',
    });
    assert.equal(goWorkspaceDir('/c', 'kubernetes', 'v1.37.2'), '/c/gobuild/kubernetes-v1.37.2');
    assert.equal(logPath('/c', 'etcd-v3.6.16'), '/c/logs/etcd-v3.6.16.log');
  });

  it('componentPaths resolves every binary under the given cache without I/O', () => {
    const paths = componentPaths({ kubernetesVersions: ['v1.36.3'], cacheRoot: '/c' });
    assert.deepEqual(paths, {
      envoy: '/c/envoy/1.40.0/envoy/_bin/envoy',
      etcd: '/c/etcd/v3.6.16/etcd',
      kubernetes: {
        'v1.36.3': {
          kubeApiserver: '/c/kubernetes/v1.36.3/kube-apiserver',
          kubectl: '/c/kubernetes/v1.36.3/kubectl',
          kubeControllerManager: '/c/kubernetes/v1.36.3/kube-controller-manager',
          kubeadm: '/c/kubernetes/v1.36.3/kubeadm',
        },
      },
    });
  });
});

describe('atomic install', () => {
  it('leaves neither the final binary nor a temp file when the build fails', async () => {
    const dir = await tempDir();
    const final = path.join(dir, 'etcd');
    await assert.rejects(
      installFileAtomically(
        final,
        async (tmp) => {
          await fs.writeFile(tmp, 'half a binary', { mode: 0o755 });
          throw new Error('build killed');
        },
        async () => 'unused',
      ),
      /build killed/,
    );
    assert.deepEqual(await fs.readdir(dir), []);
  });

  it('leaves nothing behind when the built binary fails verification', async () => {
    const dir = await tempDir();
    const final = path.join(dir, 'etcd');
    await assert.rejects(
      installFileAtomically(
        final,
        (tmp) => fs.writeFile(tmp, 'wrong version', { mode: 0o755 }),
        async () => {
          throw new Error('expected etcd Version: 3.6.16');
        },
      ),
      /3\.6\.16/,
    );
    assert.deepEqual(await fs.readdir(dir), []);
  });

  it('renames the verified binary into place', async () => {
    const dir = await tempDir();
    const final = path.join(dir, 'etcd');
    const result = await installFileAtomically(
      final,
      (tmp) => fs.writeFile(tmp, '#!/bin/sh\n', { mode: 0o755 }),
      async (binary) => `verified ${path.basename(binary).startsWith('.tmp-') ? 'temp' : 'final'}`,
    );
    assert.equal(result, 'verified temp');
    assert.deepEqual(await fs.readdir(dir), ['etcd']);
  });

  it('sweeps temp entries of dead installers, keeping its own and finished ones', async () => {
    const dir = await tempDir();
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const deadTemp = path.basename(tempSiblingPath(path.join(dir, 'etcd'), dead));
    const ownTemp = path.basename(tempSiblingPath(path.join(dir, 'etcd')));
    for (const name of [deadTemp, ownTemp, 'etcd', '.ok']) await fs.writeFile(path.join(dir, name), '');
    await fs.mkdir(path.join(dir, `.tmp-1.40.0-${dead}`));
    await removeStaleTemps(dir);
    assert.deepEqual((await fs.readdir(dir)).sort(), ['.ok', ownTemp, 'etcd'].sort());
  });
});

describe('warm run', () => {
  it('returns cached components without starting any child process', async () => {
    const cacheRoot = await tempDir();
    const expected = componentPaths({ kubernetesVersions: ['v1.37.2'], cacheRoot });
    const kube = kubernetesPaths(cacheRoot, 'v1.37.2');
    const binaries = [expected.envoy, expected.etcd, ...Object.values(expected.kubernetes['v1.37.2'] ?? {})];
    for (const b of binaries) {
      await fs.mkdir(path.dirname(b), { recursive: true });
      await fs.writeFile(b, '', { mode: 0o755 });
    }
    for (const marker of [envoyPaths(cacheRoot, '1.40.0').marker, etcdPaths(cacheRoot, 'v3.6.16').marker, kube.marker]) {
      await fs.writeFile(marker, '{}');
    }
    // With no PATH, any go/pip/binary invocation would fail the call.
    const savedPath = process.env['PATH'];
    process.env['PATH'] = '';
    try {
      const lines: string[] = [];
      const got = await ensureComponents({ kubernetesVersions: ['v1.37.2'], cacheRoot, log: (l) => lines.push(l) });
      assert.deepEqual(got, expected);
      assert.deepEqual(lines, []);
    } finally {
      process.env['PATH'] = savedPath;
    }
  });

  it('rejects a bad version before touching the cache', async () => {
    await assert.rejects(ensureComponents({ kubernetesVersions: ['v1.37.2; rm -rf'], cacheRoot: '/nonexistent/mvproxy-cache' }), /invalid Kubernetes version/);
  });

  it('Envoy alone (install --only envoy) needs nothing else in the cache and no module proxy', async () => {
    const cacheRoot = await tempDir();
    const envoy = envoyPaths(cacheRoot, '1.40.0');
    await fs.mkdir(path.dirname(envoy.binary), { recursive: true });
    await fs.writeFile(envoy.binary, '', { mode: 0o755 });
    await fs.writeFile(envoy.marker, '{}');
    const savedPath = process.env['PATH'];
    process.env['PATH'] = '';
    try {
      const lines: string[] = [];
      assert.equal(await ensureEnvoyOnly({ cacheRoot, log: (l) => lines.push(l) }), envoy.binary);
      assert.deepEqual(lines, []);
    } finally {
      process.env['PATH'] = savedPath;
    }
  });
});

describe('child process helpers', () => {
  it('formats a command so it can be pasted into a shell', () => {
    assert.equal(formatCommand('go', ['build', '-ldflags', '-s -w', "it's"]), `go build -ldflags '-s -w' 'it'\\''s'`);
  });

  it('splits output into lines across chunks, treating \\r as a break', () => {
    const s = new LineSplitter();
    assert.deepEqual(s.push('a\nb'), ['a']);
    assert.deepEqual(s.push('c\r50%\r100%\r\nd'), ['bc', '50%', '100%']);
    assert.deepEqual(s.flush(), ['d']);
  });

  it('keeps a UTF-8 character split across chunks whole', () => {
    const s = new LineSplitter();
    const bytes = Buffer.from('é\n');
    assert.deepEqual(s.push(bytes.subarray(0, 1)), []);
    assert.deepEqual(s.push(bytes.subarray(1)), ['é']);
  });

  it('keeps only the last non-empty lines', () => {
    const t = new Tail(2);
    for (const l of ['1', '', '2', '3']) t.push(l);
    assert.deepEqual(t.lines(), ['2', '3']);
  });

  it('failure message names the command, the output tail and the log', () => {
    const msg = commandFailureMessage({
      command: 'go build x',
      reason: 'exit code 1',
      tail: ['boom'],
      logFile: '/c/logs/x.log',
    });
    assert.match(msg, /command failed \(exit code 1\): go build x/);
    assert.match(msg, /\| boom/);
    assert.match(msg, /full log: \/c\/logs\/x\.log/);
  });

  it('runLogged throws with the output tail and writes the full log', async () => {
    const dir = await tempDir();
    const logFile = path.join(dir, 'logs', 'fail.log');
    const script = 'for (let i = 0; i < 30; i++) console.error("line " + i); process.exit(3)';
    await assert.rejects(runLogged(process.execPath, ['-e', script], { logFile }), (err: Error) => {
      const m = err.message;
      return /exit code 3/.test(m) && m.includes('| line 29') && !m.includes('| line 9\n') && m.includes(logFile);
    });
    const log = await fs.readFile(logFile, 'utf8');
    assert.ok(log.includes('line 0') && log.includes('line 29'));
  });

  it('finds the version line in a binary output', () => {
    const output = 'Client Version: v1.37.2\nKustomize Version: v5.7.1\n';
    assert.equal(versionLine(output, 'Client Version: v1.37.2'), 'Client Version: v1.37.2');
    assert.equal(versionLine('Kubernetes v0.0.0-master', 'Kubernetes v1.37.2'), undefined);
  });
});

describe('formatDuration', () => {
  it('shows seconds, then minutes and seconds, then hours and minutes', () => {
    assert.equal(formatDuration(4_400), '4s');
    assert.equal(formatDuration(125_000), '2m05s');
    assert.equal(formatDuration(3_725_000), '1h02m');
  });
});
