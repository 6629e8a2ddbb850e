// The control plane's one decision step, pure: from what it observes (the
// cluster model) and what the operator asked (drains), to what every sidecar
// must have (its Envoy snapshot, its merged documents included) and the
// merged discovery its ext_proc responder answers documents too large to
// push with. No sockets, no clock, no files: the same inputs
// always give the same outputs, so a restarted control plane pushes the very
// versions the sidecars already run. ControlPlane (controlPlane.ts) runs it
// whenever the model or the drains change and hands the results to the servers.
import type { ServeConfig, ServedApiserver } from './config.js';
import type { ClusterModel } from '../model/cluster.js';
import { planSidecars } from '../planner/planner.js';
import type { SidecarPlan } from '../planner/plan.js';
import { translateSidecar, translationCache, type SidecarDocuments, type TranslationCache, type TranslatorSettings } from '../translator/translator.js';
import { encodeDocumentSet } from '../xds/documentSet.js';
import type { FilterModules } from '../xds/filterModule.js';
import { peerParts } from '../discovery/peerPart.js';
import type { MergedDocument } from '../model/requestInfo.js';
import { makeSnapshot, type Snapshot } from '../xds/snapshot.js';
import { CONTROL_PLANE_CLUSTER } from '../xds/bootstrap.js';
import type { MergedDiscovery } from '../discovery/index.js';
import { memoizedMerge } from '../discovery/mergeMemo.js';
import { apiserverStandings, type Standings } from '../model/liveness.js';

export interface ReconcileSettings {
  /** The translator settings of each declared sidecar, by node (apiserver name): other nodes get nothing. */
  sidecars: ReadonlyMap<string, TranslatorSettings>;
  /** How long a departed apiserver still counts (planner and merge alike). */
  departedGraceMs: number;
}

/** What one declared sidecar gets. */
export interface ReconciledSidecar {
  plan: SidecarPlan;
  /** Its Envoy resources, versioned by content. */
  snapshot: Snapshot;
  /**
   * Its merged discovery, merged on the first call and kept: the peer parts
   * pushed to a sidecar whose apiserver's discovery is known come from it at
   * every reconcile (xds/documentSet.ts), and its ext_proc responder answers
   * documents too large to push from it.
   */
  discovery: () => MergedDiscovery;
}

export interface Reconciled {
  /** One plan per apiserver of the model, sorted by node (what status and explain read). */
  plans: SidecarPlan[];
  /** Every apiserver's standing, as the plans and merges saw it (and the event journal reads). */
  standings: Standings;
  /** Every declared sidecar the model plans for, in plan order. */
  sidecars: Map<string, ReconciledSidecar>;
  /** What was translated, for the next reconcile to reuse (translator.ts). */
  translations: TranslationCache;
  /** Encoded document sets by their kind and peer digest, for the next reconcile to reuse. */
  documentSets: Map<string, Uint8Array>;
  /** Merged discovery by its inputs (discovery/mergeMemo.ts), for the next reconcile to reuse. */
  merges: Map<string, MergedDiscovery>;
}

/**
 * model + drains + settings -> plans -> per-node snapshots and merged
 * discovery. `previous`, the last result, only saves work: what it translated
 * is reused when translated again (the outputs are the same without it).
 */
export function reconcile(model: ClusterModel, draining: ReadonlySet<string>, settings: ReconcileSettings, previous?: Reconciled): Reconciled {
  // Who is available, unavailable or gone: decided once, for the plans, the merges and the event journal alike.
  const standings = apiserverStandings(model, settings.departedGraceMs);
  const plans = planSidecars(model, { standings, draining });
  const sidecars = new Map<string, ReconciledSidecar>();
  // Every sidecar has a cluster per peer: translated (and so hashed and encoded) once for all of them.
  const cache = translationCache(previous?.translations);
  // A sidecar whose apiserver's discovery is unknown (down, starting) has no
  // merged documents and no peer part (it keeps what it holds), the same
  // whichever sidecar it is: computed once for all of them.
  let unknownLocal: (() => MergedDiscovery) | undefined;
  const known = new Set(model.apiservers.filter((a) => a.discovery !== undefined).map((a) => a.endpoint.name));
  const merges = new Map<string, MergedDiscovery>();
  // Only the last reconcile's merges, never `previous` itself: a closure that
  // held it would keep every reconcile ever made alive, one through the next.
  const previousMerges = previous?.merges;
  const merged = (node: string) => memoized(() => memoizedMerge(node, model, model.now, { standings }, merges, previousMerges));
  const documentSets = new Map<string, Uint8Array>();
  for (const plan of plans) {
    const translatorSettings = settings.sidecars.get(plan.node);
    if (!translatorSettings) continue;
    let discovery = merged(plan.node);
    if (!known.has(plan.node)) {
      unknownLocal ??= discovery;
      discovery = unknownLocal;
    }
    // Peer parts only where the sidecar's own apiserver's document is known; without it the document filters hold nothing (translator/documentFilters.ts).
    const documents = known.has(plan.node) ? encodedDocuments(discovery(), documentSets, previous?.documentSets) : undefined;
    sidecars.set(plan.node, { plan, snapshot: makeSnapshot(translateSidecar(plan, translatorSettings, cache, documents)), discovery });
  }
  return { plans, standings, sidecars, translations: cache, documentSets, merges };
}

/**
 * A sidecar's peer parts, encoded for its document filters; equal sets are
 * one object whatever the number of sidecars and reconciles (the translator
 * builds one filter configuration per set object).
 */
function encodedDocuments(merged: MergedDiscovery, sets: Map<string, Uint8Array>, previous: ReadonlyMap<string, Uint8Array> | undefined): SidecarDocuments {
  const documents = new Map<MergedDocument, Uint8Array>();
  for (const part of peerParts(merged)) {
    const encoded = encodeDocumentSet(part);
    // The kind byte and the peer digest (a hash of everything after it): equal keys, equal bytes.
    const key = Buffer.from(encoded.subarray(5, 70)).toString('latin1');
    const set = sets.get(key) ?? previous?.get(key) ?? encoded;
    sets.set(key, set);
    documents.set(part.document, set);
  }
  return documents;
}

/** `make()`, called once, on first use; `make` (and what it holds) is let go once called. */
function memoized<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  let maker: (() => T) | undefined = make;
  return () => {
    if (made === undefined) {
      made = { value: (maker as () => T)() };
      maker = undefined;
    }
    return made.value;
  };
}

/** What reconcileSettings reads of the serve configuration. */
export type ReconcileConfig = Pick<ServeConfig, 'apiservers' | 'tls' | 'peerEgressProxy' | 'departedGraceMs' | 'requestTimeoutSeconds'>;

/** The reconcile settings a serve configuration gives, with the compiled filter module every sidecar carries. */
export function reconcileSettings(config: ReconcileConfig, filterModules: FilterModules, clientCaSha256?: string): ReconcileSettings {
  const sidecars = new Map<string, TranslatorSettings>();
  for (const apiserver of config.apiservers) {
    if (!sidecars.has(apiserver.name)) sidecars.set(apiserver.name, sidecarTranslatorSettings(config, apiserver, filterModules, clientCaSha256));
  }
  return { sidecars, departedGraceMs: config.departedGraceMs };
}

function sidecarTranslatorSettings(
  config: ReconcileConfig,
  apiserver: ServedApiserver,
  filterModules: FilterModules,
  clientCaSha256: string | undefined,
): TranslatorSettings {
  const { tls } = config;
  return {
    listener: {
      address: apiserver.sidecar.host,
      port: apiserver.sidecar.port,
      servingCertPath: apiserver.sidecar.servingCert,
      servingKeyPath: apiserver.sidecar.servingKey,
      clientCaPath: tls.clientCa,
      ...(clientCaSha256 === undefined ? {} : { clientCaSha256 }),
    },
    upstream: {
      frontProxyCertPath: tls.frontProxyClientCert,
      frontProxyKeyPath: tls.frontProxyClientKey,
      peerCaPath: tls.peerCa,
      serverName: tls.peerServerName,
      ...(config.peerEgressProxy ? { egressProxy: config.peerEgressProxy } : {}),
    },
    controlPlaneCluster: CONTROL_PLANE_CLUSTER,
    filterModule: filterModules.identity,
    documentModule: filterModules.documents,
    // The apiservers' --request-timeout; the other limits are kube-apiserver's defaults (DEFAULT_SIDECAR_LIMITS).
    limits: { requestTimeoutSeconds: config.requestTimeoutSeconds },
  };
}
