// Merged (peer-aggregated) discovery: pure functions the ext_proc server uses.
export { mergeDiscovery, consensusOrder, type MergedDiscovery, type MergeOptions } from './merge.js';
export {
  renderAggregated,
  renderAggregatedCached,
  decodeAggregatedProtobuf,
  encodeAggregatedProtobuf,
  etagOf,
  AGGREGATED_JSON_CONTENT_TYPE,
  AGGREGATED_PROTOBUF_CONTENT_TYPE,
  type AggregatedFormat,
  type RenderedDocument,
} from './render.js';
export { negotiateDiscovery, parseAccept, type DiscoveryNegotiation, type MediaRange } from './negotiate.js';
export {
  discoveryResponse,
  etagMatches,
  isMergedDocument,
  type MergedDocument,
  type DiscoveryRequest,
  type DiscoveryReply,
  type DiscoveryPassThrough,
} from './response.js';
