// Malformed discovery entries: each is dropped alone (and reported), every other resource stays served.
// Documents: test/support/discoveryDocuments.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ApiserverDiscovery, DroppedDiscoveryEntry } from '../../../src/model/discovery.js';
import { DiscoveryShapeError, parseAggregatedDiscovery } from '../../../src/model/discoveryDocument.js';
import { MAX_ROUTED_GROUP_VERSION_CHARS, MAX_ROUTED_RESOURCE_CHARS, routableDiscovery } from '../../../src/model/routableDiscovery.js';
import { servedSetFromDiscovery } from '../../../src/model/servedSet.js';
import { R, inject, injectAll, rawCore, rawGroups, type Place, type Raw } from '../../support/discoveryDocuments.js';

/** Reads both documents as the discovery fetcher does: what is served, and every dropped entry. */
function read(core: Raw, groups: Raw): { served: string[]; dropped: DroppedDiscoveryEntry[] } {
  const dropped: DroppedDiscoveryEntry[] = [];
  const discovery: ApiserverDiscovery = {
    core: parseAggregatedDiscovery(core, dropped, '/api'),
    groups: parseAggregatedDiscovery(groups, dropped, '/apis'),
  };
  dropped.push(...routableDiscovery(discovery.core, '/api').dropped, ...routableDiscovery(discovery.groups, '/apis').dropped);
  const served = servedSetFromDiscovery(discovery).flatMap((r) => {
    const id = `${r.group}/${r.version}/${r.resource}`;
    return [id, ...r.subresources.map((s) => `${id}/${s}`)];
  });
  return { served, dropped };
}

const BASELINE = read(rawCore(), rawGroups()).served;

const V = (version: unknown, extra: Raw = {}): Raw => ({ version, resources: [R('gadgets')], ...extra });
const G = (name: unknown, extra: Raw = {}): Raw => ({ metadata: { name }, versions: [V('v1')], ...extra });

/** [what, where, the entry, names of the dropped entry (group, version, resource, subresource), kind]. */
const MALFORMED: Array<[string, Place, unknown, Array<string | undefined>, DroppedDiscoveryEntry['kind']?]> = [
  ['a resource named ""', 'resource', R(''), ['widgets.example.com', 'v1', '']],
  ['a resource without a name', 'resource', { scope: 'Namespaced', verbs: ['get'] }, ['widgets.example.com', 'v1', '']],
  ['a resource name with "/"', 'resource', R('gadgets/status'), ['widgets.example.com', 'v1', 'gadgets/status']],
  ['a resource name with a space', 'resource', R('gad gets'), ['widgets.example.com', 'v1', 'gad gets']],
  ['a resource name in upper case', 'resource', R('Gadgets'), ['widgets.example.com', 'v1', 'Gadgets']],
  ['a resource named ".."', 'resource', R('..'), ['widgets.example.com', 'v1', '..']],
  ['a resource named "."', 'resource', R('.'), ['widgets.example.com', 'v1', '.']],
  ['a resource name with a percent-escape', 'resource', R('a%2Fb'), ['widgets.example.com', 'v1', 'a%2Fb']],
  ['a resource name with a regex metacharacter', 'resource', R('gadgets.*'), ['widgets.example.com', 'v1', 'gadgets.*']],
  ['a resource name starting with "-"', 'resource', R('-gadgets'), ['widgets.example.com', 'v1', '-gadgets']],
  ['a resource name of 64 characters', 'resource', R('a'.repeat(64)), ['widgets.example.com', 'v1', 'a'.repeat(64)]],
  [
    'a resource name too long for a route matcher',
    'resource',
    R('a'.repeat(MAX_ROUTED_RESOURCE_CHARS + 1)),
    ['widgets.example.com', 'v1', 'a'.repeat(MAX_ROUTED_RESOURCE_CHARS + 1)],
    'unroutable',
  ],
  ['a resource name that is not a string', 'resource', R(7), ['widgets.example.com', 'v1', undefined]],
  ['a resource with an unknown scope', 'resource', R('gadgets', { scope: 'Global' }), ['widgets.example.com', 'v1', 'gadgets']],
  ['a resource without a scope', 'resource', R('gadgets', { scope: undefined }), ['widgets.example.com', 'v1', 'gadgets']],
  ['a resource whose verbs are not a list', 'resource', R('gadgets', { verbs: 'get' }), ['widgets.example.com', 'v1', 'gadgets']],
  ['a resource with a verb that is not a string', 'resource', R('gadgets', { verbs: ['get', 7] }), ['widgets.example.com', 'v1', 'gadgets']],
  ['a resource with a short name that is not a string', 'resource', R('gadgets', { shortNames: [1] }), ['widgets.example.com', 'v1', 'gadgets']],
  ['a resource whose responseKind is not an object', 'resource', R('gadgets', { responseKind: 'Gadget' }), ['widgets.example.com', 'v1', 'gadgets']],
  ['a resource whose singularResource is not a string', 'resource', R('gadgets', { singularResource: 5 }), ['widgets.example.com', 'v1', 'gadgets']],
  ['a resource whose subresources are not a list', 'resource', R('gadgets', { subresources: { status: {} } }), ['widgets.example.com', 'v1', 'gadgets']],
  ['a resource entry that is a string', 'resource', 'gadgets', ['widgets.example.com', 'v1', undefined]],
  ['a resource entry that is null', 'resource', null, ['widgets.example.com', 'v1', undefined]],
  ['a resource listed twice (the second is dropped)', 'resource', R('widgets', { verbs: ['delete'] }), ['widgets.example.com', 'v1', 'widgets']],
  ['a subresource named ""', 'subresource', { subresource: '', verbs: ['get'] }, ['widgets.example.com', 'v1', 'widgets', '']],
  ['a subresource name with "/"', 'subresource', { subresource: 'a/b', verbs: ['get'] }, ['widgets.example.com', 'v1', 'widgets', 'a/b']],
  ['a subresource name in upper case', 'subresource', { subresource: 'Scale', verbs: ['get'] }, ['widgets.example.com', 'v1', 'widgets', 'Scale']],
  [
    'a subresource too long for a route matcher with its resource',
    'subresource',
    { subresource: 'a'.repeat(MAX_ROUTED_RESOURCE_CHARS), verbs: ['get'] },
    ['widgets.example.com', 'v1', 'widgets', 'a'.repeat(MAX_ROUTED_RESOURCE_CHARS)],
    'unroutable',
  ],
  ['a subresource whose verbs are not a list', 'subresource', { subresource: 'scale', verbs: 'get' }, ['widgets.example.com', 'v1', 'widgets', 'scale']],
  [
    'a subresource with an acceptedType that is not an object',
    'subresource',
    { subresource: 'scale', verbs: ['get'], acceptedTypes: ['Scale'] },
    ['widgets.example.com', 'v1', 'widgets', 'scale'],
  ],
  ['a subresource entry that is a number', 'subresource', 3, ['widgets.example.com', 'v1', 'widgets', undefined]],
  [
    'a subresource listed twice (the second is dropped)',
    'subresource',
    { subresource: 'status', verbs: ['patch'] },
    ['widgets.example.com', 'v1', 'widgets', 'status'],
  ],
  ['a version named ""', 'version', V(''), ['widgets.example.com', '']],
  ['a version in upper case', 'version', V('V2'), ['widgets.example.com', 'V2']],
  ['a version starting with a digit (not a DNS-1035 label)', 'version', V('2'), ['widgets.example.com', '2']],
  ['a version with "/"', 'version', V('v2/x'), ['widgets.example.com', 'v2/x']],
  ['a version named ".."', 'version', V('..'), ['widgets.example.com', '..']],
  ['a version that is not a string', 'version', V(2), ['widgets.example.com', undefined]],
  ['a version with an unknown freshness', 'version', V('v2', { freshness: 'Fresh' }), ['widgets.example.com', 'v2']],
  ['a version whose resources are not a list', 'version', V('v2', { resources: 'gadgets' }), ['widgets.example.com', 'v2']],
  ['a version listed twice (the second is dropped)', 'version', V('v1'), ['widgets.example.com', 'v1']],
  [
    'a group-version too long for a route matcher',
    'version',
    V(`v${'a'.repeat(MAX_ROUTED_GROUP_VERSION_CHARS - 'widgets.example.com'.length)}`),
    ['widgets.example.com', `v${'a'.repeat(MAX_ROUTED_GROUP_VERSION_CHARS - 'widgets.example.com'.length)}`],
    'unroutable',
  ],
  ['a group named "" under /apis', 'group', G(''), ['']],
  ['a group without metadata under /apis', 'group', { versions: [V('v1')] }, ['']],
  ['a group name in upper case', 'group', G('Gadgets.example.com'), ['Gadgets.example.com']],
  ['a group name with "/"', 'group', G('gadgets.example.com/v1'), ['gadgets.example.com/v1']],
  ['a group named ".."', 'group', G('..'), ['..']],
  ['a group name with a space', 'group', G('gadgets example'), ['gadgets example']],
  ['a group name longer than 253 characters', 'group', G(`${'a.'.repeat(127)}a`), [`${'a.'.repeat(127)}a`]],
  ['a group name that is not a string', 'group', G(42), [undefined]],
  ['a group whose metadata is not an object', 'group', { metadata: 'gadgets.example.com', versions: [] }, [undefined]],
  ['a group whose versions are not a list', 'group', G('gadgets.example.com', { versions: { v1: {} } }), ['gadgets.example.com']],
  ['a group listed twice (the second is dropped)', 'group', G('apps', { versions: [V('v2')] }), ['apps']],
  ['a group entry that is a string', 'group', 'gadgets.example.com', [undefined]],
  ['a named group in /api', 'core group', G('gadgets'), ['gadgets']],
  ['a core resource named ""', 'core resource', R(''), ['', 'v1', '']],
  ['a core resource name with "/"', 'core resource', R('pods/log'), ['', 'v1', 'pods/log']],
];

describe('malformed discovery entries', () => {
  for (const [what, place, entry, names, kind = 'malformed'] of MALFORMED) {
    test(`${what}: that entry alone is dropped and every other resource stays served`, () => {
      const { core, groups } = inject(place, entry);
      const { served, dropped } = read(core, groups);
      assert.deepEqual(served, BASELINE);
      assert.equal(dropped.length, 1, JSON.stringify(dropped));
      const [group, version, resource, subresource] = names;
      assert.deepEqual(
        [dropped[0]?.group, dropped[0]?.version, dropped[0]?.resource, dropped[0]?.subresource, dropped[0]?.kind],
        [group, version, resource, subresource, kind],
      );
      assert.equal(dropped[0]?.document, place.startsWith('core') ? '/api' : '/apis');
    });
  }

  test('the baseline serves what the table expects to survive', () => {
    assert.deepEqual(BASELINE, [
      '/v1/configmaps',
      '/v1/pods',
      '/v1/pods/status',
      'apps/v1/deployments',
      'apps/v1/deployments/scale',
      'storagemigration.k8s.io/v1/storageversionmigrations',
      'widgets.example.com/v1/widgets',
      'widgets.example.com/v1/widgets/status',
    ]);
  });

  test('every malformed entry at once: each is dropped and the rest is still served', () => {
    const { core, groups } = injectAll(MALFORMED.map(([, place, entry]) => [place, entry]));
    const { served, dropped } = read(core, groups);
    assert.deepEqual(served, BASELINE);
    assert.equal(dropped.length, MALFORMED.length);
  });

  test('the first of two entries with the same name is the one served', () => {
    const { core, groups } = inject('resource', R('widgets', { verbs: ['delete'] }));
    const dropped: DroppedDiscoveryEntry[] = [];
    const served = servedSetFromDiscovery({ core: parseAggregatedDiscovery(core, dropped, '/api'), groups: parseAggregatedDiscovery(groups, dropped) });
    assert.deepEqual(served.find((r) => r.resource === 'widgets')?.verbs, ['get', 'list']);
  });

  test('a resource without verbs (null, as Go writes a nil slice) is served: kube-apiserver lists the parent of a subresource so', () => {
    const { core, groups } = inject('resource', R('gadgets', { verbs: null, subresources: [{ subresource: 'status', verbs: ['get'] }] }));
    const { served, dropped } = read(core, groups);
    assert.deepEqual(dropped, []);
    assert.ok(served.includes('widgets.example.com/v1/gadgets/status'));
  });

  test('a body that is not JSON of an APIGroupDiscoveryList at all is still an error', () => {
    for (const body of [null, 7, 'x', [], { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', items: {} }]) {
      assert.throws(() => parseAggregatedDiscovery(body), DiscoveryShapeError, JSON.stringify(body));
    }
  });
});
