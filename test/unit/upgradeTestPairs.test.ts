import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kubeApiserverProcess, validateApiserverSpecs } from '../../src/sandbox/apiservers.js';
import type { SandboxPki } from '../../src/sandbox/pki.js';
import { collectionPath } from '../../src/upgradeTest/objects.js';
import { DEFAULT_PAIR, VERSION_PAIRS, versionPair } from '../../src/upgradeTest/pairs.js';
import type { InstalledComponents } from '../../src/install/index.js';

describe('upgrade-test version pairs', () => {
  it('runs 1.36 -> 1.37 unless asked otherwise, each side at its release defaults', () => {
    const pair = versionPair(DEFAULT_PAIR);
    assert.deepEqual(
      [pair.older, pair.newer],
      [
        { version: 'v1.36.3', runtimeConfig: '', featureGates: '' },
        { version: 'v1.37.2', runtimeConfig: '', featureGates: '' },
      ],
    );
    assert.equal(collectionPath(pair.specs.storageversionmigrations), '/apis/storagemigration.k8s.io/v1/storageversionmigrations');
  });

  it('1.35 -> 1.36 turns storagemigration.k8s.io/v1beta1 on with the upgrade and leaves 1.35 at its defaults', () => {
    const pair = versionPair('1.35-1.36');
    assert.deepEqual(pair.older, { version: 'v1.35.4', runtimeConfig: '', featureGates: '' });
    assert.equal(pair.newer.version, 'v1.36.3');
    assert.equal(pair.newer.runtimeConfig, 'storagemigration.k8s.io/v1beta1=true');
    assert.equal(pair.newer.featureGates, 'StorageVersionMigrator=true');
    assert.equal(collectionPath(pair.specs.storageversionmigrations), '/apis/storagemigration.k8s.io/v1beta1/storageversionmigrations');
  });

  it('reaches every other resource the same way in every pair', () => {
    const [a, b] = Object.values(VERSION_PAIRS);
    assert.ok(a && b);
    for (const key of ['configmaps', 'deployments', 'jobs', 'widgets'] as const) assert.deepEqual(a.specs[key], b.specs[key]);
  });

  it('names the pairs it knows when asked for another', () => {
    assert.throws(() => versionPair('1.34-1.35'), /1\.36-1\.37, 1\.35-1\.36/);
  });
});

describe('an apiserver feature gate', () => {
  const pki = {
    ca: { cert: '/ca.crt', key: '/ca.key' },
    frontProxyCa: { cert: '/fp.crt', key: '/fp.key' },
    frontProxyClient: { cert: '/fpc.crt', key: '/fpc.key' },
    frontProxyClientName: 'front-proxy-client',
    serving: { 'kas-a': { cert: '/a.crt', key: '/a.key' } },
    serviceAccount: { publicKey: '/sa.pub', privateKey: '/sa.key' },
  } as unknown as SandboxPki;
  const args = (featureGates: string | undefined, upstreamPeerProxy: boolean): string[] =>
    kubeApiserverProcess({
      spec: { name: 'kas-a', version: 'v1.36.3', ...(featureGates ? { featureGates } : {}) },
      command: 'kube-apiserver',
      port: 6443,
      etcdPort: 2379,
      pki,
      dir: '/s',
      logsDir: '/s/logs',
      upstreamPeerProxy,
    }).args.filter((a) => a.startsWith('--feature-gates'));

  it("joins mode upstream's proxy gate and the apiserver's own into one --feature-gates", () => {
    assert.deepEqual(args('StorageVersionMigrator=true', true), ['--feature-gates=UnknownVersionInteroperabilityProxy=true,StorageVersionMigrator=true']);
  });

  it('passes no --feature-gates when there is none', () => {
    assert.deepEqual(args(undefined, false), []);
  });

  it('refuses a value that is not name=true|false pairs', () => {
    const components = { kubernetes: { 'v1.36.3': {} } } as unknown as InstalledComponents;
    assert.throws(() => validateApiserverSpecs([{ name: 'kas-a', version: 'v1.36.3', featureGates: 'X=true --v=9' }], components), /--feature-gates/);
  });
});
