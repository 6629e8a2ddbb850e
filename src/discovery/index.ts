// Merged (peer-aggregated) discovery: pure functions that build the merged
// documents (pushed to the document filters, and answered by the ext_proc
// server for a document over the push budget).
export { mergeDiscovery, type MergedDiscovery } from './merge.js';
export { renderAggregated } from './render.js';
export { decodeAggregatedProtobuf } from './protobufDecode.js';
export { negotiateDiscovery } from './negotiate.js';
export { discoveryResponse, isMergedDocument, type DiscoveryRequest, type DiscoveryReply } from './response.js';
