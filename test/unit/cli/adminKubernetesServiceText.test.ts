// `mvproxy admin status`'s part about the `kubernetes` Service (src/cli/admin.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatKubernetesService } from '../../../src/cli/admin.js';

const EMPTY = {
  enabled: true,
  state: 'publishing',
  message: '',
  nodes: [],
  other_addresses: [],
  foreign_writes: 0,
  confirmed_at: '',
  slices: [],
  endpoints_mismatch: '',
  plan_digest: 'abc',
  config_mismatches: [],
  lease_apiservers: [],
  ready: true,
};

describe('admin status: the kubernetes Service', () => {
  it('prints nothing while publishing is off', () => {
    assert.equal(formatKubernetesService({ ...EMPTY, enabled: false, state: 'off' }), '');
  });

  it('names a node listed that no replica observes live (a node that died while every replica was down), and addresses no config entry publishes', () => {
    const text = formatKubernetesService({
      ...EMPTY,
      enabled: true,
      state: 'starting',
      message: 'watching the liveness record for 15 s before writing: nothing is written meanwhile',
      nodes: [
        { apiserver: 'cp-1', published: 'sidecar', sidecar_live: true, apiserver_ready: true, sidecar_seen_by: ['mvproxy-cp-1'] },
        { apiserver: 'cp-2', published: 'sidecar', sidecar_live: false, apiserver_ready: false, sidecar_seen_by: [] },
        { apiserver: 'cp-3', published: 'apiserver', sidecar_live: false, apiserver_ready: true, sidecar_seen_by: [] },
      ],
      other_addresses: ['203.0.113.9:443'],
      foreign_writes: 0,
      confirmed_at: '',
    });
    assert.match(text, /^kubernetes Service \(default\/kubernetes\): starting: watching/m);
    assert.match(text, /^listed but not observed live: cp-2$/m);
    assert.match(text, /^also listed \(no config entry publishes them\): 203\.0\.113\.9:443$/m);
    assert.match(text, /^cp-3 +apiserver \(directly\) +no +yes +-$/m);
    assert.match(text, /^confirmed: never$/m);
  });

  it('shows every EndpointSlice of the Service, foreign ones as such, and the Endpoints differing from them', () => {
    const text = formatKubernetesService({
      ...EMPTY,
      slices: [
        { name: 'kubernetes', address_type: 'IPv4', addresses: ['192.0.2.1:6443'], written_by_mvproxy: true, managed_by: 'control-plane.mvproxy.dev' },
        { name: 'kubernetes-x', address_type: 'IPv4', addresses: ['192.0.2.99:6443'], written_by_mvproxy: false, managed_by: '' },
      ],
      endpoints_mismatch: 'the Endpoints list 192.0.2.11:6444 that no EndpointSlice does',
    });
    assert.match(text, /^kubernetes +mvproxy +control-plane\.mvproxy\.dev +192\.0\.2\.1:6443$/m);
    assert.match(text, /^kubernetes-x +foreign +- +192\.0\.2\.99:6443$/m);
    assert.match(text, /^Endpoints differ from the EndpointSlices: the Endpoints list 192\.0\.2\.11:6444 that no EndpointSlice does$/m);
  });

  it('says when it holds for an apiserver on the lease reconciler, when live replicas disagree on the plan, and when it is not ready', () => {
    const text = formatKubernetesService({ ...EMPTY, state: 'holding', lease_apiservers: ['cp-2'], config_mismatches: ['r2: def'], ready: false });
    assert.match(text, /^held for an apiserver on the lease reconciler: cp-2$/m);
    assert.match(text, /^plan abc differs from live replicas': r2: def$/m);
    assert.match(text, /^readiness: not ready \(\/readyz fails\)$/m);
  });

  it('says when no EndpointSlice of the Service exists', () => {
    assert.match(formatKubernetesService(EMPTY), /^no EndpointSlice labelled kubernetes\.io\/service-name=kubernetes$/m);
  });
});
