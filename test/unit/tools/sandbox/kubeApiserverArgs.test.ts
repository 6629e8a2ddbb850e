// kube-apiserver's command line in the sandbox: kubeadm's render
// (test/support/kubeadmRenderFixture.ts) with the flags of
// APISERVER_SUBSTITUTED_FLAGS set by the sandbox (src/tools/sandbox/apiservers.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kubeApiserverProcess, type ApiserverSpec } from '../../../../src/tools/sandbox/apiservers.js';
import { APISERVER_SUBSTITUTED_FLAGS, parseKubeadmCommand } from '../../../../src/tools/sandbox/kubeadmCommands.js';
import type { SandboxPki } from '../../../../src/tools/sandbox/pki.js';
import { KUBEADM_APISERVER_COMMAND } from '../../../support/kubeadmRenderFixture.js';

const pair = (name: string) => ({ cert: `/s/pki/${name}.crt`, key: `/s/pki/${name}.key` });
const pki = {
  ca: pair('ca'),
  frontProxyCa: pair('front-proxy-ca'),
  frontProxyClient: pair('front-proxy-client'),
  frontProxyClientName: 'front-proxy-client',
  serviceAccount: { publicKey: '/s/pki/sa.pub', privateKey: '/s/pki/sa.key' },
  serving: { 'kas-a': pair('kas-a') },
} as unknown as SandboxPki;

function args(spec: Partial<ApiserverSpec> = {}, extra: { audit?: boolean; upstream?: boolean } = {}): Map<string, string> {
  const process = kubeApiserverProcess({
    spec: { name: 'kas-a', version: 'v1.36.3', ...spec },
    command: '/c/kube-apiserver',
    kubeadm: KUBEADM_APISERVER_COMMAND,
    port: 40001,
    etcdPort: 40000,
    pki,
    logsDir: '/l',
    upstreamPeerProxy: extra.upstream ?? false,
    ...(extra.audit ? { audit: { policyFile: '/s/audit.yaml', logPath: '/l/kas-a-audit.log' } } : {}),
  });
  return parseKubeadmCommand(['kube-apiserver', ...process.args]).flags;
}

describe("the sandbox's kube-apiserver command line is kubeadm's render", () => {
  it('keeps every flag the sandbox does not name, with kubeadm’s value (and the last one mvproxy’s patch gives)', () => {
    const rendered = parseKubeadmCommand(KUBEADM_APISERVER_COMMAND).flags;
    const running = args();
    for (const [flag, value] of rendered) {
      if (!Object.hasOwn(APISERVER_SUBSTITUTED_FLAGS, flag)) assert.equal(running.get(flag), value, flag);
    }
    assert.equal(running.get('requestheader-uid-headers'), 'X-Remote-Uid');
    assert.equal(running.get('authorization-mode'), 'Node,RBAC');
  });

  it("names no file under kubeadm's /etc/kubernetes: every PKI path is the sandbox's", () => {
    for (const [flag, value] of args()) assert.doesNotMatch(value, /^\/etc\/kubernetes/, flag);
    assert.equal(args().get('tls-cert-file'), '/s/pki/kas-a.crt');
    assert.equal(args().get('service-account-signing-key-file'), '/s/pki/sa.key');
  });

  it('leaves out the kubelet client pair (no kubelets) and listens on its own address and port', () => {
    const running = args();
    assert.equal(running.has('kubelet-client-certificate'), false);
    assert.equal(running.has('kubelet-client-key'), false);
    assert.equal(running.get('secure-port'), '40001');
    assert.equal(running.get('bind-address'), '127.0.0.1');
    assert.equal(running.get('etcd-servers'), 'http://127.0.0.1:40000');
  });

  it('adds the audit log, runtime config and shutdown delay only when asked', () => {
    assert.equal(args().has('audit-log-path'), false);
    const running = args({ runtimeConfig: 'batch/v1=false', shutdownDelaySeconds: 3 }, { audit: true });
    assert.equal(running.get('audit-log-mode'), 'blocking');
    assert.equal(running.get('runtime-config'), 'batch/v1=false');
    assert.equal(running.get('shutdown-delay-duration'), '3s');
  });

  it('in mode upstream advertises where it listens to its peers, with the feature gate', () => {
    const running = args({}, { upstream: true });
    assert.equal(running.get('peer-advertise-port'), '40001');
    assert.equal(running.get('feature-gates'), 'UnknownVersionInteroperabilityProxy=true');
  });
});
