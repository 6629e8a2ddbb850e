// How the path oracle judges one case: what mvproxy's reading and plan say
// against what the sidecar, the apiservers and the backend did (the kinds of
// finding: pathOracle.ts).
import { parseRequestPath, type RequestInfo, sidecarPath } from '../../src/model/requestInfo.js';
import { groupDocumentsOf, type RequestDestination, type SidecarPlan } from '../../src/planner/plan.js';
import { NOPEER_PROFILE } from '../../src/model/discovery.js';
import { destinationForRequest } from '../../src/planner/destination.js';
import type { OracleCase } from './pathOracleCases.js';
import type { AuditEvent, CaseResult, Reading } from './pathOracleEvidence.js';
import { LOCAL } from './pathOracleFixtures.js';
import type { Answer } from './pathOracleSend.js';

export interface Finding {
  kind: 'route' | 'apiserver-reading' | 'reading' | 'meaning' | 'refused' | 'forwarded' | 'flavour' | 'evidence';
  result: CaseResult;
  expected: string;
  actual: string;
}

/** `local`, `peers kas-b`, `unavailable kas-b`. */
function describeDestination(d: RequestDestination): string {
  if (d.kind === 'local') return 'local';
  return d.kind === 'peers' ? `peers ${d.peers.join(',')}` : `unavailable ${d.servedBy.join(',')}`;
}

/** Where the sidecar sent it, from its clusters (`local-h1-front-proxy` is local), else what Envoy answered itself. */
function actualDestination(r: CaseResult): string {
  const sets = [...new Set(r.clusters.map((c) => c.replace(/(-h1)?(-front-proxy)?$/, '')))];
  if (sets.length === 0) return r.viaSidecar.status === 503 ? 'envoy 503' : `envoy ${r.viaSidecar.status}`;
  return sets
    .map((set) =>
      set === 'local'
        ? 'local'
        : `peers ${set
            .replace(/^peers?-/, '')
            .split('+')
            .map(decodeURIComponent)
            .join(',')}`,
    )
    .join(' + ');
}

/** What a destination looks like from outside: a 503 of Envoy's own for `unavailable`. */
function observable(d: RequestDestination): string {
  return d.kind === 'unavailable' ? 'envoy 503' : describeDestination(d);
}

/** Go's URL.Path of a request target's path part, and its raw query: what the apiserver's handlers see. */
function goPath(target: string): string {
  const at = target.indexOf('?');
  const path = at === -1 ? target : target.slice(0, at);
  const query = at === -1 ? '' : target.slice(at);
  return path.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) + query;
}

/** The path with escapes of unreserved characters decoded: what a client that follows RFC 3986 would have sent. */
function withoutUnreservedEscapes(path: string): string {
  const at = path.search(/[?#]/);
  const head = at === -1 ? path : path.slice(0, at);
  const decoded = head.replace(/%([0-9A-Fa-f]{2})/g, (escaped, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return /^[A-Za-z0-9\-._~]$/.test(c) ? c : escaped;
  });
  return decoded + (at === -1 ? '' : path.slice(at));
}

/** A reading as comparable text; the name a list reads from `fieldSelector=metadata.name=X` counts, as it does upstream. */
function describeReading(info: RequestInfo, method: string, path: string): string {
  if (!info.isResourceRequest) return 'non-resource';
  let name = info.name ?? '';
  if (name === '' && (method === 'GET' || method === 'HEAD') && info.specialVerb === undefined) name = nameFromFieldSelector(path) ?? '';
  return [info.group, info.version, info.resource ?? '', info.subresource ?? '', info.namespace ?? '', name].join(' | ');
}

function describeObjectRef(ref: AuditEvent['objectRef']): string {
  if (!ref) return 'non-resource';
  return [ref.apiGroup ?? '', ref.apiVersion ?? '', ref.resource ?? '', ref.subresource ?? '', ref.namespace ?? '', ref.name ?? ''].join(' | ');
}

/** RequestInfoFactory takes a list's name from a field selector that requires exactly `metadata.name`. */
function nameFromFieldSelector(path: string): string | undefined {
  const at = path.indexOf('?');
  if (at === -1) return undefined;
  const selector = new URLSearchParams(path.slice(at + 1)).get('fieldSelector');
  const match = selector === null ? null : /^metadata\.name==?([^,=!]*)$/.exec(selector);
  const name = match?.[1];
  return name && name !== '.' && name !== '..' && !/[/%]/.test(name) ? name : undefined;
}

/** The apiserver's reading as mvproxy's model of it, for the planner. */
function requestInfoOf(reading: Reading): RequestInfo {
  const ref = reading.objectRef;
  const path = goPath(reading.requestURI).replace(/\?.*$/, '');
  if (!ref) return { isResourceRequest: false, path, group: '', version: '' };
  return {
    isResourceRequest: true,
    path,
    group: ref.apiGroup ?? '',
    version: ref.apiVersion ?? '',
    ...(ref.resource ? { resource: ref.resource } : {}),
    ...(ref.subresource ? { subresource: ref.subresource } : {}),
    ...(ref.namespace ? { namespace: ref.namespace } : {}),
    ...(ref.name ? { name: ref.name } : {}),
  };
}

/**
 * The watch spellings the routes send over HTTP/2 (src/translator/routes.ts):
 * the first `watch` value, as strconv.ParseBool reads true; never for a
 * discovery document the document routes take (a GET or HEAD of `/api`,
 * `/apis` without profile=nopeer, `/api/{v}`, `/apis/{g}`, `/apis/{g}/{v}`,
 * unless a peer-only group document's route takes it first), which no
 * apiserver answers as a watch.
 */
function expectsHttp2(c: OracleCase, plan: SidecarPlan): boolean {
  if (c.headers?.['upgrade']) return false;
  const at = c.path.indexOf('?');
  const watch = at === -1 ? null : new URLSearchParams(c.path.slice(at + 1)).get('watch');
  return watch !== null && /^(1|t|T|true|True|TRUE)$/.test(watch) && !takenByDocumentRoute(c, at === -1 ? c.path : c.path.slice(0, at), plan);
}

function takenByDocumentRoute(c: OracleCase, path: string, plan: SidecarPlan): boolean {
  if (!['GET', 'HEAD'].includes(c.method ?? 'GET')) return false;
  const accept = Object.entries(c.headers ?? {}).find(([name]) => name.toLowerCase() === 'accept')?.[1] ?? '';
  if (/^\/apis?\/?$/.test(path)) return !String(accept).toLowerCase().includes(NOPEER_PROFILE);
  const document = /^\/api\/[^/]+\/?$/.test(path) || /^\/apis\/[^/]+(?:\/[^/]+)?\/?$/.test(path);
  const peerOnly = groupDocumentsOf(plan).some((d) => {
    const base = d.group === '' ? '/api' : `/apis/${d.group}`;
    return path.replace(/\/$/, '') === (d.version === undefined ? base : `${base}/${d.version}`);
  });
  return document && !peerOnly;
}

/** The findings of one case: each is a difference between what was expected and what happened. */
export function compare(r: CaseResult, plan: SidecarPlan): Finding[] {
  const findings: Finding[] = [];
  const add = (kind: Finding['kind'], expected: string, actual: string): void => {
    if (expected !== actual) findings.push({ kind, result: r, expected, actual });
  };
  const method = r.case.method ?? 'GET';
  const mine = parseRequestPath(r.path);
  const actual = actualDestination(r);
  const decided = destinationForRequest(plan, mine);
  // route: where mvproxy's own reading sends it (Envoy refusing a request target it cannot parse is judged by `refused`).
  if (!(actual.startsWith('envoy') && r.viaSidecar.status === 400 && r.clusters.length === 0)) add('route', observable(decided), actual);
  // evidence: the audit logs agree with Envoy's statistics about who received it.
  const loggedBy = r.readings.map((x) => (x.apiserver === LOCAL ? 'local' : `peers ${x.apiserver}`)).join(' + ');
  if (r.readings.length > 0 && r.clusters.length > 0) add('evidence', actual, loggedBy);
  if (r.clusters.length > 0) {
    const wanted = expectsHttp2(r.case, plan) ? 'http2' : 'http1';
    for (const cluster of r.clusters)
      add('flavour', `${wanted}, front-proxy`, `${cluster.includes('-h1') ? 'http1' : 'http2'}${cluster.endsWith('-front-proxy') ? ', front-proxy' : ''}`);
  }
  const direct = r.directReading;
  if (direct) {
    // apiserver-reading: where the plan sends what the apiserver itself reads.
    if (!actual.startsWith('envoy 400')) add('apiserver-reading', observable(destinationForRequest(plan, requestInfoOf(direct))), actual);
    add('reading', describeObjectRef(direct.objectRef), describeReading(mine, method, r.path));
  }
  for (const via of r.readings) {
    if (!direct) continue;
    add('meaning', `${describeObjectRef(direct.objectRef)} | ${goPath(direct.requestURI)}`, `${describeObjectRef(via.objectRef)} | ${goPath(via.requestURI)}`);
    add('forwarded', goPath(sidecarPath(r.path)).replace(/\?.*$/, ''), goPath(via.requestURI).replace(/\?.*$/, ''));
  }
  if (r.backendDirect !== undefined || r.backendViaSidecar !== undefined)
    add('meaning', `backend got ${r.backendDirect}`, `backend got ${r.backendViaSidecar}`);
  const accepted = (a: Answer): boolean => a.status >= 200 && a.status < 400;
  if (accepted(r.direct) && !accepted(r.viaSidecar)) {
    findings.push({
      kind: 'refused',
      result: r,
      expected: `${r.direct.status} as directly`,
      actual: `${r.viaSidecar.status}${r.viaSidecar.error ? ` ${r.viaSidecar.error}` : ''}`,
    });
  }
  return findings;
}

/**
 * Whether a case's differences come only from names spelled with escapes of
 * unreserved characters: read as an RFC 3986 client would have spelled it,
 * mvproxy reads what the apiserver read and routes it as the plan says.
 */
export function onlyLiteralSpelling(r: CaseResult, findings: Finding[], plan: SidecarPlan): boolean {
  const spelled = withoutUnreservedEscapes(r.path);
  if (spelled === r.path || !r.directReading) return false;
  if (!findings.every((f) => f.kind === 'reading' || f.kind === 'apiserver-reading')) return false;
  const info = parseRequestPath(spelled);
  const readsAlike = describeReading(info, r.case.method ?? 'GET', spelled) === describeObjectRef(r.directReading.objectRef);
  return readsAlike && observable(destinationForRequest(plan, info)) === observable(destinationForRequest(plan, requestInfoOf(r.directReading)));
}

/**
 * RFC 9112 origin-form starts with `/` and allows no fragment and no byte
 * outside visible ASCII; Envoy's codec answers such a request 400 itself,
 * before any route, so how mvproxy would have read it does not matter. (Its
 * 400 to a HEAD request carries a body, which Node's client reports as an
 * error: status 0.)
 */
export function invalidTarget(r: CaseResult): boolean {
  const invalid = !r.path.startsWith('/') || /[#]|[^\x21-\x7e]/.test(r.path);
  return invalid && r.clusters.length === 0 && (r.viaSidecar.status === 400 || r.viaSidecar.status === 0);
}
