// What the `kubernetes` Service's endpoints list, and the objects that say so
// (src/planner/publishedEndpoints.ts): from the operator's plan and the
// agreed liveness only.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  describePublication,
  desiredObjects,
  desiredPublication,
  FALLBACK_SLICE,
  OWN_SIDECAR_SLICE,
  operatorObjects,
  type Liveness,
} from '../../../src/planner/publishedEndpoints.js';
import { PLAN } from '../../support/publisherHarness.js';
import { endpointsAddresses, type PublishPlan } from '../../../src/model/publication.js';

// The harness's two nodes and a third.
const plan: PublishPlan = { ...PLAN, targets: [...PLAN.targets, { name: 'kas-c', sidecarIp: '192.0.2.3', apiserverIp: '192.0.2.13' }] };

const live = (sidecars: string[], apiservers: string[] = []): Liveness => ({ sidecars: new Set(sidecars), apiservers: new Set(apiservers) });

/** The objects for a liveness, by name and kind. */
function objectsFor(l: Liveness, p: PublishPlan = plan) {
  const publication = desiredPublication(p, l);
  assert.ok(publication);
  const objects = desiredObjects(p, publication);
  const find = (kind: string, name: string) => objects.find((o) => o.ref.kind === kind && o.ref.name === name)?.body as Record<string, unknown> | undefined;
  return { objects, endpoints: find('Endpoints', 'kubernetes'), slice: find('EndpointSlice', 'kubernetes'), fallback: find('EndpointSlice', FALLBACK_SLICE) };
}

describe('published endpoints: who is listed', () => {
  it('lists every node whose sidecar is live at its sidecar, in the slice `kubernetes` and the first Endpoints subset', () => {
    const { endpoints, slice } = objectsFor(live(['kas-a', 'kas-b', 'kas-c']));
    assert.deepEqual(endpoints?.['subsets'], [
      { addresses: [{ ip: '192.0.2.1' }, { ip: '192.0.2.2' }, { ip: '192.0.2.3' }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] },
    ]);
    assert.deepEqual(slice?.['endpoints'], [
      { addresses: ['192.0.2.1'], conditions: { ready: true } },
      { addresses: ['192.0.2.2'], conditions: { ready: true } },
      { addresses: ['192.0.2.3'], conditions: { ready: true } },
    ]);
    assert.deepEqual(slice?.['ports'], [{ name: 'https', port: 6443, protocol: 'TCP' }]);
    assert.equal(slice?.['addressType'], 'IPv4');
  });

  it('lists the same sidecars in mvproxy’s own slice, which no apiserver writes (what kube-proxy keeps when the last lease reconciler erases `kubernetes`)', () => {
    const { objects, slice } = objectsFor(live(['kas-a', 'kas-c']));
    const own = objects.find((o) => o.ref.kind === 'EndpointSlice' && o.ref.name === OWN_SIDECAR_SLICE)?.body;
    assert.deepEqual([own?.['endpoints'], own?.['ports']], [slice?.['endpoints'], slice?.['ports']]);
  });

  it('lists a node whose sidecar is not live but whose apiserver is ready at the apiserver, in the fallback slice and a second subset', () => {
    const { endpoints, fallback } = objectsFor(live(['kas-a'], ['kas-a', 'kas-b']));
    assert.deepEqual(endpoints?.['subsets'], [
      { addresses: [{ ip: '192.0.2.1' }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] },
      { addresses: [{ ip: '192.0.2.12' }], ports: [{ name: 'https', port: 6444, protocol: 'TCP' }] },
    ]);
    assert.deepEqual(fallback?.['endpoints'], [{ addresses: ['192.0.2.12'], conditions: { ready: true } }]);
    assert.deepEqual(fallback?.['ports'], [{ name: 'https', port: 6444, protocol: 'TCP' }]);
  });

  it('leaves out a node whose sidecar is not live and whose apiserver is not ready', () => {
    assert.deepEqual(desiredPublication(plan, live(['kas-a'], ['kas-a'])), { viaSidecar: ['kas-a'], direct: [] });
  });

  it('lists nobody when nothing is live: undefined, so the caller keeps what is published', () => {
    assert.equal(desiredPublication(plan, live([], [])), undefined);
  });

  it('never lists an apiserver directly when the config publishes no address for it', () => {
    const noFallback: PublishPlan = { family: 'IPv4', sidecarPort: 6443, targets: [{ name: 'kas-a', sidecarIp: '192.0.2.1' }] };
    assert.equal(desiredPublication(noFallback, live([], ['kas-a'])), undefined);
    const { objects } = objectsFor(live(['kas-a']), noFallback);
    assert.deepEqual(
      objects.map((o) => `${o.ref.kind}/${o.ref.name}`),
      ['Endpoints/kubernetes', 'EndpointSlice/kubernetes', `EndpointSlice/${OWN_SIDECAR_SLICE}`],
    );
  });

  it('keeps the fallback slice, with no endpoints, while no node falls back', () => {
    assert.deepEqual(objectsFor(live(['kas-a'])).fallback?.['endpoints'], []);
  });
});

describe('published endpoints: the objects', () => {
  it('the Endpoints carry only the skip-mirror label (the mirroring controller adds no slice; upstream resets any other label)', () => {
    const metadata = objectsFor(live(['kas-a'])).endpoints?.['metadata'] as Record<string, unknown>;
    assert.deepEqual(metadata['labels'], { 'endpointslice.kubernetes.io/skip-mirror': 'true' });
    assert.equal(metadata['namespace'], 'default');
  });

  it('the slices name the Service and mvproxy as their manager, so the EndpointSlice controllers leave them alone', () => {
    for (const body of [objectsFor(live(['kas-a'])).slice, objectsFor(live(['kas-a'])).fallback]) {
      assert.deepEqual(((body?.['metadata'] ?? {}) as Record<string, unknown>)['labels'], {
        'endpointslice.kubernetes.io/managed-by': 'control-plane.mvproxy.dev',
        'kubernetes.io/service-name': 'kubernetes',
      });
    }
  });

  it('every label is one the API accepts (a value has no slash: a qualified name is only for keys)', () => {
    const qualifiedName = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
    const value = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;
    for (const o of objectsFor(live(['kas-a'], ['kas-b'])).objects) {
      const metadata = o.body.metadata as { labels: Record<string, string>; annotations: Record<string, string> };
      for (const [k, v] of Object.entries(metadata.labels)) {
        assert.match(k, qualifiedName, k);
        assert.match(v, value, `${k}=${v}`);
      }
      for (const k of Object.keys(metadata.annotations)) assert.match(k, qualifiedName, k);
    }
  });

  it('every replica makes the same objects from the same liveness, whatever order it learned things in', () => {
    const reordered: PublishPlan = { ...plan, targets: [...plan.targets].reverse() };
    const a = objectsFor(live(['kas-c', 'kas-a'], ['kas-b'])).objects;
    const b = objectsFor(live(['kas-a', 'kas-c'], ['kas-b']), reordered).objects;
    assert.deepEqual(JSON.stringify(a), JSON.stringify(b));
  });

  it('an IPv6 plan makes IPv6 slices', () => {
    const v6: PublishPlan = { family: 'IPv6', sidecarPort: 6443, targets: [{ name: 'kas-a', sidecarIp: '2001:db8::1' }] };
    assert.equal(objectsFor(live(['kas-a']), v6).slice?.['addressType'], 'IPv6');
  });

  it('no object content can change a published address: for every liveness, every address listed is one the plan publishes', () => {
    const names = plan.targets.map((t) => t.name);
    const allowed = new Set(plan.targets.flatMap((t) => [`${t.sidecarIp}:6443`, `${t.apiserverIp}:6444`]));
    // desiredPublication and desiredObjects take the plan and the liveness, nothing read from the API.
    assert.equal(desiredPublication.length, 2);
    assert.equal(desiredObjects.length, 2);
    for (let mask = 1; mask < 64; mask++) {
      const l = live(
        names.filter((_, i) => mask & (1 << i)),
        names.filter((_, i) => mask & (1 << (i + 3))),
      );
      const publication = desiredPublication(plan, l);
      if (!publication) continue;
      for (const o of desiredObjects(plan, publication).filter((x) => x.ref.kind === 'Endpoints')) {
        for (const { ip, port } of endpointsAddresses(o.canonical)) assert.ok(allowed.has(`${ip}:${port}`), `${ip}:${port}`);
      }
    }
  });

  it('says who is listed and how in one line', () => {
    assert.equal(
      describePublication({ viaSidecar: ['kas-a', 'kas-b'], direct: ['kas-c'] }),
      'kas-a, kas-b through their sidecars; kas-c at its apiserver directly',
    );
  });
});

describe('published endpoints: the objects the operator creates', () => {
  it('are the four objects listing nothing, each with a digest of its content, so the first replica writing over them is no foreign write', () => {
    const objects = operatorObjects(plan);
    assert.deepEqual(
      objects.map((o) => `${o.ref.kind}/${o.ref.name}`),
      ['Endpoints/kubernetes', 'EndpointSlice/kubernetes', `EndpointSlice/${OWN_SIDECAR_SLICE}`, `EndpointSlice/${FALLBACK_SLICE}`],
    );
    for (const o of objects) assert.deepEqual(endpointsOrSlices(o.body), [], o.ref.name);
  });
});

function endpointsOrSlices(body: Record<string, unknown>): unknown[] {
  return (body['subsets'] ?? body['endpoints']) as unknown[];
}
