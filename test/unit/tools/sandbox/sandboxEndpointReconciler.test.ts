// Who keeps the kubernetes Service's endpoints in each sandbox mode, as each would run for real.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { endpointReconcilerFor } from '../../../../src/tools/sandbox/options.js';

describe("the sandbox's kubernetes Service publisher", () => {
  it("in mode mvproxy the apiservers' own reconciler is off: mvproxy's control plane publishes the sidecars", () => {
    assert.equal(endpointReconcilerFor('mvproxy', 'namespace'), 'none');
  });

  it("in modes none and upstream every apiserver's lease reconciler publishes it, kubeadm's default", () => {
    assert.deepEqual([endpointReconcilerFor('none', 'namespace'), endpointReconcilerFor('upstream', 'namespace')], ['lease', 'lease']);
  });

  it('on loopback no reconciler runs: the API refuses loopback addresses in Endpoints', () => {
    assert.deepEqual([endpointReconcilerFor('none', 'loopback'), endpointReconcilerFor('upstream', 'loopback')], ['none', 'none']);
  });
});
