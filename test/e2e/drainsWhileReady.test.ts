// Drains that change while an apiserver becomes ready. Every drain re-plans
// at once (serve/controlPlane.ts) and must do so on the newest observation:
// a drain that dropped the model waiting in the reconcile throttle (kas-c
// now ready) left every plan on the older one (kas-c not ready, so drained)
// until the next change, and kas-c's sidecar sent all its traffic to peers
// while the control plane reported it in sync and undrained: the watch
// broken in the upgrade test (docs/upgrade-test.md, "The broken watch").
// Real apiservers, sidecars and control plane; the drains asked as an
// operator asks them, through the admin API.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestSandbox, type TestSandbox } from '../support/sandbox.js';
import { call, waitInSync, withAdminClient } from '../../src/entry/adminClient.js';

/**
 * Restarts of kas-c, each to the other version (its served set changes, as in
 * an upgrade): the old code lost kas-c's readiness in 1 of 4, then 3 of 6.
 */
const RESTARTS = 6;
const VERSIONS = ['v1.36.3', 'v1.37.2'] as const;
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';

describe('drains that change while kas-c becomes ready', () => {
  let tb: TestSandbox;

  const adminSocket = (): string => {
    const socket = tb.state().controlPlane?.adminSocket;
    if (!socket) throw new Error('sandbox has no control plane');
    return socket;
  };
  const setDrain = (apiserver: string, drained: boolean, wait: boolean): Promise<void> =>
    withAdminClient(adminSocket(), async (client) => {
      await call(client, drained ? 'Drain' : 'Undrain', { apiserver });
      if (wait) await waitInSync(client, 60_000);
    });

  /** Drains and undrains `apiserver` as fast as the admin API answers while `running()`; ends undrained. */
  const toggleDrain = async (apiserver: string, running: () => boolean): Promise<void> => {
    let drained = false;
    while (running() || drained) {
      // The drain record is written through kas-c: refused while it is down or its authorizer not yet synced.
      const written = await setDrain(apiserver, !drained, false).then(
        () => true,
        () => false,
      );
      if (written) drained = !drained;
      await sleep(written ? Math.random() * 30 : 100);
    }
  };

  before(async () => {
    tb = await startTestSandbox(
      [
        { name: 'kas-a', version: VERSIONS[1] },
        { name: 'kas-b', version: VERSIONS[1] },
        { name: 'kas-c', version: VERSIONS[0] },
      ].map((spec) => ({ ...spec, shutdownDelaySeconds: 2 })),
      { controllerManager: false },
    );
  });

  after(async () => {
    await tb?.sandbox.down();
  });

  it("after restarts of kas-c during drains of kas-a and kas-b, kas-c's sidecar sends its own resources to kas-c", async () => {
    const seen: string[] = [];
    for (let restart = 1; restart <= RESTARTS; restart++) {
      await setDrain('kas-c', true, true);
      await tb.sandbox.stopApiserver('kas-c');
      let toggling = true;
      const drains = Promise.all(['kas-a', 'kas-b'].map((name) => toggleDrain(name, () => toggling)));
      await tb.sandbox.startApiserver('kas-c', { version: VERSIONS[restart % 2] });
      await sleep(1500);
      toggling = false;
      await drains;
      await setDrain('kas-c', false, true);
      const explanation = await withAdminClient(adminSocket(), (client) =>
        call(client, 'Explain', { sidecar: 'kas-c', path: CONFIGMAPS, peer_proxied: false }),
      );
      seen.push(`restart ${restart}: ${explanation.destination} by ${explanation.rule}`);
    }
    assert.deepEqual(
      seen,
      Array.from({ length: RESTARTS }, (_, i) => `restart ${i + 1}: local by served-locally`),
    );
  });
});
