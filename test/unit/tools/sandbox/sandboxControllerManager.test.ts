import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kubeControllerManagerArgs, kubeletRestartDelayMs } from '../../../../src/tools/sandbox/controllerManager.js';
import type { SandboxPki } from '../../../../src/tools/sandbox/pki.js';
import { KUBEADM_CONTROLLER_MANAGER_COMMAND } from '../../../support/kubeadmRenderFixture.js';

const pair = (name: string) => ({ cert: `/pki/${name}.crt`, key: `/pki/${name}.key` });
const pki = {
  ca: pair('ca'),
  frontProxyCa: pair('front-proxy-ca'),
  serviceAccount: { publicKey: '/pki/sa.pub', privateKey: '/pki/sa.key' },
} as unknown as SandboxPki;
const args = kubeControllerManagerArgs({ kubeadm: KUBEADM_CONTROLLER_MANAGER_COMMAND, kubeconfig: '/s/kubeconfig-kube-controller-manager', port: 41000, pki });
const flag = (name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

describe('the sandbox runs kube-controller-manager as kubeadm does', () => {
  it("passes every flag of kubeadm's render, in kubeadm's order, plus its port", () => {
    const names = args.map((a) => a.slice(2, a.indexOf('=')));
    const rendered = KUBEADM_CONTROLLER_MANAGER_COMMAND.slice(1).map((a) => a.slice(2, a.indexOf('=')));
    assert.deepEqual(names, [...rendered, 'secure-port']);
  });

  it('runs the controllers kubeadm enables: the defaults plus bootstrapsigner and tokencleaner', () => {
    assert.equal(flag('controllers'), '*,bootstrapsigner,tokencleaner');
  });

  it('gives each controller its own service account, as kubeadm does', () => {
    assert.equal(flag('use-service-account-credentials'), 'true');
  });

  it('uses one kubeconfig for its API calls, authentication and authorization', () => {
    assert.equal(flag('kubeconfig'), '/s/kubeconfig-kube-controller-manager');
    assert.equal(flag('authentication-kubeconfig'), flag('kubeconfig'));
    assert.equal(flag('authorization-kubeconfig'), flag('kubeconfig'));
  });

  it('signs with the cluster CA and service-account key, as kubeadm points it at them', () => {
    assert.equal(flag('cluster-signing-cert-file'), '/pki/ca.crt');
    assert.equal(flag('cluster-signing-key-file'), '/pki/ca.key');
    assert.equal(flag('root-ca-file'), '/pki/ca.crt');
    assert.equal(flag('service-account-private-key-file'), '/pki/sa.key');
    assert.equal(flag('requestheader-client-ca-file'), '/pki/front-proxy-ca.crt');
  });

  it('listens on loopback only, on the port it is given', () => {
    assert.equal(flag('bind-address'), '127.0.0.1');
    assert.equal(flag('secure-port'), '41000');
  });
});

describe('the sandbox restarts kube-controller-manager as kubelet restarts a container', () => {
  it('restarts at once after the first exit', () => {
    assert.equal(kubeletRestartDelayMs(1), 0);
  });

  it('waits 10 s after the second exit in a row and doubles the wait after each further one', () => {
    assert.deepEqual([2, 3, 4, 5].map(kubeletRestartDelayMs), [10_000, 20_000, 40_000, 80_000]);
  });

  it('never waits more than 5 minutes', () => {
    assert.equal(kubeletRestartDelayMs(12), 300_000);
  });
});
