import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { APIGroupDiscoveryList, ApiserverDiscovery, DroppedDiscoveryEntry } from '../../src/model/discovery.js';
import { DiscoveryShapeError, parseAggregatedDiscovery } from '../../src/model/discoveryDocument.js';
import { MAX_ROUTED_GROUP_VERSION_CHARS, MAX_ROUTED_RESOURCE_CHARS, routableDiscovery } from '../../src/model/routableDiscovery.js';
import { servedSetFromDiscovery } from '../../src/model/servedSet.js';
import type { SidecarPlan } from '../../src/planner/plan.js';
import { translateSidecar } from '../../src/translator/translator.js';
import { throwawaySettings } from '../support/translatorFixtures.js';
import { validateWithEnvoy } from '../support/validate.js';

function list(items: unknown[]): APIGroupDiscoveryList {
  return parseAggregatedDiscovery({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items });
}

// Shapes as kube-apiserver writes them: the core entry has no name, Go writes nil slices as null.
const CORE = list([
  {
    metadata: { creationTimestamp: null },
    versions: [
      {
        version: 'v1',
        resources: [
          {
            resource: 'pods',
            responseKind: { group: '', version: 'v1', kind: 'Pod' },
            scope: 'Namespaced',
            singularResource: 'pod',
            verbs: ['list', 'get', 'create', 'delete'],
            subresources: [
              { subresource: 'status', verbs: ['get', 'patch', 'update'] },
              { subresource: 'exec', verbs: ['create', 'get'] },
              { subresource: 'binding', verbs: ['create'] },
            ],
          },
          { resource: 'namespaces', scope: 'Cluster', singularResource: 'namespace', verbs: ['get', 'list'], responseKind: null },
        ],
      },
    ],
  },
]);

const GROUPS = list([
  {
    metadata: { name: 'batch', creationTimestamp: null },
    versions: [
      { version: 'v1', resources: [{ resource: 'jobs', scope: 'Namespaced', verbs: ['get'], subresources: [{ subresource: 'status', verbs: null }] }] },
    ],
  },
  {
    metadata: { name: 'apps' },
    versions: [
      { version: 'v1', resources: [{ resource: 'deployments', scope: 'Namespaced', verbs: ['get'] }] },
      { version: 'v1beta1', freshness: 'Stale' },
    ],
  },
  {
    metadata: { name: 'rbac.authorization.k8s.io' },
    versions: [{ version: 'v1', resources: [{ resource: 'clusterroles', scope: 'Cluster', verbs: ['get'] }] }],
  },
]);

const DISCOVERY: ApiserverDiscovery = { core: CORE, groups: GROUPS };

describe('servedSetFromDiscovery', () => {
  test('core resources come from /api with group ""', () => {
    const core = servedSetFromDiscovery(DISCOVERY).filter((r) => r.group === '');
    assert.deepEqual(
      core.map((r) => `${r.version}/${r.resource}`),
      ['v1/namespaces', 'v1/pods'],
    );
  });

  test('subresources are listed by name, sorted', () => {
    const pods = servedSetFromDiscovery(DISCOVERY).find((r) => r.resource === 'pods');
    assert.deepEqual(pods?.subresources, ['binding', 'exec', 'status']);
    const namespaces = servedSetFromDiscovery(DISCOVERY).find((r) => r.resource === 'namespaces');
    assert.deepEqual(namespaces?.subresources, []);
  });

  test('namespaced follows the scope', () => {
    const set = servedSetFromDiscovery(DISCOVERY);
    assert.equal(set.find((r) => r.resource === 'pods')?.namespaced, true);
    assert.equal(set.find((r) => r.resource === 'namespaces')?.namespaced, false);
    assert.equal(set.find((r) => r.resource === 'clusterroles')?.namespaced, false);
  });

  test('verbs are sorted', () => {
    const pods = servedSetFromDiscovery(DISCOVERY).find((r) => r.resource === 'pods');
    assert.deepEqual(pods?.verbs, ['create', 'delete', 'get', 'list']);
  });

  test('result is sorted by group, version, resource whatever the document order', () => {
    const set = servedSetFromDiscovery(DISCOVERY);
    assert.deepEqual(
      set.map((r) => `${r.group}/${r.version}/${r.resource}`),
      ['/v1/namespaces', '/v1/pods', 'apps/v1/deployments', 'batch/v1/jobs', 'rbac.authorization.k8s.io/v1/clusterroles'],
    );
    const reversed: ApiserverDiscovery = {
      core: CORE,
      groups: { ...GROUPS, items: [...GROUPS.items].reverse() },
    };
    assert.deepEqual(servedSetFromDiscovery(reversed), set);
  });
});

describe('parseAggregatedDiscovery', () => {
  const valid = { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [] };

  test('the core entry without a name gets name ""', () => {
    assert.equal(CORE.items[0]?.metadata.name, '');
  });

  test('null verbs and omitted resources become empty arrays', () => {
    const jobs = GROUPS.items[0]?.versions[0]?.resources[0];
    assert.deepEqual(jobs?.subresources?.[0]?.verbs, []);
    assert.deepEqual(GROUPS.items[1]?.versions[1]?.resources, []);
  });

  test('null responseKind is dropped, not kept as null', () => {
    const namespaces = CORE.items[0]?.versions[0]?.resources[1];
    assert.equal(namespaces !== undefined && 'responseKind' in namespaces, false);
  });

  test('unknown fields are kept', () => {
    const parsed = parseAggregatedDiscovery({
      ...valid,
      items: [
        { metadata: { name: 'x' }, futureField: 1, versions: [{ version: 'v1', resources: [{ resource: 'r', scope: 'Cluster', verbs: [], extra: 'e' }] }] },
      ],
    });
    assert.equal((parsed.items[0] as unknown as Record<string, unknown>)['futureField'], 1);
    assert.equal((parsed.items[0]?.versions[0]?.resources[0] as unknown as Record<string, unknown> | undefined)?.['extra'], 'e');
  });

  test('missing items is an error naming $.items', () => {
    assert.throws(() => parseAggregatedDiscovery({ ...valid, items: undefined }), /at \$\.items: expected an array/);
  });

  test('a non-aggregated APIGroupList is rejected with a hint', () => {
    assert.throws(() => parseAggregatedDiscovery({ kind: 'APIGroupList', apiVersion: 'v1', groups: [] }), /got kind "APIGroupList".*aggregated discovery/);
  });

  test('a wrong apiVersion is rejected', () => {
    assert.throws(() => parseAggregatedDiscovery({ ...valid, apiVersion: 'apidiscovery.k8s.io/v2beta1' }), /apiVersion "apidiscovery\.k8s\.io\/v2beta1"/);
  });

  test('a missing metadata.name of the core group and a null one read as ""', () => {
    const parsed = parseAggregatedDiscovery({ ...valid, items: [{ metadata: { name: null }, versions: [] }, { versions: [] }] });
    assert.deepEqual(
      parsed.items.map((g) => g.metadata.name),
      ['', ''],
    );
  });

  test("an entry without the document's types is dropped and reported with its path; its siblings stay", () => {
    const dropped: DroppedDiscoveryEntry[] = [];
    const parsed = parseAggregatedDiscovery(
      {
        ...valid,
        items: [
          {
            metadata: { name: 'apps' },
            versions: [
              {
                version: 'v1',
                resources: [
                  { resource: 'deployments', scope: 'Global', verbs: [] },
                  { resource: 'replicasets', scope: 'Namespaced', verbs: ['get'] },
                ],
              },
            ],
          },
        ],
      },
      dropped,
    );
    assert.deepEqual(
      parsed.items[0]?.versions[0]?.resources.map((r) => r.resource),
      ['replicasets'],
    );
    assert.deepEqual(dropped, [
      {
        document: '/apis',
        group: 'apps',
        version: 'v1',
        resource: 'deployments',
        path: '$.items[0].versions[0].resources[0].scope',
        reason: 'expected "Cluster" or "Namespaced", got "Global"',
        kind: 'malformed',
      },
    ]);
  });

  test("an entry whose name is not a string is reported under its parent's names only", () => {
    const dropped: DroppedDiscoveryEntry[] = [];
    parseAggregatedDiscovery(
      { ...valid, items: [{ metadata: { name: 'a' }, versions: [{ version: 'v1', resources: [{ resource: 7, scope: 'Cluster', verbs: [] }] }] }] },
      dropped,
    );
    assert.deepEqual(
      dropped.map((d) => [d.group, d.version, d.resource, d.path]),
      [['a', 'v1', undefined, '$.items[0].versions[0].resources[0].resource']],
    );
  });

  test('names are not judged when reading: a resource named "" stays in the document as the apiserver wrote it', () => {
    const dropped: DroppedDiscoveryEntry[] = [];
    const parsed = parseAggregatedDiscovery(
      {
        ...valid,
        items: [{ metadata: { name: 'a.example.com' }, versions: [{ version: 'v1', resources: [{ resource: '', scope: 'Cluster', verbs: ['get'] }] }] }],
      },
      dropped,
    );
    assert.equal(parsed.items[0]?.versions[0]?.resources[0]?.resource, '');
    assert.deepEqual(dropped, []);
  });

  test('a list metadata that is not an object reads as {} and is reported', () => {
    const dropped: DroppedDiscoveryEntry[] = [];
    const parsed = parseAggregatedDiscovery({ ...valid, metadata: 'x' }, dropped);
    assert.deepEqual(parsed.metadata, {});
    assert.equal(dropped[0]?.path, '$.metadata');
  });

  test('a body that is not an object is an error', () => {
    assert.throws(() => parseAggregatedDiscovery('<html>'), /at \$: expected an object/);
  });
});

// ---- malformed entries: each dropped alone ----------------------------------------

type Raw = Record<string, unknown>;
const raw = (items: unknown[]): Raw => ({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items });

function rawCore(): Raw {
  return raw([
    {
      metadata: { creationTimestamp: null },
      versions: [
        {
          version: 'v1',
          resources: [
            { resource: 'configmaps', scope: 'Namespaced', verbs: ['get', 'list'] },
            { resource: 'pods', scope: 'Namespaced', verbs: ['get'], subresources: [{ subresource: 'status', verbs: ['get'] }] },
          ],
        },
      ],
    },
  ]);
}

function rawGroups(): Raw {
  return raw([
    {
      metadata: { name: 'apps' },
      versions: [
        {
          version: 'v1',
          resources: [{ resource: 'deployments', scope: 'Namespaced', verbs: ['get'], subresources: [{ subresource: 'scale', verbs: ['get'] }] }],
        },
      ],
    },
    {
      metadata: { name: 'widgets.example.com' },
      versions: [
        {
          version: 'v1',
          resources: [{ resource: 'widgets', scope: 'Namespaced', verbs: ['get', 'list'], subresources: [{ subresource: 'status', verbs: ['get'] }] }],
        },
      ],
    },
    {
      metadata: { name: 'storagemigration.k8s.io' },
      versions: [{ version: 'v1', resources: [{ resource: 'storageversionmigrations', scope: 'Cluster', verbs: ['list'] }] }],
    },
  ]);
}

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

// Where a malformed entry goes: the items of /api or /apis, the versions of
// widgets.example.com, its v1 resources, or the subresources of widgets.
type Place = 'core group' | 'core resource' | 'group' | 'version' | 'resource' | 'subresource';

function inject(place: Place, entry: unknown): { core: Raw; groups: Raw } {
  return injectAll([[place, entry]]);
}

function injectAll(entries: Array<[Place, unknown]>): { core: Raw; groups: Raw } {
  const core = rawCore();
  const groups = rawGroups();
  const widgets = (groups['items'] as Raw[])[1] as Raw;
  const v1 = (widgets['versions'] as Raw[])[0] as Raw;
  const coreV1 = (((core['items'] as Raw[])[0] as Raw)['versions'] as Raw[])[0] as Raw;
  const target: Record<Place, unknown> = {
    'core group': core['items'],
    'core resource': coreV1['resources'],
    group: groups['items'],
    version: widgets['versions'],
    resource: v1['resources'],
    subresource: ((v1['resources'] as Raw[])[0] as Raw)['subresources'],
  };
  // In the middle: entries after it must survive too.
  for (const [place, entry] of entries) (target[place] as unknown[]).splice(1, 0, entry);
  return { core, groups };
}

const R = (resource: unknown, extra: Raw = {}): Raw => ({ resource, scope: 'Namespaced', verbs: ['get'], ...extra });
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
    const plan: SidecarPlan = {
      node: 'a',
      local: { name: 'a', address: { host: '10.0.0.1', port: 6443 } },
      peers: [{ name: 'b', address: { host: '10.0.0.2', port: 6443 } }],
      routes,
      groupDocuments: [],
    };
    const result = await validateWithEnvoy(translateSidecar(plan, throwawaySettings(dir)));
    assert.ok(result.ok, result.output);
  });
});
