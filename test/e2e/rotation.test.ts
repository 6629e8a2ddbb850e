// Rotating every certificate file a sidecar uses, under load, without a
// restart (docs/identity.md, "Rotation"): real etcd, kube-apiserver and Envoy.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { connect } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import type { IssuedCert } from '../../src/tools/sandbox/x509.js';
import { loadIssued, newCa, newLeaf, newServingCert, serialOf, writeCertFile, writePairFiles } from '../support/rotation.js';
import { apiserverNamed, eventually, serviceAccountToken, startTestSandbox, type TestSandbox } from '../support/sandbox.js';

const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';

interface Outcome {
  status?: number;
  error?: string;
  /** When it ended (ms since the epoch): a diagnostic. */
  at?: number;
}

function get(url: string, options: RequestOptions, onSocket?: (socket: TLSSocket) => void): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = httpsRequest(url, { ...options, method: 'GET', timeout: 15_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
      res.on('error', (err) => resolve({ error: err.message }));
    });
    if (onSocket) req.on('socket', (socket) => onSocket(socket as TLSSocket));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ error: err.message }));
    req.end();
  });
}

/** A client sending one request after another on a keep-alive connection until stopped, counting what failed. */
function loadClient(url: string, options: RequestOptions) {
  let stopped = false;
  const failures: Outcome[] = [];
  let requests = 0;
  const running = (async () => {
    while (!stopped) {
      const outcome = await get(url, options);
      requests++;
      if (outcome.status !== 200) failures.push({ ...outcome, at: Date.now() });
    }
  })();
  return {
    failures,
    get requests() {
      return requests;
    },
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/** The serial of the certificate a new TLS connection to the sidecar is served. */
function servedSerial(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.end();
      resolve(serial);
    });
    socket.on('error', reject);
  });
}

/** The serials of the certificates an Envoy admin interface (Unix socket) reports loaded. */
function envoySerials(adminSocket: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath: adminSocket, path: '/certs' }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => {
        const parsed = JSON.parse(body) as { certificates?: Array<{ cert_chain?: Array<{ serial_number?: string }> }> };
        resolve((parsed.certificates ?? []).flatMap((c) => (c.cert_chain ?? []).map((x) => (x.serial_number ?? '').toUpperCase())));
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Envoy's counters whose names match `filter` (a regex), from its admin interface. */
function envoyStats(adminSocket: string, filter: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath: adminSocket, path: `/stats?filter=${encodeURIComponent(filter)}` }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve(body.trim().replace(/\n/g, ', ')));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('rotating the certificate files of a sidecar under load (kas-a v1.36.3)', () => {
  let tb: TestSandbox;
  let token: string;
  let url: string;
  let port: number;
  let ca: string;
  let clusterCa: IssuedCert;
  let load: Array<ReturnType<typeof loadClient>> = [];

  before(async () => {
    tb = await startTestSandbox([{ name: 'kas-a', version: 'v1.36.3' }]);
    const s = tb.state();
    const sidecar = apiserverNamed(s, 'kas-a').sidecar;
    if (!sidecar) throw new Error('no sidecar');
    url = sidecar;
    port = Number(new URL(sidecar).port);
    ca = await readFile(s.ca, 'utf8');
    token = await serviceAccountToken(s, 'rotation-reader', 'cluster-admin');
    clusterCa = await loadIssued(tb.sandbox.pkiFiles().ca);
    const admin = s.clientCerts.admin;
    const [cert, key] = await Promise.all([readFile(admin.cert, 'utf8'), readFile(admin.key, 'utf8')]);
    load = [
      loadClient(`${url}${CONFIGMAPS}`, { ca, agent: new Agent({ keepAlive: true, maxSockets: 1 }), headers: { authorization: `Bearer ${token}` } }),
      loadClient(`${url}${CONFIGMAPS}`, { ca, agent: new Agent({ keepAlive: true, maxSockets: 1, ca, cert, key }) }),
    ];
  });
  after(async () => {
    for (const client of load) await client.stop();
    await tb?.sandbox.down();
  });

  for (const mode of ['atomic', 'in-place'] as const) {
    it(`a serving certificate written ${mode === 'atomic' ? 'atomically' : 'in place'} is served on new connections`, async () => {
      const issued = await newServingCert(clusterCa, 'kas-a');
      const started = Date.now();
      process.stdout.write(`# writing the serving certificate (${mode}) at ${started}\n`);
      await writePairFiles(tb.sandbox.pkiFiles().serving['kas-a'] ?? assert.fail('no serving pair'), issued, mode);
      await eventually(async () => assert.equal(await servedSerial(port, ca), serialOf(issued.certPem)), 60_000);
      process.stdout.write(`# serving certificate (${mode}) served after ${Date.now() - started} ms\n`);
    });
  }

  it('requests keep authenticating after the front-proxy certificate rotates', async () => {
    const pki = tb.sandbox.pkiFiles();
    const issued = await newLeaf(await loadIssued(pki.frontProxyCa), { commonName: pki.frontProxyClientName, usage: 'client' });
    const started = Date.now();
    const adminSocket = apiserverNamed(tb.state(), 'kas-a').sidecarAdminSocket ?? assert.fail('no sidecar admin socket');
    const connections = 'local.*front-proxy\\.upstream_cx_(total|max_duration_reached)$';
    process.stdout.write(`# front-proxy connections before: ${await envoyStats(adminSocket, connections)}\n`);
    process.stdout.write(`# writing the front-proxy certificate at ${started}\n`);
    await writePairFiles(pki.frontProxyClient, issued, 'in-place');
    await eventually(async () => assert.ok((await envoySerials(adminSocket)).includes(serialOf(issued.certPem))), 60_000);
    process.stdout.write(`# front-proxy certificate loaded after ${Date.now() - started} ms\n`);
    await new Promise((r) => setTimeout(r, 2000));
    process.stdout.write(`# front-proxy connections 2 s after: ${await envoyStats(adminSocket, connections)}\n`);
    const admin = tb.state().clientCerts.admin;
    const [cert, key] = await Promise.all([readFile(admin.cert, 'utf8'), readFile(admin.key, 'utf8')]);
    assert.equal((await get(`${url}${CONFIGMAPS}`, { ca, cert, key, agent: false })).status, 200);
  });

  it('a client certificate from a CA added to the bundle authenticates; once the CA is removed it is refused and its open connection closes', async () => {
    const pki = tb.sandbox.pkiFiles();
    const original = await readFile(pki.ca.cert, 'utf8');
    const extra = await newCa('rotation-extra-ca');
    const carol = await newLeaf(extra, { commonName: 'carol', organizations: ['system:masters'], usage: 'client' });
    const asCarol = { ca, cert: carol.certPem, key: carol.keyPem };
    const adminSocket = apiserverNamed(tb.state(), 'kas-a').sidecarAdminSocket ?? assert.fail('no sidecar admin socket');
    const inPlaceUpdates = async () => Number((await envoyStats(adminSocket, '^listener_manager\\.listener_in_place_updated$')).split(': ')[1] ?? 'NaN');
    const updatesBefore = await inPlaceUpdates();
    process.stdout.write(`# adding a CA at ${Date.now()}\n`);
    await writeCertFile(pki.ca.cert, `${original.trimEnd()}\n${extra.certPem}`, 'in-place');
    // The listener of the new bundle is in place (else the connection below could be one the addition itself drains).
    await eventually(async () => assert.ok((await inPlaceUpdates()) > updatesBefore), 60_000);
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ...asCarol });
    await eventually(async () => assert.equal((await get(`${url}${CONFIGMAPS}`, { ...asCarol, agent: false })).status, 200), 60_000);
    // An open keep-alive connection with carol's certificate.
    let socket: TLSSocket | undefined;
    const onSocket = (s: TLSSocket) => {
      socket = s;
    };
    assert.equal((await get(`${url}${CONFIGMAPS}`, { agent }, onSocket)).status, 200);
    const open = socket ?? assert.fail('no keep-alive socket');
    const closed = new Promise<void>((resolve) => open.once('close', () => resolve()));

    const started = Date.now();
    process.stdout.write(`# removing the CA at ${started}\n`);
    assert.equal(open.destroyed, false, 'the keep-alive connection is open before the CA goes');
    await writeCertFile(pki.ca.cert, original, 'atomic');
    await eventually(async () => {
      const outcome = await get(`${url}${CONFIGMAPS}`, { ...asCarol, agent: false });
      assert.notEqual(outcome.status, 200, 'a new connection with a certificate from the removed CA');
    }, 60_000);
    process.stdout.write(`# removed CA refused on new connections after ${Date.now() - started} ms\n`);
    await Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error('the old connection stayed open')), 60_000))]);
    process.stdout.write(`# old keep-alive connection closed after ${Date.now() - started} ms\n`);
    agent.destroy();
  });

  it('while the control plane is down, a serving certificate and a client CA renamed into place take effect on new connections', async () => {
    await tb.sandbox.killControlPlane();
    try {
      const pki = tb.sandbox.pkiFiles();
      const issued = await newServingCert(clusterCa, 'kas-a');
      await writePairFiles(pki.serving['kas-a'] ?? assert.fail('no serving pair'), issued, 'atomic');
      await eventually(async () => assert.equal(await servedSerial(port, ca), serialOf(issued.certPem)), 60_000);
      const original = await readFile(pki.ca.cert, 'utf8');
      const extra = await newCa('rotation-offline-ca');
      const dave = await newLeaf(extra, { commonName: 'dave', organizations: ['system:masters'], usage: 'client' });
      await writeCertFile(pki.ca.cert, `${original.trimEnd()}\n${extra.certPem}`, 'atomic');
      await eventually(
        async () => assert.equal((await get(`${url}${CONFIGMAPS}`, { ca, cert: dave.certPem, key: dave.keyPem, agent: false })).status, 200),
        60_000,
      );
      await writeCertFile(pki.ca.cert, original, 'atomic');
      await eventually(
        async () => assert.notEqual((await get(`${url}${CONFIGMAPS}`, { ca, cert: dave.certPem, key: dave.keyPem, agent: false })).status, 200),
        60_000,
      );
    } finally {
      await tb.sandbox.restartControlPlane();
    }
  });

  it('no request of the load failed meanwhile', async () => {
    for (const client of load) await client.stop();
    const [tokens, certs] = load;
    process.stdout.write(`# load: ${tokens?.requests} token requests, ${certs?.requests} certificate requests\n`);
    assert.deepEqual(
      load.flatMap((c) => c.failures),
      [],
    );
  });
});
