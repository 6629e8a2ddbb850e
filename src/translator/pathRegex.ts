// Route matchers for resources and subresources, built from the grammar of
// parseRequestPath (src/model/requestInfo.ts): a matcher accepts exactly the
// paths parseRequestPath attributes to its (sub)resource. In particular:
// - `/api/v1/namespaces/{name}` and `.../{name}/status|finalize` are the
//   namespaces resource; `/api/v1/namespaces/{ns}/{resource}/...` is not;
// - the legacy `/watch/` and `/proxy/` prefixes, and no subresource after `proxy/`;
// - leading and trailing slashes are trimmed, inner empty segments count;
// - a malformed percent-escape (before the query) makes a path unclassified.
// The regexes see the path after the listener's only change to it: encoded
// slashes decoded (sidecarPath), so `/` separates segments exactly where the
// apiserver splits them. Nothing else is decoded: names are compared as
// spelled (a segment with an escape matches no name), dot segments and
// backslashes are ordinary segment content, as for the apiserver.
//
// Envoy rejects an RE2 regex whose program exceeds 100 instructions (runtime
// `re2.max_program_size.error_level`), and every literal character costs one.
// A single regex naming group, version and resource overflows for long
// built-in names (admissionregistration.k8s.io/v1beta1
// validatingadmissionpolicybindings), so a match is split in two, each well
// under the limit:
// - `pathForms`: the path's shape and the resource, with group and version
//   left generic; matched against the path without its query (`safe_regex`);
// - `groupVersionPin`: group and version, plus well-formed escapes; matched
//   against the whole `:path` header, query included.
// Every regex stays in the subset RE2 and JavaScript agree on (no lookaround,
// no backreferences, no `{n}`), so tests evaluate them with RegExp.
import { NAMESPACE_SUBRESOURCES, SPECIAL_VERBS, SPECIAL_VERBS_WITHOUT_SUBRESOURCES } from '../model/requestInfo.js';

/** A path segment; may be empty (an empty namespace or name is parsed as upstream does). */
const SEGMENT = '[^/]*';
/** Whatever follows: more segments, trailing slashes, or nothing. */
const REST = `(?:/${SEGMENT})*`;

export interface ResourcePath {
  /** "" for the core group. */
  group: string;
  version: string;
  resource: string;
  subresource?: string;
}

export interface ResourcePathMatch {
  /** RE2 regexes for the path without its query; a path must match one of them. */
  pathForms: string[];
  /** RE2 regex for the whole `:path` header; a path must also match it. */
  groupVersionPin: string;
}

/** The matchers selecting every request path for this resource or subresource. */
export function resourcePathMatch(target: ResourcePath): ResourcePathMatch {
  const prefix = target.group === '' ? `/+api/${SEGMENT}/` : `/+apis/${SEGMENT}/${SEGMENT}/`;
  const forms = target.subresource === undefined ? resourceForms(target.resource) : subresourceForms(target.resource, target.subresource);
  return { pathForms: forms.map((form) => `${prefix}${form}`), groupVersionPin: groupVersionPin(target.group, target.version) };
}

/**
 * `/api/{v}/` or `/apis/{g}/{v}/` (upstream trims any number of leading
 * slashes), then only well-formed escapes up to the query.
 */
function groupVersionPin(group: string, version: string): string {
  const groupVersion = group === '' ? `api/${escapeRegex(version)}` : `apis/${escapeRegex(group)}/${escapeRegex(version)}`;
  return `/+${groupVersion}/(?:[^%?]|%[0-9A-Fa-f][0-9A-Fa-f])*(?:\\?.*)?`;
}

/**
 * Every path whose resource is R, any name and subresource. R comes either
 * first (`R/...`, or for namespaces `namespaces[/{name}[/status|finalize/...]]`)
 * or inside a namespace (`namespaces/{ns}/R/...`).
 */
function resourceForms(resource: string): string[] {
  const r = escapeRegex(resource);
  const verb = verbPattern([...SPECIAL_VERBS]);
  const optionalVerb = `${verb}?`;
  const inNamespace = !NAMESPACE_SUBRESOURCES.has(resource); // `namespaces/{ns}/status` is the namespace's status

  if (resource === 'namespaces') {
    const namespaceSubresources = [...NAMESPACE_SUBRESOURCES].sort().join('|');
    return [
      `${optionalVerb}namespaces(?:/[^/]+)?/*`,
      `${optionalVerb}namespaces/${SEGMENT}/(?:${namespaceSubresources})${REST}`,
      `${optionalVerb}namespaces/${SEGMENT}/namespaces${REST}`,
    ];
  }
  if (SPECIAL_VERBS.has(resource)) {
    // Named like a special verb: first only after a verb (`watch/watch`), else it would be the verb.
    return [`${verb}${r}${REST}`, `${optionalVerb}namespaces/${SEGMENT}/${r}${REST}`];
  }
  return [inNamespace ? `${optionalVerb}(?:namespaces/${SEGMENT}/)?${r}${REST}` : `${optionalVerb}${r}${REST}`];
}

/** Every path naming subresource S of R: `R/{name}/S/...` in either form; never after `proxy/`. */
function subresourceForms(resource: string, subresource: string): string[] {
  const r = escapeRegex(resource);
  const s = escapeRegex(subresource);
  const verb = verbPattern([...SPECIAL_VERBS].filter((v) => !SPECIAL_VERBS_WITHOUT_SUBRESOURCES.has(v)));
  const optionalVerb = `${verb}?`;
  const inNamespace = !NAMESPACE_SUBRESOURCES.has(resource);

  if (resource === 'namespaces') {
    const forms = [`${optionalVerb}namespaces/${SEGMENT}/namespaces/${SEGMENT}/${s}${REST}`];
    // `namespaces/{name}/S` is a namespace's subresource only for status and finalize.
    if (NAMESPACE_SUBRESOURCES.has(subresource)) forms.unshift(`${optionalVerb}namespaces/${SEGMENT}/${s}${REST}`);
    return forms;
  }
  if (SPECIAL_VERBS.has(resource)) {
    return [`${verb}${r}/${SEGMENT}/${s}${REST}`, `${optionalVerb}namespaces/${SEGMENT}/${r}/${SEGMENT}/${s}${REST}`];
  }
  const namespacePart = inNamespace ? `(?:namespaces/${SEGMENT}/)?` : '';
  return [`${optionalVerb}${namespacePart}${r}/${SEGMENT}/${s}${REST}`];
}

/** `(?:(?:proxy|watch)/)`: one legacy verb segment. */
function verbPattern(verbs: string[]): string {
  return `(?:(?:${verbs.sort().join('|')})/)`;
}

export function escapeRegex(literal: string): string {
  return literal.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}
