// The sandbox's kube-controller-manager follows its node, as kubeadm upgrades
// it: a stand-in command (a script that only sleeps) is enough to see the
// supervisor replace the process by the other release's binary.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { InstalledComponents } from '../../../../src/tools/install/index.js';
import { SandboxControllerManager } from '../../../../src/tools/sandbox/controllerManager.js';
import type { SandboxPki } from '../../../../src/tools/sandbox/pki.js';

const pair = (name: string) => ({ cert: `/pki/${name}.crt`, key: `/pki/${name}.key` });
const pki = {
  ca: pair('ca'),
  frontProxyCa: pair('front-proxy-ca'),
  controllerManagerClient: pair('controller-manager'),
  serviceAccount: { publicKey: '/pki/sa.pub', privateKey: '/pki/sa.key' },
} as unknown as SandboxPki;

/** Whether process `pid` is the stand-in at `path`: the shell that runs that script (and sleeps). */
const runs = (pid: number | undefined, path: string | undefined): boolean =>
  pid !== undefined && path !== undefined && readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(path);

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(20);
  }
}

describe('the sandbox upgrades kube-controller-manager with its node', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-kcm-'));
  const script = (version: string): string => {
    const file = join(dir, `kube-controller-manager-${version}`);
    writeFileSync(file, '#!/bin/sh\nwhile :; do sleep 1; done\n');
    chmodSync(file, 0o755);
    return file;
  };
  const components = { kubernetes: { v2: { kubeControllerManager: script('v2'), kubeadm: 'kubeadm-v2' } } } as unknown as InstalledComponents;
  /** kubeadm's render stands in as one flag naming the kubeadm that rendered it. */
  const render = async (kubeadm: string): Promise<string[]> => ['kube-controller-manager', `--cluster-name=${kubeadm}`];
  let cm: SandboxControllerManager;

  before(async () => {
    cm = new SandboxControllerManager({
      command: script('v1'),
      kubeadm: 'kubeadm-v1',
      render,
      version: 'v1',
      server: 'https://192.0.2.11:6443',
      node: 'kas-c',
      port: 41000,
      pki,
      dir,
      logsDir: dir,
    });
    await cm.start(() => undefined);
    await until(() => cm.pid !== undefined);
  });
  after(async () => {
    await cm.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('another node upgraded leaves it as it is', async () => {
    const pid = cm.pid;
    await cm.followNode('kas-a', 'v2', components, () => undefined);
    assert.deepEqual([cm.pid, cm.version, cm.state().restarts], [pid, 'v1', 0]);
  });

  it('its node upgraded replaces it at once by the new release', async () => {
    const old = cm.pid;
    await cm.followNode('kas-c', 'v2', components, () => undefined);
    await until(() => cm.pid !== undefined && cm.pid !== old && runs(cm.pid, components.kubernetes['v2']?.kubeControllerManager));
    assert.ok(runs(cm.pid, '--cluster-name=kubeadm-v2'), "with the new release's kubeadm render");
    assert.deepEqual([cm.version, cm.state().restarts], ['v2', 1]);
  });

  it('killed, it is started again at the release it runs (kubelet restarts at once the first time)', async () => {
    const old = cm.pid;
    await cm.kill();
    await until(() => cm.pid !== undefined && cm.pid !== old);
    assert.ok(runs(cm.pid, components.kubernetes['v2']?.kubeControllerManager));
    assert.equal(cm.state().restarts, 2);
  });
});
