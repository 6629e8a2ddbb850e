// Merged (peer-aggregated) discovery: pure functions the ext_proc server uses.
export { mergeDiscovery, consensusOrder, type MergedDiscovery } from './merge.js';
export { renderAggregated } from './render.js';
export { decodeAggregatedProtobuf } from './protobufDecode.js';
export { negotiateDiscovery } from './negotiate.js';
export { discoveryResponse, isMergedDocument, type DiscoveryRequest, type DiscoveryReply } from './response.js';
