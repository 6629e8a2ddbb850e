// The `kubernetes` Service's probe over real TLS (src/sources/readyzProbe.ts):
// a pod dials the Service's ClusterIP, so Go sends no SNI and checks the
// serving certificate's IP SANs against that ClusterIP; the probe must do the
// same, or a sidecar whose certificate lacks the ClusterIP would be listed
// live and fail every pod.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { readyzProbe } from '../../../src/sources/readyzProbe.js';
import { testCa, testLeaf, type TestCert } from '../../support/clientCerts.js';

const CLUSTER_IP = '10.96.0.1';

describe('readyz probe over TLS, as a pod at the ClusterIP', () => {
  let dir: string;
  let ca: TestCert;
  let server: https.Server;
  let port: number;
  let kubeConfig: KubeConfig;
  /** What the sidecar saw of each request: the SNI (false: none), the Authorization header. */
  let seen: Array<{ servername: string | false | null; authorization: string | undefined }>;
  let handshakes: number;
  let status: number;

  const serve = async (cert: TestCert): Promise<void> => server.setSecureContext({ key: cert.keyPem, cert: cert.certPem });
  const leaf = (sans: { dnsNames?: string[]; ips?: string[] }, issuer = ca): Promise<TestCert> =>
    testLeaf(issuer, { name: [{ CN: ['kube-apiserver'] }], usages: ['server'], ...sans });
  const probe = (clusterIp = CLUSTER_IP) => readyzProbe(kubeConfig, { host: '127.0.0.1', port }, clusterIp)();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mvproxy-readyz-tls-'));
    ca = await testCa('cluster-ca');
    await writeFile(join(dir, 'ca.crt'), ca.certPem);
    const first = await leaf({ ips: [CLUSTER_IP] });
    server = https.createServer({ key: first.keyPem, cert: first.certPem }, (req, res) => {
      const socket = req.socket as TLSSocket;
      seen.push({ servername: socket.servername, authorization: req.headers.authorization });
      res.writeHead(req.url === '/readyz' ? status : 404).end('ok');
    });
    server.on('secureConnection', () => handshakes++);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
    kubeConfig = new KubeConfig();
    // A tls-server-name in the replica's kubeconfig (for its own apiserver) must change neither the SNI nor the identity checked.
    kubeConfig.loadFromOptions({
      clusters: [
        { name: 'c', server: 'https://elsewhere.invalid:1', caFile: join(dir, 'ca.crt'), tlsServerName: 'kubernetes.default.svc', skipTLSVerify: false },
      ],
      users: [{ name: 'u', token: 'probe-token' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });

  beforeEach(() => {
    seen = [];
    handshakes = 0;
    status = 200;
  });

  after(async () => {
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a certificate of the cluster CA naming the ClusterIP (an IP SAN) is live, over a new TLS connection each time', async () => {
    await serve(await leaf({ ips: [CLUSTER_IP] }));
    assert.equal(await probe(), true);
    assert.equal(await probe(), true);
    assert.equal(handshakes, 2);
  });

  it('a certificate naming only kubernetes.default.svc is not live: pods dial the ClusterIP and check the IP SANs', async () => {
    await serve(await leaf({ dnsNames: ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc'] }));
    assert.equal(await probe(), false);
    assert.equal(seen.length, 0, 'no request is sent over a connection whose certificate failed');
  });

  it('a certificate naming another IP is not live', async () => {
    await serve(await leaf({ ips: ['10.96.0.2', '127.0.0.1'] }));
    assert.equal(await probe(), false);
  });

  it('a certificate of another CA is not live, even naming the ClusterIP', async () => {
    await serve(await leaf({ ips: [CLUSTER_IP] }, await testCa('another-ca')));
    assert.equal(await probe(), false);
  });

  it('sends no SNI, as a client that dials an IP address does', async () => {
    await serve(await leaf({ ips: [CLUSTER_IP] }));
    assert.equal(await probe(), true);
    assert.deepEqual(
      seen.map((s) => s.servername),
      [false],
    );
  });

  it("authenticates with the kubeconfig's credentials", async () => {
    await serve(await leaf({ ips: [CLUSTER_IP] }));
    assert.equal(await probe(), true);
    assert.deepEqual(
      seen.map((s) => s.authorization),
      ['Bearer probe-token'],
    );
  });

  it('a /readyz that is not 200 is not live', async () => {
    await serve(await leaf({ ips: [CLUSTER_IP] }));
    status = 503;
    assert.equal(await probe(), false);
  });

  it('an IPv6 ClusterIP is checked against the IPv6 SANs, whatever its spelling', async () => {
    await serve(await leaf({ ips: ['fd00:0:0:0:0:0:0:1'] }));
    assert.equal(await probe('fd00::1'), true);
    assert.equal(await probe('fd00::2'), false);
  });
});
