// `mvproxy admin status`'s part about the `kubernetes` Service (src/cli/admin.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatKubernetesService } from '../../../src/cli/admin.js';

describe('admin status: the kubernetes Service', () => {
  it('prints nothing while publishing is off', () => {
    assert.equal(
      formatKubernetesService({ enabled: false, state: 'off', message: '', nodes: [], other_addresses: [], foreign_writes: 0, confirmed_at: '' }),
      '',
    );
  });

  it('names a node listed that no replica observes live (a node that died while every replica was down), and addresses no config entry publishes', () => {
    const text = formatKubernetesService({
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
});
