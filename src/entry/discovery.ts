// Entry module (docs/architecture.md, "The tools' way in"): Kubernetes
// discovery as the control plane reads it: the media types it asks for, and
// what an apiserver serves according to its aggregated discovery documents.
import { parseAggregatedDiscovery } from '../model/discoveryDocument.js';
export { decodeAggregatedProtobuf as decodeAggregatedDiscoveryProtobuf } from '../discovery/protobufDecode.js';
import { servedSetFromDiscovery } from '../model/servedSet.js';

export {
  AGGREGATED_DISCOVERY_ACCEPT,
  AGGREGATED_DISCOVERY_JSON,
  AGGREGATED_DISCOVERY_JSON_ACCEPT,
  AGGREGATED_DISCOVERY_NOPEER_JSON,
  AGGREGATED_DISCOVERY_PROTOBUF,
} from '../model/discovery.js';

/** What one apiserver serves, by its `/api` and `/apis` aggregated discovery. */
export interface DiscoveredServedSet {
  /** Every `group/version/resource` the control plane routes on (core group ""). */
  resources: ReadonlySet<string>;
  /** The API groups `/apis` lists. */
  groups: readonly string[];
}

/**
 * What an apiserver serves, read from the bodies of its `/api` and `/apis`
 * aggregated discovery (JSON, parsed) exactly as the control plane reads them;
 * throws when either is not an aggregated discovery document.
 */
export function servedByDiscovery(apiBody: unknown, apisBody: unknown): DiscoveredServedSet {
  const discovery = { core: parseAggregatedDiscovery(apiBody, [], '/api'), groups: parseAggregatedDiscovery(apisBody, [], '/apis') };
  return {
    resources: new Set(servedSetFromDiscovery(discovery).map((r) => `${r.group}/${r.version}/${r.resource}`)),
    groups: discovery.groups.items.map((i) => i.metadata.name).filter((name) => name !== ''),
  };
}
