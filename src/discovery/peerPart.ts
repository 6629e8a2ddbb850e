// What only peers add to a merged document: the part of `/api`, `/apis` and
// the OpenAPI v3 index the control plane pushes to a sidecar. The sidecar's
// document filter merges it into the local apiserver's document as that
// document is at the request (docs/never-worse.md, "Merged documents"), so the
// answer is never staler than the apiserver behind the sidecar.
//
// The merge rule, one rule wherever it runs (the filter, in bytes; the
// control plane, in objects, for what it shows and answers over ext_proc):
// - the local document as the local apiserver serves it, every entry as it
//   listed it, in its order;
// - then, at each level (group, version of a group, resource of a version),
//   the peer part's entries the local document lacks (by name), in the peer
//   part's order, after the local entries of that level;
// - the peer part holds exactly what the routes in force send to a peer or
//   answer 503 for (never a resource the plan sends to the local apiserver),
//   and never a CRD or APIService group-version (shared-state-local: from the
//   local document alone);
// - the ETag is mergedEtag(local ETag, the peer part's digest).
import { createHash } from 'node:crypto';
import type { APIGroupDiscovery } from '../model/discovery.js';
import type { MergedDocument } from '../model/requestInfo.js';
import type { OpenApiV3Index } from '../model/openapi.js';

/** The peer part of aggregated discovery (`/api` or `/apis`): groups, each with only the versions and resources only peers serve. */
export interface AggregatedPeerPart {
  document: Exclude<MergedDocument, 'openapi-index'>;
  groups: APIGroupDiscovery[];
}

/** The peer part of the OpenAPI v3 index: the entries of group-versions only peers serve. */
export interface OpenApiPeerPart {
  document: 'openapi-index';
  paths: OpenApiV3Index['paths'];
}

export type PeerPart = AggregatedPeerPart | OpenApiPeerPart;

/**
 * The ETag of a merged answer: a function of the local apiserver's ETag (the
 * header value as it sent it, quotes included) and the peer part's digest
 * (64 lowercase hex digits, xds/documentSet.ts), so it is the same on every
 * sidecar with the same inputs and changes when either does. The filter
 * computes the same in envoy/filters.
 */
export function mergedEtag(localEtag: string, peerDigest: string): string {
  return `"${createHash('sha256').update(`${localEtag} ${peerDigest}`, 'utf8').digest('hex')}"`;
}
