// What runs on a control-plane node, shared by the sandbox and `mvproxy deploy kubeadm` (src/deploy/replica.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { replicaServeConfig, serveArgs, sidecarControlPlanes, sidecarEnvoyArgs } from '../../../src/deploy/replica.js';
import { parseServeConfig } from '../../../src/serve/config.js';

const apiservers = [
  { name: 'a', hostname: 'host-a', address: '10.0.0.1:6444', sidecarListen: '10.0.0.1:6443', servingCert: '/pki/a.crt', servingKey: '/pki/a.key' },
];
const tls = { clientCa: '/pki/ca.crt', frontProxyClientCert: '/pki/fp.crt', frontProxyClientKey: '/pki/fp.key', peerCa: '/pki/ca.crt' };
const replica = {
  replicaName: 'mvproxy-a',
  kubeconfig: '/etc/kc',
  xdsSocket: '/run/xds.sock',
  adminListen: '127.0.0.1:9464',
  adminSocket: '/run/admin.sock',
  warmStartFile: '/var/warm.json',
};

describe('a replica and its sidecar, wherever they run', () => {
  it('a replica config without tuning leaves every number to serve, and serve accepts it', () => {
    const config = replicaServeConfig(apiservers, tls, replica);
    for (const key of ['departedGraceSeconds', 'localOnlyGraceSeconds', 'discoveryPollMillis', 'peerEgressProxy']) assert.equal(config[key], undefined, key);
    const parsed = parseServeConfig(config, '/', false);
    assert.equal(parsed.discoveryPollMs, 1000);
    assert.equal(parsed.replicaName, 'mvproxy-a');
  });

  it("the publish addresses a node is given become its apiserver entry's publish and sidecar.publish, and the plan publishes them", () => {
    const node = {
      name: 'a',
      hostname: 'host-a',
      servingCert: '/pki/a.crt',
      servingKey: '/pki/a.key',
      address: '192.0.2.11:6444',
      sidecarListen: '192.0.2.11:6443',
      publish: '192.0.2.11:6444',
      sidecarPublish: '192.0.2.11:6443',
    };
    const config = replicaServeConfig([node], tls, replica, { publishKubernetesService: true, kubernetesServiceIp: '10.96.0.1' });
    const parsed = parseServeConfig(config, '/', false);
    assert.equal(parsed.kubernetesService?.clusterIp, '10.96.0.1');
    assert.deepEqual(parsed.kubernetesService?.plan, {
      family: 'IPv4',
      sidecarPort: 6443,
      apiserverPort: 6444,
      targets: [{ name: 'a', sidecarIp: '192.0.2.11', apiserverIp: '192.0.2.11' }],
    });
  });

  it("a config that publishes the kubernetes Service is not written without the Service's ClusterIP", () => {
    assert.throws(() => replicaServeConfig(apiservers, tls, replica, { publishKubernetesService: true }), /needs its ClusterIP/);
  });

  it('a replica without a mutual-TLS listener serves its own sidecar only (a single replica)', () => {
    assert.deepEqual(replicaServeConfig(apiservers, tls, replica)['xds'], { unixSocket: '/run/xds.sock' });
  });

  it('serve and Envoy get their files and levels as flags', () => {
    assert.deepEqual(serveArgs('/etc/m.json', 'warn'), ['serve', '--config=/etc/m.json', '--log-level=warn']);
    assert.deepEqual(sidecarEnvoyArgs('/etc/e.json', 3), [
      '-c',
      '/etc/e.json',
      '--use-dynamic-base-id',
      '-l',
      'warning',
      '--drain-time-s',
      '3',
      '--drain-strategy',
      'immediate',
      '--concurrency',
      '2',
    ]);
    assert.deepEqual(sidecarEnvoyArgs('/etc/e.json', 3, 16).slice(-2), ['--concurrency', '16']);
    assert.throws(() => sidecarEnvoyArgs('/etc/e.json', 3, 0), /positive integer/);
  });

  it('a sidecar with failover replicas needs its xDS client certificate', () => {
    assert.throws(() => sidecarControlPlanes('/run/xds.sock', ['10.0.0.2:18000'], undefined), /client certificate/);
  });

  it('failover replicas given in brackets (IPv6) become bare addresses', () => {
    const [, other] = sidecarControlPlanes('/run/xds.sock', ['[fd00::2]:18000'], { ca: 'ca', cert: 'c', key: 'k', serverName: 'mvproxy-xds' });
    assert.ok(other && 'host' in other);
    assert.equal(other.host, 'fd00::2');
    assert.equal(other.port, 18000);
  });
});
