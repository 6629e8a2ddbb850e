// The translator's output for every representative plan passes envoy --mode validate.
// Plans: test/support/sidecarPlans.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { SidecarPlan } from '../../../src/planner/plan.js';
import { translateSidecar } from '../../../src/translator/translator.js';
import { CONTRACT, FALLBACK, LONG_NAMES, NO_PEERS, REROUTES, UNAVAILABLE } from '../../support/sidecarPlans.js';
import { throwawaySettingsForTestFile } from '../../support/translatorFixtures.js';
import { validateWithEnvoy } from '../../support/validate.js';

const settings = throwawaySettingsForTestFile('mvproxy-translator-');

describe('translateSidecar', () => {
  describe('envoy --mode validate', () => {
    const cases: Array<[string, SidecarPlan]> = [
      ['a sidecar without peers', NO_PEERS],
      ['a sidecar rerouting resources and subresources to peers', REROUTES],
      ['a sidecar answering 503 for unavailable resources', UNAVAILABLE],
      ['a sidecar whose apiserver is down, falling back to peers', FALLBACK],
      ['a sidecar with every grammar corner case', CONTRACT],
      ['a sidecar routing the longest built-in names', LONG_NAMES],
    ];
    test('Envoy accepts the configuration of a sidecar reaching peers through an egress proxy', async () => {
      const egress = { ...settings, upstream: { ...settings.upstream, egressProxy: { host: '127.0.0.1', port: 3128 } } };
      const result = await validateWithEnvoy(translateSidecar(REROUTES, egress));
      assert.ok(result.ok, result.output);
    });
    for (const [what, p] of cases) {
      test(`Envoy accepts the configuration of ${what}`, async () => {
        const result = await validateWithEnvoy(translateSidecar(p, settings));
        assert.ok(result.ok, result.output);
      });
    }
  });
});
