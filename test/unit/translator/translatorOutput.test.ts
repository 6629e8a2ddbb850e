// The translator's output: deterministic, and every field known to the Envoy API.
// Plans: test/support/sidecarPlans.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { translateSidecar } from '../../../src/translator/translator.js';
import { envoyRoot } from '../../../src/xds/protos.js';
import { CONTRACT, NO_PEERS, REROUTES, UNAVAILABLE } from '../../support/sidecarPlans.js';
import { throwawaySettingsForTestFile } from '../../support/translatorFixtures.js';
import { unknownFields } from '../../support/validate.js';

const settings = throwawaySettingsForTestFile('mvproxy-translator-');

describe('translateSidecar', () => {
  describe('output', () => {
    test('translating the same plan twice gives byte-identical resources', () => {
      assert.equal(JSON.stringify(translateSidecar(CONTRACT, settings)), JSON.stringify(translateSidecar(CONTRACT, settings)));
    });

    test('every field set is known to the loaded Envoy API, so protobuf encoding drops nothing', () => {
      const root = envoyRoot();
      const types = {
        clusters: 'envoy.config.cluster.v3.Cluster',
        endpoints: 'envoy.config.endpoint.v3.ClusterLoadAssignment',
        listeners: 'envoy.config.listener.v3.Listener',
        routes: 'envoy.config.route.v3.RouteConfiguration',
      } as const;
      for (const p of [NO_PEERS, REROUTES, UNAVAILABLE, CONTRACT]) {
        const resources = translateSidecar(p, settings);
        for (const [key, typeName] of Object.entries(types) as Array<[keyof typeof types, string]>) {
          for (const resource of resources[key]) assert.deepEqual(unknownFields(root.lookupType(typeName), resource, key), []);
        }
      }
    });
  });
});
