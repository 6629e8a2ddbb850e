// The I/O edges of the `kubernetes` Service's publisher: the /readyz probe
// (src/sources/readyzProbe.ts; over real TLS: readyzProbeTls.test.ts) and
// what the objects writer reads back from the API
// (src/sources/kubernetesServiceObjects.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { probeReadyz } from '../../../src/sources/readyzProbe.js';
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
