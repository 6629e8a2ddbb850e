// negotiateDiscovery: which aggregated discovery (if any) an Accept header asks for.
// Fixtures: test/support/discoveryFixtures.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { negotiateDiscovery } from '../../../src/discovery/index.js';
import { AGG_JSON, AGG_JSON_V2BETA1, AGG_NOPEER, AGG_PROTOBUF } from '../../support/discoveryFixtures.js';

describe('negotiateDiscovery', () => {
  const table: [string, string | undefined, ReturnType<typeof negotiateDiscovery>][] = [
    // client-go's acceptDiscoveryFormats (AcceptV2, AcceptV2Beta1, AcceptV1): kubectl and controllers
    ['client-go default', `${AGG_JSON},${AGG_JSON_V2BETA1},application/json`, { kind: 'aggregated', format: 'json' }],
    // client-go with NoPeerDiscovery: AcceptV2NoPeer first
    ['client-go nopeer', `${AGG_NOPEER},${AGG_JSON},${AGG_JSON_V2BETA1},application/json`, { kind: 'nopeer' }],
    // mvproxy's own fetcher and upstream peerproxy: AcceptV2Local (nopeer), AcceptV2, AcceptV1
    ['mvproxy discovery fetcher', `${AGG_NOPEER},${AGG_JSON},application/json`, { kind: 'nopeer' }],
    // client-go with UseLegacyDiscovery (AcceptV1)
    ['client-go legacy', 'application/json', { kind: 'legacy' }],
    // client-go 1.26 to 1.32 era: v2beta1 then JSON
    ['old client-go', `${AGG_JSON_V2BETA1},application/json`, { kind: 'legacy' }],
    ['no Accept header', undefined, { kind: 'legacy' }],
    ['empty Accept header', '', { kind: 'legacy' }],
    ['wildcard', '*/*', { kind: 'legacy' }],
    ['protobuf aggregated', `${AGG_PROTOBUF},${AGG_JSON},application/json`, { kind: 'aggregated', format: 'protobuf' }],
    ['protobuf nopeer', `${AGG_PROTOBUF};profile=nopeer,application/json`, { kind: 'nopeer' }],
    ['q-values reorder', `${AGG_JSON};q=0.5,application/json;q=0.9`, { kind: 'legacy' }],
    ['q=0 is not acceptable', `application/json;q=0,${AGG_JSON}`, { kind: 'aggregated', format: 'json' }],
    [
      'parameters in any order and with spaces',
      'application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io',
      { kind: 'aggregated', format: 'json' },
    ],
    ['quoted parameter values', 'application/json;g="apidiscovery.k8s.io";v="v2";as="APIGroupDiscoveryList"', { kind: 'aggregated', format: 'json' }],
    ['unsupported media type is skipped', `text/html,${AGG_JSON}`, { kind: 'aggregated', format: 'json' }],
    ['a conversion discovery cannot do is skipped', `application/json;as=Table;v=v1;g=meta.k8s.io,${AGG_JSON}`, { kind: 'aggregated', format: 'json' }],
    [
      'aggregated YAML is not rendered; next range wins',
      `application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,${AGG_JSON}`,
      { kind: 'aggregated', format: 'json' },
    ],
    ['media type is case-insensitive', 'Application/JSON;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', { kind: 'aggregated', format: 'json' }],
  ];
  for (const [name, accept, expected] of table) {
    test(`Accept negotiation: ${name}`, () => {
      assert.deepEqual(negotiateDiscovery(accept), expected);
    });
  }
});
