// Request classification, the one place request paths are read: resource
// requests mirror kube-apiserver's RequestInfoFactory
// (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go) for the parts that
// decide routing: API prefix, group, version, namespace, resource, name and
// subresource. The translator's route regexes are built from the same grammar
// (src/translator/pathRegex.ts) and a contract test keeps the two in step; an
// end-to-end test (test/e2e/pathOracle.test.ts) compares both with what real
// apiservers make of the same requests (their audit logs).
//
// The input is a path as a client sends it to a sidecar. The sidecar changes
// only its encoded slashes before routing and forwarding (sidecarPath), so the
// apiserver splits it into the same segments as the routes do: it decodes
// every escape, `%2F` included, before splitting, and removes no dot segments
// (docs/request-rules.md, "Reading a request").
import { groupVersionOfIndexPath } from './openapi.js';

/** Prefixes under which kube-apiserver serves resources; only `api` is groupless. */
const API_PREFIXES: ReadonlySet<string> = new Set(['api', 'apis']);
const GROUPLESS_API_PREFIXES: ReadonlySet<string> = new Set(['api']);

/** Legacy verbs that may precede the resource path: `/api/v1/watch/pods`. */
export const SPECIAL_VERBS: ReadonlySet<string> = new Set(['proxy', 'watch']);
/** Special verbs after which the third part is not a subresource. */
export const SPECIAL_VERBS_WITHOUT_SUBRESOURCES: ReadonlySet<string> = new Set(['proxy']);
/**
 * Subresources of a namespace: `/api/v1/namespaces/{name}/status` is the
 * namespace's status, whereas `/api/v1/namespaces/{ns}/pods` is pods in {ns}.
 */
export const NAMESPACE_SUBRESOURCES: ReadonlySet<string> = new Set(['finalize', 'status']);

export interface RequestInfo {
  /** True when the path names a resource (and possibly an object and subresource). */
  isResourceRequest: boolean;
  /** The raw path (query removed) this was parsed from. */
  path: string;
  /** `api` or `apis` for resource requests. */
  apiPrefix?: string;
  /** "" for the core group and for non-resource requests. */
  group: string;
  /** "" for non-resource requests. */
  version: string;
  /** Legacy verb prefix (`/watch/`, `/proxy/`) when present. */
  specialVerb?: string;
  namespace?: string;
  resource?: string;
  name?: string;
  subresource?: string;
  /**
   * Why the path could not be classified (malformed percent-encoding, a
   * special verb without a resource). Such requests are treated as
   * non-resource requests: the local apiserver answers them.
   */
  error?: string;
}

/**
 * The documents mvproxy serves merged (docs/request-rules.md, merged-document),
 * by the path that names each: aggregated discovery of the core group and of
 * the named groups, and the OpenAPI v3 index. The routes select these paths;
 * the discovery module renders each document.
 */
export const MERGED_DOCUMENT_PATHS = {
  'core-discovery': '/api',
  'group-discovery': '/apis',
  'openapi-index': '/openapi/v3',
} as const;
export type MergedDocument = keyof typeof MERGED_DOCUMENT_PATHS;

/** The merged document a path names (one trailing slash and a query allowed, as the routes match), if any. */
export function mergedDocumentOf(rawPath: string): MergedDocument | undefined {
  const bare = stripQueryAndFragment(sidecarPath(rawPath));
  const path = bare.length > 1 && bare.endsWith('/') ? bare.slice(0, -1) : bare;
  return (Object.keys(MERGED_DOCUMENT_PATHS) as MergedDocument[]).find((document) => MERGED_DOCUMENT_PATHS[document] === path);
}

/**
 * The group or group-version a discovery document path names: `/apis/{g}`,
 * `/apis/{g}/{v}`, `/api/{v}`, and the group-version's OpenAPI v3 document
 * (`/openapi/v3/apis/{g}/{v}`, `/openapi/v3/api/{v}`), one trailing slash
 * allowed, as the route matchers see it (after sidecarPath, nothing decoded).
 */
export function groupDocumentOf(rawPath: string): { group: string; version?: string } | undefined {
  const bare = stripQueryAndFragment(sidecarPath(rawPath));
  const openapi = /^\/openapi\/v3\/(.*?)\/?$/.exec(bare);
  if (openapi) return groupVersionOfIndexPath(openapi[1] as string);
  const apis = /^\/apis\/([^/]+)(?:\/([^/]+))?\/?$/.exec(bare);
  if (apis) return apis[2] === undefined ? { group: apis[1] as string } : { group: apis[1] as string, version: apis[2] };
  const core = /^\/api\/([^/]+)\/?$/.exec(bare);
  return core ? { group: '', version: core[1] as string } : undefined;
}

/** Escaped slashes and backslashes, which the sidecar decodes (sidecarPath). */
const ESCAPED_SLASH = /%(?:2[Ff]|5[Cc])/g;

/**
 * What the sidecar's listener does to a request path before routing and
 * forwarding it (src/translator/listener.ts: `path_with_escaped_slashes_action`
 * UNESCAPE_AND_FORWARD, `normalize_path` and `merge_slashes` off): in the path
 * (not the query), `%2F` and `%2f` become `/`, `%5C` and `%5c` become `\`, in one
 * pass; nothing else changes. kube-apiserver decodes those escapes itself
 * before reading a path (Go's URL.Path), so the forwarded path means exactly
 * what the client's did, and it reads it with the same slashes the routes see.
 * Idempotent.
 */
export function sidecarPath(rawPath: string): string {
  const end = rawPath.search(/[?#]/);
  const path = end === -1 ? rawPath : rawPath.slice(0, end);
  const rest = end === -1 ? '' : rawPath.slice(end);
  return path.replace(ESCAPED_SLASH, (escaped) => (escaped[2] === 'F' || escaped[2] === 'f' ? '/' : '\\')) + rest;
}

/**
 * Classifies a request path the way kube-apiserver does, as the sidecar's
 * routes read it. Never throws.
 *
 * The path is read after the sidecar's own change to it (sidecarPath), and
 * split on `/` as the apiserver splits it. The names a route is chosen by
 * (API prefix, group, version, the `watch`/`proxy` prefixes, `namespaces`,
 * `status` and `finalize` where they decide the shape, resource,
 * subresource) are compared as spelled, as the route regexes compare them;
 * namespace and name are decoded as the apiserver decodes them. The two
 * readings differ only for a name spelled with escapes of unreserved
 * characters (`j%6Fbs`), which RFC 3986 tells clients not to produce: no route
 * matches such a name, so the request goes where its literal spelling sends
 * it, which is never worse than without mvproxy (docs/request-rules.md).
 */
export function parseRequestPath(rawPath: string): RequestInfo {
  const path = stripQueryAndFragment(sidecarPath(rawPath));
  const nonResource: RequestInfo = { isResourceRequest: false, path, group: '', version: '' };

  // Go rejects the whole request (400) for one malformed escape; the route
  // regexes leave such paths to the local apiserver, which does that.
  if (path.replace(PERCENT_ESCAPE, '').includes('%')) return { ...nonResource, error: `malformed percent-encoding in path ${JSON.stringify(path)}` };
  let parts = splitPath(path);

  if (parts.length < 3) return nonResource;
  const apiPrefix = parts[0] as string;
  if (!API_PREFIXES.has(apiPrefix)) return nonResource;
  parts = parts.slice(1);

  let group = '';
  if (!GROUPLESS_API_PREFIXES.has(apiPrefix)) {
    // `/apis/{group}/{version}` is the group-version's discovery document.
    if (parts.length < 3) return nonResource;
    group = parts[0] as string;
    parts = parts.slice(1);
  }
  const version = parts[0] as string;
  parts = parts.slice(1);

  let specialVerb: string | undefined;
  if (SPECIAL_VERBS.has(parts[0] as string)) {
    if (parts.length < 2) {
      // Upstream answers these with an error; the local apiserver should too.
      return { ...nonResource, error: `unable to determine kind and namespace from ${path}` };
    }
    specialVerb = parts[0];
    parts = parts.slice(1);
  }

  let namespace: string | undefined;
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = decode(parts[1] as string);
    // `namespaces/{ns}/{resource}/...` names a resource in {ns}, except when
    // the third part is a namespace subresource (status, finalize).
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] as string)) {
      parts = parts.slice(2);
    }
  }

  // parts: resource/name/subresource/anything/else
  const info: RequestInfo = { isResourceRequest: true, path, apiPrefix, group, version, resource: parts[0] as string };
  if (specialVerb !== undefined) info.specialVerb = specialVerb;
  // Upstream's empty string means "none" for namespace, name and subresource.
  if (namespace) info.namespace = namespace;
  if (parts[1]) info.name = decode(parts[1]);
  const hasSubresource = specialVerb === undefined || !SPECIAL_VERBS_WITHOUT_SUBRESOURCES.has(specialVerb);
  if (hasSubresource && parts[2]) info.subresource = parts[2];
  return info;
}

function stripQueryAndFragment(path: string): string {
  const end = path.search(/[?#]/);
  return end === -1 ? path : path.slice(0, end);
}

/** Upstream's splitPath: trim every leading and trailing slash, then split on '/'. */
function splitPath(path: string): string[] {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? [] : trimmed.split('/');
}

const PERCENT_ESCAPE = /%([0-9A-Fa-f]{2})/g;

/**
 * A namespace or name as the apiserver decodes it (its escapes are known to
 * be well formed). Go does not validate UTF-8 here; a lossy decode never
 * throws and only affects names, which routing ignores.
 */
function decode(segment: string): string {
  if (!segment.includes('%')) return segment;
  const pieces = segment
    .split(/(%[0-9A-Fa-f]{2})/)
    .map((piece) => (/^%[0-9A-Fa-f]{2}$/.test(piece) ? Buffer.from([parseInt(piece.slice(1), 16)]) : Buffer.from(piece, 'utf8')));
  return Buffer.concat(pieces).toString('utf8');
}
