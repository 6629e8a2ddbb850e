// The I/O edges of the `kubernetes` Service's publisher: the /readyz probe
// (src/sources/readyzProbe.ts) and what the objects writer reads back from
// the API (src/sources/kubernetesServiceObjects.ts).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ensureSandboxPki } from '../../../src/tools/sandbox/pki.js';
import { probeReadyz, readyzProbe } from '../../../src/sources/readyzProbe.js';
import { HttpTransportError } from '../../../src/sources/apiserverHttp.js';
import { decodeObserved, decodeSliceList, objectsPath } from '../../../src/sources/kubernetesServiceObjects.js';
import { serviceEventBody } from '../../../src/sources/serviceEvents.js';
import { contentDigest } from '../../../src/model/publication.js';
import { FakeTransport } from '../../support/fakeTransport.js';

describe('readyz probe', () => {
  const probe = async (answer: FakeTransport['respondReadyz']) => {
    const transport = new FakeTransport(() => new Error('only /readyz'));
    transport.respondReadyz = answer;
    const passed = await probeReadyz(transport);
    return { passed, closed: transport.closed };
  };

  it('passes on a 200 and closes its connection (every probe is a fresh TLS connection)', async () => {
    assert.deepEqual(await probe(() => ({ status: 200, body: 'ok' })), { passed: true, closed: true });
  });

  it('fails on any other answer: a sidecar whose apiserver is not ready is not live', async () => {
    for (const status of [500, 503, 401, 404]) assert.equal((await probe(() => ({ status, body: '' }))).passed, false, String(status));
  });

  it('fails, never rejects, when nothing answers (refused, TLS, timeout)', async () => {
    for (const kind of ['fetch', 'timeout', 'too_large'] as const) {
      assert.deepEqual(await probe(() => new HttpTransportError(kind, 'no')), { passed: false, closed: true }, kind);
    }
  });
});

describe('readyz probe over TLS', () => {
  let dir: string;
  let server: https.Server;
  let port: number;
  let kubeConfig: KubeConfig;
  let handshakes = 0;
  let status = 200;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mvproxy-readyz-'));
    const pki = await ensureSandboxPki(dir, { apiserverNames: ['a'] });
    const pair = pki.serving['a'];
    assert.ok(pair);
    server = https.createServer({ key: await readFile(pair.key), cert: await readFile(pair.cert) }, (req, res) => {
      res.writeHead(req.url === '/readyz' ? status : 404).end('ok');
    });
    server.on('secureConnection', () => handshakes++);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://elsewhere.invalid:1', caFile: pki.peerCa, skipTLSVerify: false }],
      users: [{ name: 'u', certFile: pki.admin.cert, keyFile: pki.admin.key }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });

  after(async () => {
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('verifies the certificate as a pod does (the cluster CA, the name kubernetes.default.svc), a new TLS connection each time', async () => {
    const probe = readyzProbe(kubeConfig, { host: '127.0.0.1', port }, 'kubernetes.default.svc');
    handshakes = 0;
    assert.equal(await probe(), true);
    assert.equal(await probe(), true);
    assert.equal(handshakes, 2);
  });

  it('fails for a certificate that does not name kubernetes.default.svc, and on a /readyz that is not 200', async () => {
    assert.equal(await readyzProbe(kubeConfig, { host: '127.0.0.1', port }, 'not-the-apiserver.example')(), false);
    status = 503;
    try {
      assert.equal(await readyzProbe(kubeConfig, { host: '127.0.0.1', port }, 'kubernetes.default.svc')(), false);
    } finally {
      status = 200;
    }
  });
});

describe('kubernetes Service objects as read', () => {
  it("reads the resourceVersion, the canonical content and mvproxy's digest annotation", () => {
    const raw = {
      metadata: { name: 'kubernetes', resourceVersion: '17', annotations: { 'mvproxy.dev/published-content': 'abc' }, labels: { b: '2', a: '1' } },
      subsets: [{ addresses: [{ ip: '192.0.2.2' }, { ip: '192.0.2.1', nodeName: 'n' }], ports: [{ name: 'https', port: 6443 }] }],
    };
    const observed = decodeObserved({ kind: 'Endpoints', name: 'kubernetes' }, raw);
    assert.deepEqual(observed, {
      resourceVersion: '17',
      digest: 'abc',
      canonical: JSON.stringify({
        labels: { a: '1', b: '2' },
        subsets: [{ addresses: ['192.0.2.1', '192.0.2.2'], notReadyAddresses: [], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] }],
      }),
    });
    assert.notEqual(contentDigest(observed?.canonical ?? ''), 'abc');
  });

  it('an object without the annotation has no digest; an answer that is not an object is refused', () => {
    assert.equal(decodeObserved({ kind: 'EndpointSlice', name: 'kubernetes' }, { metadata: { name: 'kubernetes' } })?.digest, undefined);
    assert.equal(decodeObserved({ kind: 'EndpointSlice', name: 'kubernetes' }, 'garbage'), undefined);
  });

  it('the objects live in namespace default', () => {
    assert.equal(objectsPath({ kind: 'Endpoints', name: 'kubernetes' }), '/api/v1/namespaces/default/endpoints');
    assert.equal(objectsPath({ kind: 'EndpointSlice', name: 'kubernetes' }), '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices');
  });
});

describe("the kubernetes Service's slices as listed", () => {
  it('reads every slice with its name and managed-by label, whoever wrote it', () => {
    const slices = decodeSliceList({
      items: [
        {
          metadata: { name: 'kubernetes', resourceVersion: '7', labels: { 'endpointslice.kubernetes.io/managed-by': 'control-plane.mvproxy.dev' } },
          addressType: 'IPv4',
          endpoints: [],
          ports: [],
        },
        { metadata: { name: 'kubernetes-x', resourceVersion: '8' }, addressType: 'IPv4' },
      ],
    });
    assert.deepEqual(
      slices.map((s) => [s.name, s.managedBy, s.resourceVersion]),
      [
        ['kubernetes', 'control-plane.mvproxy.dev', '7'],
        ['kubernetes-x', '', '8'],
      ],
    );
  });

  it('refuses an answer that is not a list', () => {
    assert.throws(() => decodeSliceList({ kind: 'Status' }), /not an EndpointSliceList/);
  });
});

describe('Kubernetes Events about the Service', () => {
  it('are events.k8s.io/v1 Events regarding Service default/kubernetes, with a microsecond event time and the note cut to 1 KiB', () => {
    const body = serviceEventBody({ reason: 'ForeignWrite', type: 'Warning', note: 'x'.repeat(2000) }, 'mvproxy-cp-1', Date.UTC(2026, 0, 2, 3, 4, 5, 678));
    assert.equal(body['apiVersion'], 'events.k8s.io/v1');
    assert.deepEqual(body['regarding'], { apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'kubernetes' });
    assert.equal(body['eventTime'], '2026-01-02T03:04:05.678000Z');
    assert.equal(body['reason'], 'ForeignWrite');
    assert.equal(body['reportingInstance'], 'mvproxy-cp-1');
    assert.equal((body['note'] as string).length, 1024);
  });
});
