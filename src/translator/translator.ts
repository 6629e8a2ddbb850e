// The translator: a sidecar plan to the Envoy resources that implement it.
// Pure and deterministic: same plan and settings, byte-identical output.
import type { SidecarPlan } from '../planner/plan.js';
import { clustersFor, type UpstreamSet } from './clusters.js';
import { apiserverListener } from './listener.js';
import { LOCAL_CLUSTER, peerClusterName } from './names.js';
import { routeConfiguration } from './routes.js';
import { documentDelivery, type SidecarDocuments } from './documentFilters.js';
import { sidecarSecrets } from './secrets.js';
import type { EnvoyResources, TranslatorSettings } from './settings.js';
import { sidecarLimits } from './settings.js';
import type { Cluster } from '../generated/envoy/config/cluster/v3/Cluster.js';
import type { ClusterLoadAssignment } from '../generated/envoy/config/endpoint/v3/ClusterLoadAssignment.js';
import type { RouteConfiguration } from '../generated/envoy/config/route/v3/RouteConfiguration.js';

export type { EnvoyResources, TranslatorSettings } from './settings.js';
export type { SidecarDocuments } from './documentFilters.js';
export { DOCUMENT_FILTERS, DOCUMENT_PUSH_BUDGET_BYTES } from './documentFilters.js';
export { PEER_SERVER_NAME } from './settings.js';
export { PEER_PROXIED_HEADER } from './routes.js';
export { LISTENER_NAME, ROUTE_CONFIG_NAME, flavouredClusterName, peerClusterName, UPSTREAM_FLAVOURS } from './names.js';
export type { UpstreamFlavour } from './names.js';

interface TranslatedParts {
  readonly clusters: Map<string, { clusters: Cluster[]; endpoints: ClusterLoadAssignment[] }>;
  readonly routes: Map<string, RouteConfiguration>;
}

/**
 * What sidecars share, translated once: the clusters of an upstream set
 * (every sidecar has one per peer) and a route configuration (sidecars with
 * the same routes). Keyed by content, so a hit is exactly what translating
 * again would give, and the same objects go into every snapshot (which then
 * hashes and encodes each once: xds/snapshot.ts, snapshotStore.ts). Make one
 * per reconcile from the last one: what the last reconcile translated and
 * this one translates again is taken from it, so a change re-hashes and
 * re-encodes only what it changed (a CRD storm reconciles many times a
 * second). It holds what this reconcile and the last one translated, no more.
 */
export interface TranslationCache extends TranslatedParts {
  readonly previous: TranslatedParts | undefined;
}

export function translationCache(previous?: TranslationCache): TranslationCache {
  return { clusters: new Map(), routes: new Map(), previous: previous ? { clusters: previous.clusters, routes: previous.routes } : undefined };
}

function memo<T>(cache: Map<string, T> | undefined, previous: Map<string, T> | undefined, key: () => string, make: () => T): T {
  if (!cache) return make();
  const k = key();
  const value = cache.get(k) ?? previous?.get(k) ?? make();
  cache.set(k, value);
  return value;
}

/** The listener and secrets of a sidecar's settings (they depend on nothing else), made once per settings object. */
const bySettings = new WeakMap<TranslatorSettings, Map<string, Pick<EnvoyResources, 'listeners' | 'secrets'>>>();

function listenerAndSecrets(settings: TranslatorSettings, node: string): Pick<EnvoyResources, 'listeners' | 'secrets'> {
  const forSettings = bySettings.get(settings) ?? new Map<string, Pick<EnvoyResources, 'listeners' | 'secrets'>>();
  bySettings.set(settings, forSettings);
  const made = forSettings.get(node) ?? { listeners: [apiserverListener(settings, node)], secrets: sidecarSecrets(settings) };
  forSettings.set(node, made);
  return made;
}

/**
 * `documents`: the sidecar's merged documents, encoded (absent: each filter
 * keeps the documents it last received, or serves the local one).
 */
export function translateSidecar(plan: SidecarPlan, settings: TranslatorSettings, cache?: TranslationCache, documents?: SidecarDocuments): EnvoyResources {
  const sets = upstreamSets(plan);
  // clustersFor reads the set and settings.upstream only.
  const upstreamKey = cache ? JSON.stringify(settings.upstream) : '';
  const built = sets.map((set) => {
    const peers = set.name !== LOCAL_CLUSTER;
    return memo(
      cache?.clusters,
      cache?.previous?.clusters,
      () => `${peers}\n${set.name}\n${set.members.map((m) => `${m.name}@${m.address.host}:${m.address.port}`).join('\n')}\n${upstreamKey}`,
      () => clustersFor(set, settings, peers),
    );
  });
  const clusters = built.flatMap((b) => b.clusters).sort(byName((c) => c.name ?? ''));
  const endpoints = built.flatMap((b) => b.endpoints).sort(byName((e) => e.cluster_name ?? ''));

  const names = clusters.map((c) => c.name ?? '');
  const duplicate = names.find((name, i) => names.indexOf(name) !== i);
  if (duplicate !== undefined) {
    // Only possible with apiserver names that mimic a flavour suffix (`-h1`, `-front-proxy`); refuse rather than misroute.
    throw new Error(`apiserver names produce the cluster name ${JSON.stringify(duplicate)} twice (${plan.node})`);
  }

  const { extensionConfigs, overExtProc } = documentDelivery(settings, documents);
  return {
    clusters,
    endpoints,
    ...listenerAndSecrets(settings, plan.node),
    // routeConfiguration reads the plan's entries and the limits of the settings only.
    routes: [
      memo(
        cache?.routes,
        cache?.previous?.routes,
        () => JSON.stringify([plan.entries, sidecarLimits(settings), [...overExtProc]]),
        () => routeConfiguration(plan.entries, settings, overExtProc),
      ),
    ],
    extensionConfigs,
  };
}

/**
 * The local apiserver, each peer on its own (stable clusters, whether or not
 * a route uses them now), and each multi-peer set an entry spreads over: retries
 * move between hosts of one cluster only, so a set must be one cluster.
 */
function upstreamSets(plan: SidecarPlan): UpstreamSet[] {
  const byPeerName = new Map(plan.peers.map((peer) => [peer.name, peer]));
  const sets = new Map<string, UpstreamSet>();
  sets.set(LOCAL_CLUSTER, { name: LOCAL_CLUSTER, members: [plan.local] });
  for (const peer of plan.peers) sets.set(peerClusterName([peer.name]), { name: peerClusterName([peer.name]), members: [peer] });
  for (const { destination: action } of plan.entries) {
    if (action.kind !== 'peers') continue;
    const name = peerClusterName(action.peers);
    if (sets.has(name)) continue;
    const members = [...action.peers].sort().map((peerName) => {
      const peer = byPeerName.get(peerName);
      if (peer === undefined) throw new Error(`plan for ${plan.node} routes to unknown peer ${JSON.stringify(peerName)}`);
      return peer;
    });
    sets.set(name, { name, members });
  }
  return [...sets.values()];
}

function byName<T>(nameOf: (item: T) => string): (a: T, b: T) => number {
  return (a, b) => {
    const x = nameOf(a);
    const y = nameOf(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };
}
