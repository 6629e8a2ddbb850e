// The sandbox's network mode `namespace` (src/tools/sandbox/netns.ts, processes.ts,
// apiservers.ts): the namespace's holder, how a process enters it, and where
// each apiserver listens and what it advertises there.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { enterCommand, holderCommand, nodeAddress } from '../../../../src/tools/sandbox/netns.js';
import { wrapCommand } from '../../../../src/tools/sandbox/processes.js';
import { apiserverListen, kubeApiserverProcess, sidecarListen, type RunningApiserver } from '../../../../src/tools/sandbox/apiservers.js';
import type { SandboxPki } from '../../../../src/tools/sandbox/pki.js';
import { KUBEADM_APISERVER_COMMAND } from '../../../support/kubeadmRenderFixture.js';

const pair = { cert: '/pki/x.crt', key: '/pki/x.key' };
const pki = {
  ca: pair,
  frontProxyCa: pair,
  frontProxyClient: pair,
  frontProxyClientName: 'front-proxy-client',
  serviceAccount: { publicKey: '/pki/sa.pub', privateKey: '/pki/sa.key' },
  serving: { 'kas-a': pair },
} as unknown as SandboxPki;

function flagsOf(run: RunningApiserver, upstreamPeerProxy: boolean): string[] {
  return kubeApiserverProcess({
    spec: run.spec,
    command: 'kube-apiserver',
    kubeadm: KUBEADM_APISERVER_COMMAND,
    port: run.port,
    etcdPort: 2379,
    pki,
    logsDir: '/l',
    upstreamPeerProxy,
    listen: apiserverListen(run),
  }).args;
}

const loopbackRun: RunningApiserver = { spec: { name: 'kas-a', version: 'v1.36.3' }, port: 40001, sidecarPort: 40002, sidecarStatsPort: 40003 };
const namespaceRun: RunningApiserver = { ...loopbackRun, nodeAddress: '192.0.2.11' };

describe('the sandbox network namespace', () => {
  it('node i gets its own documentation address, from 192.0.2.11 on', () => {
    assert.deepEqual([0, 1, 2].map(nodeAddress), ['192.0.2.11', '192.0.2.12', '192.0.2.13']);
  });

  it('the holder brings lo up with every node address and then only waits', () => {
    const { command, args } = holderCommand(['192.0.2.11', '192.0.2.12'], true);
    assert.equal(command, 'unshare');
    assert.deepEqual(args.slice(0, 3), ['--net', 'sh', '-c']);
    assert.match(
      args[3] ?? '',
      /^ip link set lo up && ip addr add 192\.0\.2\.11\/32 dev lo && ip addr add 192\.0\.2\.12\/32 dev lo && .* && exec sleep infinity$/,
    );
  });

  it('without root the holder makes a user namespace to own the network namespace, and processes enter both', () => {
    assert.deepEqual(holderCommand([], false).args.slice(0, 3), ['--user', '--map-root-user', '--net']);
    assert.deepEqual(enterCommand(42, false), ['nsenter', '--preserve-credentials', '--user=/proc/42/ns/user', '--net=/proc/42/ns/net']);
  });

  it('as root a process enters the network namespace only', () => {
    assert.deepEqual(enterCommand(42, true), ['nsenter', '--net=/proc/42/ns/net']);
  });

  it('a process that enters the namespace still dies with the sandbox: setpriv comes first', () => {
    const [command, args] = wrapCommand({ command: 'etcd', args: ['--x'], enter: ['nsenter', '--net=/proc/42/ns/net'] });
    assert.equal(command, 'setpriv');
    assert.deepEqual(args, ['--pdeathsig', 'KILL', 'nsenter', '--net=/proc/42/ns/net', 'etcd', '--x']);
  });

  it('an apiserver in the namespace keeps its UTS namespace and hostname, made inside it', () => {
    const [, args] = wrapCommand({ command: 'kube-apiserver', args: [], hostname: 'kas-a', enter: ['nsenter', '--net=/proc/42/ns/net'] });
    assert.deepEqual(args.slice(0, 8), ['--pdeathsig', 'KILL', 'nsenter', '--net=/proc/42/ns/net', 'unshare', '--uts', 'sh', '-c']);
    assert.equal(args[9], 'kas-a');
  });
});

describe('where an apiserver and its sidecar listen, by network mode', () => {
  it('on loopback both listen on their own 127.0.0.1 ports', () => {
    assert.deepEqual(apiserverListen(loopbackRun), { host: '127.0.0.1', port: 40001 });
    assert.deepEqual(sidecarListen(loopbackRun), { host: '127.0.0.1', port: 40002 });
  });

  it('in the namespace the sidecar takes the node address on 6443 and its apiserver moves to 6444, as kubeadm lays them out', () => {
    assert.deepEqual(apiserverListen(namespaceRun), { host: '192.0.2.11', port: 6444 });
    assert.deepEqual(sidecarListen(namespaceRun), { host: '192.0.2.11', port: 6443 });
  });

  it('in the namespace an apiserver binds and advertises its node address', () => {
    const flags = flagsOf(namespaceRun, false);
    for (const flag of ['--secure-port=6444', '--bind-address=192.0.2.11', '--advertise-address=192.0.2.11', '--endpoint-reconciler-type=none'])
      assert.ok(flags.includes(flag), flag);
  });

  it('in mode upstream in the namespace peers are told the node address and 6444', () => {
    const flags = flagsOf(namespaceRun, true);
    for (const flag of ['--advertise-address=192.0.2.11', '--peer-advertise-ip=192.0.2.11', '--peer-advertise-port=6444'])
      assert.ok(flags.includes(flag), flag);
  });

  it('on loopback an apiserver advertises the non-routable documentation address, as before', () => {
    const flags = flagsOf(loopbackRun, false);
    assert.ok(flags.includes('--advertise-address=192.0.2.1'));
    assert.ok(flags.includes('--bind-address=127.0.0.1'));
    assert.ok(flags.includes('--secure-port=40001'));
  });
});
