// Who wrote what the `kubernetes` Service's objects hold, and what kube-proxy
// is given (src/planner/publishedContent.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { desiredObjects, desiredPublication, OWN_SIDECAR_SLICE, type Liveness } from '../../../src/planner/publishedEndpoints.js';
import { judgeContent, serviceView } from '../../../src/planner/publishedContent.js';
import { canonicalObject, CONTENT_DIGEST_ANNOTATION, type ListedSlice } from '../../../src/model/publication.js';
import { PLAN, upstreamEndpoints } from '../../support/publisherHarness.js';

const live = (sidecars: string[], apiservers: string[] = []): Liveness => ({ sidecars: new Set(sidecars), apiservers: new Set(apiservers) });

function objects(l: Liveness) {
  const publication = desiredPublication(PLAN, l);
  assert.ok(publication);
  return desiredObjects(PLAN, publication);
}

const [endpoints, slice] = objects(live(['kas-a', 'kas-b']));
assert.ok(endpoints && slice);

function observe(kind: 'Endpoints' | 'EndpointSlice', raw: Record<string, unknown>) {
  const annotations = (raw['metadata'] as { annotations?: Record<string, string> }).annotations ?? {};
  const digest = annotations[CONTENT_DIGEST_ANNOTATION];
  return { resourceVersion: '42', canonical: canonicalObject(kind, raw), ...(digest ? { digest } : {}) };
}

function listed(name: string, raw: Record<string, unknown>, managedBy = ''): ListedSlice {
  return { ...observe('EndpointSlice', raw), name, managedBy };
}

const foreignSlice = (ips: string[], port: number): Record<string, unknown> => ({
  metadata: { name: 'kubernetes', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
  addressType: 'IPv4',
  endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
  ports: [{ name: 'https', port, protocol: 'TCP' }],
});

describe('published content: who wrote an object', () => {
  it('an object stored in another order, with server-side fields, is as desired', () => {
    const raw = structuredClone(slice.body) as Record<string, unknown> & { metadata: Record<string, unknown> };
    raw.metadata = { ...raw.metadata, resourceVersion: '42', uid: 'u' };
    raw['endpoints'] = [...(raw['endpoints'] as unknown[])].reverse();
    assert.deepEqual(judgeContent(PLAN, slice, observe('EndpointSlice', raw)), { kind: 'as-desired' });
  });

  it('an object that does not exist is absent', () => {
    assert.deepEqual(judgeContent(PLAN, endpoints, undefined), { kind: 'absent' });
  });

  it("another replica's content (its digest matches) is mvproxy's, not foreign", () => {
    const other = objects(live(['kas-a']))[0];
    assert.ok(other);
    assert.deepEqual(judgeContent(PLAN, endpoints, observe('Endpoints', other.body)), { kind: 'mvproxy' });
  });

  it("a lease reconciler's content (configured apiservers at their own address and port, no digest) is lease content, naming them", () => {
    assert.deepEqual(judgeContent(PLAN, endpoints, observe('Endpoints', upstreamEndpoints(['192.0.2.12']))), { kind: 'lease', apiservers: ['kas-b'] });
    assert.deepEqual(judgeContent(PLAN, slice, observe('EndpointSlice', foreignSlice(['192.0.2.11', '192.0.2.12'], 6444))), {
      kind: 'lease',
      apiservers: ['kas-a', 'kas-b'],
    });
  });

  it("a lease reconciler's periodic pass, which keeps the port it found, is lease content: a configured apiserver's address at the sidecars' port", () => {
    assert.deepEqual(judgeContent(PLAN, endpoints, observe('Endpoints', upstreamEndpoints(['192.0.2.11'], 6443))), { kind: 'lease', apiservers: ['kas-a'] });
  });

  it("apiservers' addresses written into mvproxy's own slice, which no apiserver writes, are foreign", () => {
    const own = objects(live(['kas-a', 'kas-b'])).find((o) => o.ref.name === OWN_SIDECAR_SLICE);
    assert.ok(own);
    assert.deepEqual(judgeContent(PLAN, own, observe('EndpointSlice', foreignSlice(['192.0.2.11'], 6444))), { kind: 'foreign', outside: [] });
  });

  it('content naming an address outside the configuration is foreign, naming it', () => {
    assert.deepEqual(judgeContent(PLAN, endpoints, observe('Endpoints', upstreamEndpoints(['192.0.2.11', '192.0.2.99']))), {
      kind: 'foreign',
      outside: ['192.0.2.99:6444'],
    });
  });

  it("a configured apiserver's address at another port is outside the configuration", () => {
    assert.deepEqual(judgeContent(PLAN, endpoints, observe('Endpoints', upstreamEndpoints(['192.0.2.11'], 443))), {
      kind: 'foreign',
      outside: ['192.0.2.11:443'],
    });
  });

  it("our content with a forged or stale digest is foreign (sidecars listed by someone else are not a lease reconciler's)", () => {
    const raw = structuredClone(endpoints.body) as Record<string, unknown>;
    raw['subsets'] = [{ addresses: [{ ip: '192.0.2.1' }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] }];
    assert.deepEqual(judgeContent(PLAN, endpoints, observe('Endpoints', raw)), { kind: 'foreign', outside: ['192.0.2.1:6443'] });
  });

  it('empty content without a digest is foreign: it is not what a lease reconciler writes', () => {
    assert.deepEqual(judgeContent(PLAN, slice, observe('EndpointSlice', foreignSlice([], 6443))), { kind: 'foreign', outside: [] });
  });
});

describe('published content: what kube-proxy is given', () => {
  it('maps every slice back to the apiservers, names addresses no config entry publishes, and tells mvproxy slices from foreign ones', () => {
    const [, sidecars, , fallback] = objects(live(['kas-a'], ['kas-b']));
    assert.ok(sidecars && fallback);
    const view = serviceView(
      PLAN,
      [
        listed('kubernetes', sidecars.body, 'control-plane.mvproxy.dev'),
        listed('kubernetes-mvproxy-fallback', fallback.body, 'control-plane.mvproxy.dev'),
        listed('kubernetes-abcde', foreignSlice(['203.0.113.9'], 443), 'endpointslicemirroring-controller.k8s.io'),
      ],
      observe('Endpoints', objects(live(['kas-a'], ['kas-b']))[0]?.body ?? {}).canonical,
    );
    assert.deepEqual(
      [...view.byName],
      [
        ['kas-a', 'sidecar'],
        ['kas-b', 'apiserver'],
      ],
    );
    assert.deepEqual(view.unknown, ['203.0.113.9:443']);
    assert.deepEqual(
      view.slices.map((s) => [s.name, s.writtenByMvproxy, s.managedBy, s.addresses]),
      [
        ['kubernetes', true, 'control-plane.mvproxy.dev', ['192.0.2.1:6443']],
        ['kubernetes-abcde', false, 'endpointslicemirroring-controller.k8s.io', ['203.0.113.9:443']],
        ['kubernetes-mvproxy-fallback', true, 'control-plane.mvproxy.dev', ['192.0.2.12:6444']],
      ],
    );
    assert.deepEqual(view.counts, { sidecar: 1, apiserver: 1, other: 1 });
  });

  it('reports the Endpoints differing from the slices, both ways', () => {
    const view = serviceView(
      PLAN,
      [listed('kubernetes', foreignSlice(['192.0.2.1'], 6443))],
      observe('Endpoints', upstreamEndpoints(['192.0.2.11'])).canonical,
    );
    assert.equal(
      view.endpointsMismatch,
      'the Endpoints list 192.0.2.11:6444 that no EndpointSlice does; the EndpointSlices list 192.0.2.1:6443 that the Endpoints do not',
    );
  });

  it('the Endpoints agreeing with the slices is no mismatch', () => {
    const [e, s, f] = objects(live(['kas-a', 'kas-b']));
    assert.ok(e && s && f);
    const view = serviceView(PLAN, [listed('kubernetes', s.body), listed('kubernetes-mvproxy-fallback', f.body)], observe('Endpoints', e.body).canonical);
    assert.equal(view.endpointsMismatch, '');
  });

  it('a not-ready endpoint is shown as such and not counted as listed', () => {
    const raw = foreignSlice(['192.0.2.1'], 6443);
    raw['endpoints'] = [{ addresses: ['192.0.2.1'], conditions: { ready: false } }];
    const view = serviceView(PLAN, [listed('kubernetes', raw)], undefined);
    assert.deepEqual(view.slices[0]?.addresses, ['192.0.2.1:6443 (not ready)']);
    assert.deepEqual(view.counts, { sidecar: 0, apiserver: 0, other: 0 });
    assert.equal(view.byName.size, 0);
  });
});
