// The control plane's reconcile step, pure: cluster model + drains + settings
// -> plans -> each declared sidecar's snapshot and merged discovery. No
// sockets, files or clocks: the models are built here, the identity filter
// module is a few bytes.
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import assert from 'node:assert/strict';
import type { ApiserverObservation, ClusterModel } from '../../../src/model/cluster.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import { reconcile, reconcileSettings, type Reconciled } from '../../../src/serve/reconcile.js';
import { encodeSnapshot } from '../../../src/servers/snapshotStore.js';
import { LISTENER_NAME, ROUTE_CONFIG_NAME, peerClusterName, translateSidecar, translationCache } from '../../../src/translator/translator.js';
import { mergeDiscovery } from '../../../src/discovery/index.js';
import { type DecodedDocumentSet, decodeDocumentSet } from '../../../src/xds/documentSet.js';
import { PUSH_ORDER, TYPE_URL, snapshotVersions, type ResourceTypeUrl } from '../../../src/xds/snapshot.js';
import { BATCH, config, CORE, MIGRATION, model, NOW } from '../../support/reconcileFixtures.js';
import { GRACE_MS } from '../../support/clusterModel.js';
import { resourceRoutesOf } from '../../../src/planner/plan.js';
import type { TypedExtensionConfig } from '../../../src/generated/envoy/config/core/v3/TypedExtensionConfig.js';
import type { Wasm } from '../../../src/generated/envoy/extensions/filters/http/wasm/v3/Wasm.js';
import { unpack } from '../../support/translatorFixtures.js';

const WASM = { identity: Buffer.from('\0asm-not-really'), documents: Buffer.from('\0asm-documents') };

/** The bytes a document filter's configuration holds (0: nothing). */
function configuredBytes(config: TypedExtensionConfig): number {
  const wasm = unpack<Wasm>(config.typed_config, 'envoy.extensions.filters.http.wasm.v3.Wasm');
  return unpack<{ value?: Uint8Array }>(wasm.config?.configuration, 'google.protobuf.BytesValue').value?.length ?? 0;
}

function run(m: ClusterModel, opts: { declare?: readonly string[]; draining?: readonly string[] } = {}): Reconciled {
  const names = opts.declare ?? m.apiservers.map((a) => a.endpoint.name);
  return reconcile(m, new Set(opts.draining ?? []), reconcileSettings(config(names), WASM));
}

function sidecar(result: Reconciled, node: string): NonNullable<ReturnType<Reconciled['sidecars']['get']>> {
  const found = result.sidecars.get(node);
  assert.ok(found, `a sidecar ${node}`);
  return found;
}

/** The types whose version differs between two reconciles, per node. */
function changedTypes(before: Reconciled, after: Reconciled): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [node, { snapshot }] of after.sidecars) {
    const old = snapshotVersions(sidecar(before, node).snapshot);
    const now = snapshotVersions(snapshot);
    out[node] = PUSH_ORDER.filter((url) => old[url] !== now[url]).map(shortType);
  }
  return out;
}

function shortType(url: ResourceTypeUrl): string {
  return {
    [TYPE_URL.cluster]: 'CDS',
    [TYPE_URL.endpoint]: 'EDS',
    [TYPE_URL.listener]: 'LDS',
    [TYPE_URL.route]: 'RDS',
    [TYPE_URL.secret]: 'SDS',
    [TYPE_URL.extensionConfig]: 'ECDS',
  }[url];
}

/** The resource routes of a sidecar's plan, as `group/version/resource -> action`. */
function routes(result: Reconciled, node: string): string[] {
  return resourceRoutesOf(sidecar(result, node).plan).map((r) => {
    const action = r.action.kind === 'peers' ? `peers ${r.action.peers.join(',')}` : `unavailable ${r.action.servedBy.join(',')}`;
    return `${r.group}/${r.version}/${r.resource}${r.subresource ? `/${r.subresource}` : ''} -> ${action}`;
  });
}

/** Every cluster a sidecar's route configuration sends to. */
function routedClusters(result: Reconciled, node: string): string[] {
  const config = sidecar(result, node).snapshot.types[TYPE_URL.route].resources.get(ROUTE_CONFIG_NAME);
  assert.ok(config, 'the route configuration');
  const clusters = new Set<string>();
  JSON.stringify(config, (key, value: unknown) => {
    if (key === 'cluster' && typeof value === 'string') clusters.add(value);
    return value;
  });
  return [...clusters].sort();
}

describe('reconcile', () => {
  it('gives every declared apiserver a sidecar with a snapshot and merged discovery, in node order', () => {
    const result = run(model({ 'kas-b': CORE, 'kas-a': CORE }));
    assert.deepEqual([...result.sidecars.keys()], ['kas-a', 'kas-b']);
    assert.deepEqual(
      result.plans.map((p) => p.node),
      ['kas-a', 'kas-b'],
    );
    assert.equal(sidecar(result, 'kas-a').plan, result.plans[0]);
  });

  it('gives a node that is not in the config a plan but no snapshot and no merged discovery', () => {
    const result = run(model({ 'kas-a': CORE, 'kas-x': CORE }), { declare: ['kas-a'] });
    assert.deepEqual([...result.sidecars.keys()], ['kas-a']);
    assert.deepEqual(
      result.plans.map((p) => p.node),
      ['kas-a', 'kas-x'],
    );
  });

  it('sends a resource the local apiserver lacks to the peer that serves it', () => {
    const result = run(model({ 'kas-a': CORE, 'kas-b': [...CORE, ...MIGRATION] }));
    assert.deepEqual(routes(result, 'kas-a'), ['storagemigration.k8s.io/v1/storageversionmigrations -> peers kas-b']);
    assert.ok(routedClusters(result, 'kas-a').some((c) => c.startsWith(peerClusterName(['kas-b']))));
    assert.deepEqual(routes(result, 'kas-b'), []);
  });

  it("reroutes a drained apiserver's sidecar to the peers that also serve what it serves", () => {
    const m = model({ 'kas-a': [...CORE, ...BATCH], 'kas-b': [...CORE, ...BATCH] });
    assert.deepEqual(routes(run(m), 'kas-a'), []);
    const drained = run(m, { draining: ['kas-a'] });
    assert.deepEqual(routes(drained, 'kas-a'), [
      '/v1/namespaces -> peers kas-b',
      '/v1/pods -> peers kas-b',
      'batch/v1/cronjobs -> peers kas-b',
      'batch/v1/jobs -> peers kas-b',
    ]);
    assert.deepEqual(routes(drained, 'kas-b'), []);
  });

  it('gives byte-identical snapshots for the same model, so a restarted control plane changes no version', () => {
    const build = (): Reconciled => run(model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH], 'kas-c': [...CORE, ...MIGRATION] }), { draining: ['kas-c'] });
    const first = build();
    const second = build();
    for (const node of ['kas-a', 'kas-b', 'kas-c']) {
      const a = encodeSnapshot(sidecar(first, node).snapshot);
      const b = encodeSnapshot(sidecar(second, node).snapshot);
      assert.deepEqual(b.versions, a.versions, node);
      for (const url of PUSH_ORDER) {
        const bytes = (e: typeof a): string[] => [...(e.anys.get(url)?.values() ?? [])].map((any) => any.value.toString('base64'));
        assert.deepEqual(bytes(b), bytes(a), `${node} ${shortType(url)}`);
      }
    }
  });

  it("changes, when one apiserver starts serving something new, the route configurations and peer parts of the sidecars that must now send it there, and only its own sidecar's peer part (the built-in versions its legacy documents may lack)", () => {
    const before = run(model({ 'kas-a': CORE, 'kas-b': CORE, 'kas-c': CORE }));
    const after = run(model({ 'kas-a': CORE, 'kas-b': CORE, 'kas-c': [...CORE, ...MIGRATION] }));
    assert.deepEqual(changedTypes(before, after), { 'kas-a': ['RDS', 'ECDS'], 'kas-b': ['RDS', 'ECDS'], 'kas-c': ['ECDS'] });
  });

  it("changes, when one apiserver stops serving something only it served, the route configurations and peer parts of its peers' sidecars, and only its own sidecar's peer part", () => {
    const before = run(model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH], 'kas-c': CORE }));
    const after = run(model({ 'kas-a': CORE, 'kas-b': CORE, 'kas-c': CORE }));
    assert.deepEqual(changedTypes(before, after), { 'kas-a': ['RDS', 'ECDS'], 'kas-b': ['ECDS'], 'kas-c': ['RDS', 'ECDS'] });
  });

  it('gives peer parts to the document filters of every sidecar whose own apiserver is known, and empty configurations to the others', () => {
    const m = model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH] });
    const { discovery: _, ...blindB } = m.apiservers[1] as ApiserverObservation;
    const result = run({ ...m, apiservers: [m.apiservers[0] as ApiserverObservation, blindB] });
    /** Each document filter's configuration size in bytes (0: it holds nothing). */
    const held = (node: string): Record<string, number> => {
      const configs = [...sidecar(result, node).snapshot.types[TYPE_URL.extensionConfig].resources] as Array<[string, TypedExtensionConfig]>;
      return Object.fromEntries(configs.filter(([name]) => name.startsWith('mvproxy.discovery.')).map(([name, config]) => [name, configuredBytes(config)]));
    };
    const a = held('kas-a');
    assert.deepEqual(Object.keys(a), ['mvproxy.discovery.core', 'mvproxy.discovery.groups', 'mvproxy.discovery.openapi']);
    assert.ok((a['mvproxy.discovery.core'] ?? 0) > 0 && (a['mvproxy.discovery.groups'] ?? 0) > 0, 'kas-a holds its parts');
    assert.deepEqual(held('kas-b'), { 'mvproxy.discovery.core': 0, 'mvproxy.discovery.groups': 0, 'mvproxy.discovery.openapi': 0 });
  });

  it("gives each sidecar's document filters the peer part of its documents: kas-a, which lacks batch, gets batch's group", () => {
    const result = run(model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH] }));
    const groupSets = [...result.documentSets.values()].map((set) => decodeDocumentSet(Buffer.from(set))).filter((set) => set?.kind === 'group-discovery');
    /** Groups the set adds to aggregated documents (legacy-only nodes, the local built-in versions, have no aggregated fragment). */
    const aggregatedGroups = (set: DecodedDocumentSet | undefined): string[] =>
      (set?.groups ?? []).filter((group) => group.json !== '').map((group) => group.name);
    assert.deepEqual(groupSets.map(aggregatedGroups).sort(), [[], ['batch']]);
  });

  it('merges nothing again when no discovery changed: the next reconcile reuses every merge', () => {
    const m = model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH] });
    const settings = reconcileSettings(config(['kas-a', 'kas-b']), WASM);
    const before = reconcile(m, new Set(), settings);
    const after = reconcile({ ...m, now: m.now + 10_000 }, new Set(['kas-b']), settings, before);
    for (const node of ['kas-a', 'kas-b']) assert.equal(sidecar(after, node).discovery(), sidecar(before, node).discovery(), node);
  });

  it('keeps no earlier result alive: each reconcile lets go of the one before the last', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const m = model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH] });
    const settings = reconcileSettings(config(['kas-a', 'kas-b']), WASM);
    let result = reconcile(m, new Set(), settings);
    const first = new WeakRef(result);
    for (let i = 1; i <= 3; i++) result = reconcile({ ...m, now: m.now + i * 1000 }, new Set(), settings, result);
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    assert.equal(first.deref(), undefined, 'the first result is still reachable from the last');
    assert.ok(sidecar(result, 'kas-a').discovery());
  });

  it("merges every live apiserver's discovery into each sidecar's ext_proc document", () => {
    const result = run(model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH] }));
    for (const node of ['kas-a', 'kas-b']) {
      const discovery = sidecar(result, node).discovery();
      assert.deepEqual(discovery.sources.slice().sort(), ['kas-a', 'kas-b'], node);
      assert.deepEqual(
        discovery.groups.items.map((g) => g.metadata.name),
        ['batch'],
        node,
      );
      assert.deepEqual(discovery.core.items[0]?.versions[0]?.resources.map((r) => r.resource).sort(), ['namespaces', 'pods'], node);
    }
  });

  it("configures each sidecar's listener from its own declared address, and its filters with the injected module over ECDS, not in the listener", () => {
    const result = run(model({ 'kas-a': CORE, 'kas-b': CORE }));
    const { snapshot } = sidecar(result, 'kas-b');
    const listener = snapshot.types[TYPE_URL.listener].resources.get(LISTENER_NAME);
    assert.ok(listener && listener['@type'] === TYPE_URL.listener);
    assert.deepEqual(listener.address?.socket_address, { address: '10.0.0.2', port_value: 6443 });
    const inlineIn = (resource: unknown): unknown[] => {
      const inline: unknown[] = [];
      JSON.stringify(resource, (key, value: unknown) => {
        if (key === 'inline_bytes') inline.push(value);
        return value;
      });
      return inline;
    };
    assert.deepEqual(inlineIn(listener), [], 'a new module replaces no listener');
    for (const [name, config] of snapshot.types[TYPE_URL.extensionConfig].resources)
      assert.deepEqual(inlineIn(config), [(name === 'mvproxy.identity' ? WASM.identity : WASM.documents).toJSON()], name);
  });
  it('gives each sidecar whose apiserver has no known discovery the merge of its peers, as merged for it alone', () => {
    const m = model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH], 'kas-c': CORE, 'kas-d': CORE });
    const unknown = (a: ApiserverObservation): ApiserverObservation => {
      const { discovery: _, ...rest } = a;
      return { ...rest, servedSet: [], reachable: false };
    };
    const blind: ClusterModel = { ...m, apiservers: m.apiservers.map((a) => (['kas-c', 'kas-d'].includes(a.endpoint.name) ? unknown(a) : a)) };
    const result = run(blind);
    for (const node of ['kas-c', 'kas-d']) {
      assert.deepEqual(sidecar(result, node).discovery(), mergeDiscovery(node, blind, NOW, { standings: apiserverStandings(blind, GRACE_MS) }), node);
      assert.deepEqual(sidecar(result, node).discovery().sources, ['kas-a', 'kas-b'], node);
    }
  });

  it("merges a sidecar's discovery once, on first use, and gives the same document after", () => {
    const result = run(model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH] }));
    const first = sidecar(result, 'kas-a').discovery();
    assert.equal(sidecar(result, 'kas-a').discovery(), first);
  });

  it('gives the same snapshots when it reuses the last reconcile as when it starts from nothing', () => {
    const settings = reconcileSettings(config(['kas-a', 'kas-b', 'kas-c']), WASM);
    const before = reconcile(model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH], 'kas-c': CORE }), new Set(), settings);
    const m = model({ 'kas-a': CORE, 'kas-b': CORE, 'kas-c': [...CORE, ...MIGRATION] });
    const reused = reconcile(m, new Set(), settings, before);
    const fresh = reconcile(m, new Set(), settings);
    for (const node of ['kas-a', 'kas-b', 'kas-c']) assert.deepEqual(sidecar(reused, node).snapshot, sidecar(fresh, node).snapshot, node);
  });

  it('keeps the very resource objects a change leaves alone, so they are hashed and encoded once', () => {
    const settings = reconcileSettings(config(['kas-a', 'kas-b', 'kas-c']), WASM);
    const before = reconcile(model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH], 'kas-c': CORE }), new Set(), settings);
    // kas-c starts serving batch, which kas-b serves itself: kas-b's routes and every single-peer cluster stay as they were.
    const after = reconcile(model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH], 'kas-c': [...CORE, ...BATCH] }), new Set(), settings, before);
    const route = (r: Reconciled, node: string) => sidecar(r, node).snapshot.types[TYPE_URL.route].resources.get(ROUTE_CONFIG_NAME);
    const cluster = (r: Reconciled, node: string) => sidecar(r, node).snapshot.types[TYPE_URL.cluster].resources.get(peerClusterName(['kas-b']));
    assert.ok(route(before, 'kas-b'));
    assert.equal(route(after, 'kas-b'), route(before, 'kas-b'));
    assert.ok(cluster(before, 'kas-a'));
    assert.equal(cluster(after, 'kas-a'), cluster(before, 'kas-a'));
  });

  it('translates every sidecar the same with the translation cache its sidecars share as without it', () => {
    const m = model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH], 'kas-c': [...CORE, ...MIGRATION] });
    const settings = reconcileSettings(config(['kas-a', 'kas-b', 'kas-c']), WASM);
    const result = reconcile(m, new Set(), settings);
    const cache = translationCache();
    for (const plan of result.plans) {
      const own = settings.sidecars.get(plan.node);
      assert.ok(own);
      assert.deepEqual(translateSidecar(plan, own, cache), translateSidecar(plan, own), plan.node);
    }
  });
});
