// The bench's simulated Envoys know Envoy's protocol on their own
// (src/tools/bench/xdsTypes.ts): they subscribe to what the control plane pushes.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { XDS_PUSH_ORDER } from '../../../../src/tools/bench/xdsTypes.js';
import { PUSH_ORDER } from '../../../../src/xds/snapshot.js';

it('the simulated Envoys subscribe to every type the control plane pushes, in its push order', () => {
  assert.deepEqual(XDS_PUSH_ORDER, PUSH_ORDER);
});
