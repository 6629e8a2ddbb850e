// The peer part and the plan agree: discovery through a sidecar never lists
// less than the sidecar routes away from its apiserver, and lists a resource
// the local apiserver does not list only while the routes send it to a peer
// (or answer 503 for it). Checked for every sidecar of the planner's golden
// models (test/golden/planner) and of cluster models like the reconcile's
// (test/support/reconcileFixtures.ts).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { mergeDiscovery } from '../../../src/discovery/merge.js';
import type { APIGroupDiscoveryList } from '../../../src/model/discovery.js';
import type { ApiserverObservation, ClusterModel, ServedResource } from '../../../src/model/cluster.js';
import type { ApiserverDiscovery } from '../../../src/model/discovery.js';
import { parseAggregatedDiscovery } from '../../../src/model/discoveryDocument.js';
import { apiserverStandings } from '../../../src/model/liveness.js';
import { parseRequestPath } from '../../../src/model/requestInfo.js';
import { destinationForRequest } from '../../../src/planner/destination.js';
import { planSidecars } from '../../../src/planner/planner.js';
import { REPO } from '../../support/goldenCases.js';
import { BATCH, CORE, MIGRATION, model } from '../../support/reconcileFixtures.js';

const GRACE_MS = 300_000;

interface Case {
  name: string;
  model: ClusterModel;
  draining?: string[];
}

/** The golden models, each apiserver given the discovery its served set says (the models hold served sets only). */
function goldenCases(): Case[] {
  const dir = join(REPO, 'test', 'golden', 'planner');
  return readdirSync(dir)
    .filter((file) => file.endsWith('.model.json'))
    .sort()
    .map((file) => {
      const c = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { model: ClusterModel; draining?: string[] };
      const m: ClusterModel = { ...c.model, apiservers: c.model.apiservers.map(withDiscovery) };
      return { name: `golden ${file}`, model: m, ...(c.draining ? { draining: c.draining } : {}) };
    });
}

function withDiscovery(a: ApiserverObservation): ApiserverObservation {
  return a.discovery !== undefined || a.servedSet.length === 0 ? a : { ...a, discovery: discoveryOfServed(a.servedSet) };
}

function discoveryOfServed(served: readonly ServedResource[]): ApiserverDiscovery {
  const list = (core: boolean): unknown => {
    const groups = new Map<string, Map<string, unknown[]>>();
    for (const s of served.filter((r) => (r.group === '') === core)) {
      const versions = groups.get(s.group) ?? new Map<string, unknown[]>();
      groups.set(s.group, versions);
      const resources = versions.get(s.version) ?? [];
      versions.set(s.version, resources);
      const subresources = s.subresources.map((subresource) => ({ subresource, verbs: ['get'] }));
      resources.push({ resource: s.resource, scope: s.namespaced ? 'Namespaced' : 'Cluster', verbs: s.verbs, subresources });
    }
    const items = [...groups].map(([name, versions]) => ({
      metadata: { name },
      versions: [...versions].map(([version, resources]) => ({ version, resources })),
    }));
    return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
  };
  return { core: parseAggregatedDiscovery(list(true), [], '/api'), groups: parseAggregatedDiscovery(list(false), [], '/apis') };
}

function reconcileCases(): Case[] {
  const skew = (): ClusterModel => model({ 'kas-a': CORE, 'kas-b': [...CORE, ...BATCH], 'kas-c': [...CORE, ...MIGRATION] });
  const withApiserver = (m: ClusterModel, name: string, change: Partial<ApiserverObservation>): ClusterModel => ({
    ...m,
    apiservers: m.apiservers.map((a) => (a.endpoint.name === name ? { ...a, ...change } : a)),
  });
  const crd = skew();
  crd.localOnly = [{ group: 'batch', version: 'v1', source: 'CustomResourceDefinition' }];
  const doubted = skew();
  const a = doubted.apiservers[0] as ApiserverObservation;
  const discovery = a.discovery as ApiserverDiscovery;
  a.discovery = { ...discovery, dropped: [{ document: '/apis', group: 'batch', version: 'v1', path: '$.items[0]', reason: 'test', kind: 'malformed' }] };
  return [
    { name: 'three apiservers, each serving something the others lack', model: skew() },
    { name: 'a peer unreachable (its resources answer 503)', model: withApiserver(skew(), 'kas-b', { reachable: false }) },
    { name: 'the local apiserver unreachable (its sidecar routes around it)', model: withApiserver(skew(), 'kas-a', { reachable: false }) },
    { name: 'one apiserver drained', model: skew(), draining: ['kas-b'] },
    { name: 'a CRD group-version some peers list', model: crd },
    { name: 'the local apiserver dropped an entry of a group a peer serves', model: doubted },
    { name: 'the same resources everywhere', model: model({ 'kas-a': [...CORE, ...BATCH], 'kas-b': [...CORE, ...BATCH] }) },
  ];
}

/** group/version/resource of every resource a list holds. */
function resourcesOf(list: APIGroupDiscoveryList): Set<string> {
  return new Set(list.items.flatMap((g) => g.versions.flatMap((v) => v.resources.map((r) => `${g.metadata.name}/${v.version}/${r.resource}`))));
}

/** group/version/resource/subresource of every subresource the lists hold. */
function subresourcesOf(...lists: APIGroupDiscoveryList[]): Set<string> {
  return new Set(
    lists.flatMap((list) =>
      list.items.flatMap((g) =>
        g.versions.flatMap((v) =>
          v.resources.flatMap((r) => (r.subresources ?? []).map((s) => `${g.metadata.name}/${v.version}/${r.resource}/${s.subresource}`)),
        ),
      ),
    ),
  );
}

function pathOf(group: string, version: string, resource: string): string {
  return group === '' ? `/api/${version}/${resource}` : `/apis/${group}/${version}/${resource}`;
}

describe('the peer part and the plan agree', () => {
  for (const c of [...goldenCases(), ...reconcileCases()]) {
    test(c.name, () => {
      const standings = apiserverStandings(c.model, GRACE_MS);
      const plans = planSidecars(c.model, { standings, draining: new Set(c.draining ?? []) });
      for (const plan of plans) {
        const merged = mergeDiscovery(plan.node, c.model, c.model.now, { standings });
        // A sidecar whose apiserver's discovery is unknown gets no part: its filter lets the local apiserver answer.
        if (!merged.local) continue;
        for (const part of [merged.peer.core, merged.peer.groups]) {
          for (const group of part?.groups ?? []) {
            for (const version of group.versions) {
              const localResources = resourcesOf(merged.local[part?.document === 'core-discovery' ? 'core' : 'groups']);
              for (const { resource, subresources } of version.resources) {
                const gvr = `${group.metadata.name}/${version.version}/${resource}`;
                // A resource the local lists is in the part only for the subresources it lacks.
                if (!localResources.has(gvr)) {
                  const where = destinationForRequest(plan, parseRequestPath(pathOf(group.metadata.name, version.version, resource)));
                  assert.notEqual(where.kind, 'local', `${plan.node}: the peer part lists ${gvr}, routed to the local apiserver`);
                }
                for (const { subresource } of subresources ?? []) {
                  const where = destinationForRequest(plan, parseRequestPath(`${pathOf(group.metadata.name, version.version, resource)}/x/${subresource}`));
                  assert.notEqual(where.kind, 'local', `${plan.node}: the peer part lists ${gvr}/${subresource}, routed to the local apiserver`);
                }
              }
            }
          }
        }
        const listed = new Set([...resourcesOf(merged.core), ...resourcesOf(merged.groups)]);
        const groupVersions = new Set([...listed].map((gvr) => gvr.split('/').slice(0, 2).join('/')));
        for (const { match, destination } of plan.entries) {
          if (destination.kind === 'local') continue;
          if (match.kind === 'resource') {
            const gvr = `${match.group}/${match.version}/${match.resource}`;
            assert.ok(listed.has(gvr), `${plan.node}: routes ${gvr}${match.subresource ? `/${match.subresource}` : ''} away, but discovery does not list it`);
            if (match.subresource !== undefined)
              assert.ok(
                subresourcesOf(merged.core, merged.groups).has(`${gvr}/${match.subresource}`),
                `${plan.node}: routes ${gvr}/${match.subresource} away, but discovery does not list the subresource`,
              );
          }
          if (match.kind === 'group-document' && match.version !== undefined) {
            const gv = `${match.group}/${match.version}`;
            assert.ok(groupVersions.has(gv), `${plan.node}: routes the documents of ${gv} to peers, but discovery does not list it`);
          }
        }
      }
    });
  }
});
