// Merged (peer-aggregated) discovery: pure functions that build the peer
// parts and merged documents (pushed to the document filters as peer parts,
// and merged into the local answer by the ext_proc server for a part over
// the push budget).
export { mergeDiscovery, type MergedDiscovery } from './merge.js';
export { renderAggregated } from './render.js';
export { decodeAggregatedProtobuf } from './protobufDecode.js';
export { negotiateDiscovery } from './negotiate.js';
export {
  discoveryResponse,
  isMergedDocument,
  type DiscoveryRequest,
  type DiscoveryReply,
  type LocalAnswer,
} from './response.js';
