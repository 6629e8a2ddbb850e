// routableDiscovery: the entries too long to route are dropped, and Envoy accepts the longest names it keeps.
// Documents: test/support/discoveryDocuments.ts.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { parseAggregatedDiscovery } from '../../../src/model/discoveryDocument.js';
import { MAX_ROUTED_GROUP_VERSION_CHARS, MAX_ROUTED_RESOURCE_CHARS, routableDiscovery } from '../../../src/model/routableDiscovery.js';
import { servedSetFromDiscovery } from '../../../src/model/servedSet.js';
import type { SidecarPlan } from '../../../src/planner/plan.js';
import { planOf } from '../../support/sidecarPlans.js';
import { translateSidecar } from '../../../src/translator/translator.js';
import { R, inject, raw, rawGroups } from '../../support/discoveryDocuments.js';
import { throwawaySettings } from '../../support/translatorFixtures.js';
import { validateWithEnvoy } from '../../support/validate.js';

describe('routableDiscovery', () => {
  test('a document with nothing to drop is returned as the same object', () => {
    const list = parseAggregatedDiscovery(rawGroups());
    assert.equal(routableDiscovery(list, '/apis').list, list);
    assert.deepEqual(routableDiscovery(list, '/apis').dropped, []);
  });

  test('the answer is computed once per document object', () => {
    const list = parseAggregatedDiscovery(inject('resource', R('')).groups);
    assert.equal(routableDiscovery(list, '/apis'), routableDiscovery(list, '/apis'));
  });

  test('what is left of a document shares its untouched groups', () => {
    const list = parseAggregatedDiscovery(inject('resource', R('')).groups);
    const routable = routableDiscovery(list, '/apis').list;
    assert.notEqual(routable, list);
    assert.equal(routable.items[0], list.items[0], 'apps is untouched');
    assert.notEqual(routable.items[1], list.items[1], 'widgets.example.com lost an entry');
  });

  test('every built-in name of kube-apiserver 1.36 and 1.37 that is longest in its kind is routable', () => {
    const groups = parseAggregatedDiscovery(
      raw([
        {
          metadata: { name: 'admissionregistration.k8s.io' },
          versions: [
            {
              version: 'v1alpha1',
              resources: [
                R('validatingadmissionpolicybindings'),
                R('mutatingwebhookconfigurations'),
                R('validatingadmissionpolicies', { subresources: [{ subresource: 'status', verbs: ['get'] }] }),
              ],
            },
          ],
        },
        {
          metadata: { name: 'certificates.k8s.io' },
          versions: [{ version: 'v1', resources: [R('certificatesigningrequests', { subresources: [{ subresource: 'approval', verbs: ['get'] }] })] }],
        },
        {
          metadata: { name: 'flowcontrol.apiserver.k8s.io' },
          versions: [{ version: 'v1beta3', resources: [R('prioritylevelconfigurations', { subresources: [{ subresource: 'status', verbs: ['get'] }] })] }],
        },
      ]),
    );
    assert.deepEqual(routableDiscovery(groups, '/apis').dropped, []);
  });
});

describe('the route-matcher budget', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mvproxy-servedset-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('Envoy accepts the routes of the longest names routableDiscovery keeps', async () => {
    const longGroup = `${'g.'.repeat(30)}${'g'.repeat(MAX_ROUTED_GROUP_VERSION_CHARS - 60 - 2)}`;
    const version = 'v1';
    assert.equal(longGroup.length + version.length, MAX_ROUTED_GROUP_VERSION_CHARS);
    const resource = 'r'.repeat(MAX_ROUTED_RESOURCE_CHARS);
    const shortResource = 'r'.repeat(MAX_ROUTED_RESOURCE_CHARS - 24);
    const subresource = 's'.repeat(24);
    const longVersion = `v${'a'.repeat(62)}`;
    const kept = parseAggregatedDiscovery(
      raw([
        {
          metadata: { name: longGroup },
          versions: [{ version, resources: [R(resource), R(shortResource, { subresources: [{ subresource, verbs: ['get'] }] })] }],
        },
        { metadata: { name: 'g' }, versions: [{ version: longVersion, resources: [R(resource)] }] },
      ]),
    );
    assert.deepEqual(routableDiscovery(kept, '/apis').dropped, []);
    const core = parseAggregatedDiscovery(
      raw([{ versions: [{ version: longVersion, resources: [R(resource), R(shortResource, { subresources: [{ subresource, verbs: ['get'] }] })] }] }]),
      [],
      '/api',
    );
    assert.deepEqual(routableDiscovery(core, '/api').dropped, []);

    const peers = { kind: 'peers' as const, peers: ['b'] };
    const served = servedSetFromDiscovery({ core, groups: kept });
    const routes = served.flatMap((r) => [
      { group: r.group, version: r.version, resource: r.resource, action: peers },
      ...r.subresources.map((subresource) => ({ group: r.group, version: r.version, resource: r.resource, subresource, action: peers })),
    ]);
    const plan: SidecarPlan = planOf({
      node: 'a',
      local: { name: 'a', address: { host: '10.0.0.1', port: 6443 } },
      peers: [{ name: 'b', address: { host: '10.0.0.2', port: 6443 } }],
      routes,
    });
    const result = await validateWithEnvoy(translateSidecar(plan, throwawaySettings(dir)));
    assert.ok(result.ok, result.output);
  });
});
