// The path oracle's requests (test/support/pathOracle.ts): a regression table
// of hand-picked paths, each kept because it once exposed, or could expose, a
// difference between how mvproxy and kube-apiserver read a path, and a
// deterministic generator of many more from the same ingredients.
//
// Tokens replaced at run time: `@BACKEND@` is the pod whose proxy subresource
// reaches the oracle's HTTP backend (`http:oracle-backend:<port>`), `@LONG@` a
// 300-character segment.
import { AGGREGATED_DISCOVERY_JSON_ACCEPT } from '../../src/model/discovery.js';

export interface OracleCase {
  /** Unique within a run: it names the request in the apiservers' audit logs (its User-Agent). */
  id: string;
  /** GET unless said otherwise; the cases change no object (PATCH is for the oracle's fixtures). */
  method?: 'GET' | 'HEAD' | 'POST' | 'DELETE' | 'PATCH';
  /** As sent on the wire, query included. */
  path: string;
  headers?: Record<string, string>;
  /** Why the case is in the table. */
  why?: string;
}

const SVM = '/apis/storagemigration.k8s.io/v1';
const UPGRADE = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };

/** [path, why] or [path, why, method/headers]. */
type Row = [string, string] | [string, string, Partial<Pick<OracleCase, 'method' | 'headers'>>];

const TABLE: Row[] = [
  // The two requests of issue 10 that started this table.
  ['/apis/batch/v1/namespaces/x%2Fcronjobs/jobs', 'issue 10: routed on the jobs rule while the apiserver reads cronjobs'],
  [`${SVM}%2Fstorageversionmigrations`, 'issue 10: the local apiserver answered 404 for what the peer serves'],
  // Encoded slashes in every position.
  [`/%2Fapis/storagemigration.k8s.io/v1/storageversionmigrations`, 'an encoded slash before the prefix: trimmed like a leading slash'],
  [`/apis%2Fstoragemigration.k8s.io/v1/storageversionmigrations`, 'an encoded slash after the prefix'],
  [`/apis/storagemigration.k8s.io%2Fv1/storageversionmigrations`, 'an encoded slash between group and version'],
  [`/apis/storagemigration.k8s.io%2fv1%2fstorageversionmigrations%2foracle-svm`, 'lower-case escapes, every separator encoded'],
  [`${SVM}/storageversionmigrations%2Foracle-svm`, 'an encoded slash before the name'],
  [`${SVM}/storageversionmigrations/oracle-svm%2Fstatus`, 'an encoded slash before the subresource'],
  [`${SVM}/storageversionmigrations/oracle-svm%2F`, 'an encoded trailing slash'],
  [`${SVM}/storageversionmigrations%2F%2Foracle-svm`, 'two encoded slashes: an empty name'],
  [`${SVM}/storageversionmigrations/x%2F..%2Foracle-svm`, 'encoded slashes around a dot segment'],
  [`${SVM}/storageversionmigrations/a%252Fb`, 'an encoded percent sign: one decode only'],
  ['/api/v1/namespaces/oracle%2Fconfigmaps/oracle-cm', 'an encoded slash turns a namespace into namespace and resource'],
  ['/api/v1/namespaces%2Foracle%2Fstatus', 'the namespace status subresource, spelled with encoded slashes'],
  ['/api/v1/namespaces/oracle/configmaps/oracle-cm%2Fstatus', 'a subresource behind an encoded slash'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy/a%2Fb', 'the proxy subresource forwards the rest of the path to the backend'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy%2Fa%2Fb', 'the proxy subresource named behind an encoded slash'],
  // Encoded backslashes: a name may contain one (RBAC names are path segments).
  ['/apis/rbac.authorization.k8s.io/v1/clusterroles/oracle%5Cbackslash', 'a ClusterRole named with a backslash, as client-go sends it'],
  ['/apis/rbac.authorization.k8s.io/v1/clusterroles/oracle%5cbackslash', 'the same, lower-case escape'],
  ['/apis/rbac.authorization.k8s.io/v1/clusterroles/oracle\\backslash', 'the same, a raw backslash'],
  ['/apis/rbac.authorization.k8s.io/v1/clusterroles%5Coracle', 'an encoded backslash is not a separator'],
  // Encoded dots and other escapes.
  ['/apis/storagemigration%2Ek8s.io/v1/storageversionmigrations', 'an encoded dot in the group'],
  ['/apis/storagemigration.k8s.io/v1/storageversionmigration%73', 'an encoded letter in the resource'],
  ['/apis/storagemigration.k8s.io/v1/storageversionmigrations/oracle-svm/st%61tus', 'an encoded letter in the subresource'],
  ['/api/v1/namespaces/%6Fracle/configmaps/oracle%2Dcm', 'encoded unreserved characters in namespace and name'],
  ['/%61pi/v1/namespaces/oracle/configmaps', 'an encoded letter in the API prefix'],
  ['/api/v1/%6Eamespaces/oracle/configmaps', 'an encoded letter in namespaces'],
  ['/api/v1/namespaces/oracle/%73tatus', 'an encoded letter in a namespace subresource'],
  ['/api/v1/%77atch/namespaces/oracle/configmaps', 'an encoded letter in the watch prefix'],
  ['/api/v1/namespaces/oracle/configmaps/%2E', 'an encoded dot segment'],
  ['/api/v1/namespaces/oracle/configmaps/%2E%2E', 'an encoded dot-dot segment'],
  ['/api/v1/namespaces/oracle/configmaps/%2e%2e/oracle-cm', 'an encoded dot-dot segment before a name'],
  ['/api/v1/namespaces/oracle/configmaps/a%3Ab', 'an encoded colon in a name'],
  ['/api/v1/namespaces/oracle/configmaps/a%20b', 'an encoded space in a name'],
  ['/api/v1/namespaces/oracle/configmaps/%C3%A9', 'an encoded UTF-8 name'],
  ['/api/v1/namespaces/oracle/configmaps/%FF', 'an encoded byte that is not UTF-8'],
  ['/api/v1/namespaces/oracle/configmaps/%00', 'an encoded NUL'],
  ['/api/v1/namespaces/oracle/configmaps/%zz', 'a malformed escape'],
  ['/api/v1/namespaces/oracle/configmaps/%', 'a lone percent sign'],
  ['/api/v1/namespaces/oracle/configmaps?x=%zz', 'a malformed escape in the query only'],
  // Dot segments and empty segments.
  ['/api/v1/namespaces/oracle/configmaps/./oracle-cm', 'a dot segment'],
  ['/api/v1/namespaces/oracle/configmaps/../configmaps/oracle-cm', 'a dot-dot segment'],
  ['/apis/batch/v1/../../api/v1/namespaces/oracle/configmaps', 'dot-dot segments leaving the group'],
  [`/api/v1/../..${SVM}/storageversionmigrations`, 'dot-dot segments from the core group to a peer-only group'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy/a/../b', 'a dot-dot segment inside the proxy subpath'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy/../../../../..', 'dot-dot segments climbing out of the proxy subpath'],
  [`/api/v1/namespaces/oracle/pods/@BACKEND@/proxy/../../../../..${SVM}/storageversionmigrations`, 'climbing from the proxy subpath to a peer-only resource'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy/%2E%2E/%2E%2E/x', 'encoded dot-dot segments in the proxy subpath'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy//a//b/', 'empty segments and a trailing slash in the proxy subpath'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy/a%3Fb?c=d', 'an encoded question mark in the proxy subpath, and a query'],
  [`//apis/storagemigration.k8s.io/v1/storageversionmigrations`, 'two leading slashes'],
  [`${SVM}//storageversionmigrations`, 'an empty segment after the version'],
  [`${SVM}/storageversionmigrations//`, 'two trailing slashes'],
  [`${SVM}/storageversionmigrations/oracle-svm/`, 'a trailing slash after the name'],
  ['/api/v1/namespaces//configmaps', 'an empty namespace'],
  ['/api/v1/namespaces/oracle//', 'a namespace and two trailing slashes'],
  ['/api/v1/namespaces/oracle/configmaps//status', 'an empty name before a subresource'],
  // Mixed case.
  [`/APIS/storagemigration.k8s.io/v1/storageversionmigrations`, 'an upper-case prefix'],
  [`/apis/StorageMigration.k8s.io/v1/storageversionmigrations`, 'a mixed-case group'],
  [`${SVM}/StorageVersionMigrations`, 'a mixed-case resource'],
  [`${SVM}/storageversionmigrations/oracle-svm/Status`, 'a mixed-case subresource'],
  ['/api/v1/Namespaces/oracle/configmaps', 'a mixed-case namespaces'],
  ['/api/V1/namespaces/oracle/configmaps', 'an upper-case version'],
  // Long segments.
  [`${SVM}/storageversionmigrations/@LONG@`, 'a very long name'],
  ['/api/v1/namespaces/@LONG@/configmaps', 'a very long namespace'],
  [`${SVM}/@LONG@/storageversionmigrations`, 'a very long resource'],
  [`/apis/@LONG@/v1/storageversionmigrations`, 'a very long group'],
  // namespaces as a resource and as a scope.
  ['/api/v1/namespaces', 'the namespaces collection'],
  ['/api/v1/namespaces/oracle', 'a namespace'],
  ['/api/v1/namespaces/oracle/status', 'its status subresource'],
  ['/api/v1/namespaces/oracle/finalize', 'its finalize subresource'],
  ['/api/v1/namespaces/oracle/finalize/x', 'more parts after finalize'],
  ['/api/v1/namespaces/oracle/namespaces/oracle', 'namespaces inside a namespace'],
  ['/api/v1/namespaces/oracle/namespaces/oracle/status', 'namespaces inside a namespace, with status'],
  ['/api/v1/namespaces/status', 'a namespace named status'],
  ['/api/v1/namespaces/status/status', 'the status of a namespace named status'],
  ['/api/v1/namespaces/oracle/status/x', 'more parts after a namespace status'],
  ['/apis/batch/v1/namespaces/oracle', 'namespaces of a named group'],
  [`${SVM}/namespaces/oracle/storageversionmigrations`, 'a cluster-scoped resource under a namespace'],
  // Subresources.
  ['/api/v1/namespaces/oracle/pods/oracle-backend/status', 'pod status'],
  ['/api/v1/namespaces/oracle/pods/oracle-backend/log', 'pod log'],
  ['/api/v1/namespaces/oracle/pods/oracle-backend/log?follow=true', 'pod log, followed'],
  ['/api/v1/namespaces/oracle/pods/oracle-backend/exec?command=true', 'exec without an upgrade'],
  ['/api/v1/namespaces/oracle/pods/oracle-backend/exec?command=true', 'exec with a WebSocket upgrade', { headers: UPGRADE }],
  ['/api/v1/namespaces/oracle/pods/oracle-backend/attach', 'attach with a WebSocket upgrade', { headers: UPGRADE }],
  ['/api/v1/namespaces/oracle/pods/oracle-backend/portforward?ports=80', 'portforward with a WebSocket upgrade', { headers: UPGRADE }],
  ['/api/v1/namespaces/oracle/pods/oracle-backend/portforward', 'portforward without an upgrade'],
  ['/api/v1/namespaces/oracle/pods/oracle-backend/ephemeralcontainers', 'ephemeral containers'],
  ['/api/v1/namespaces/oracle/pods/oracle-backend/eviction', 'eviction (GET is not allowed)'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy', 'the proxy subresource without a subpath'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy/', 'the proxy subresource, subpath /'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy/a/b?c=d', 'the proxy subresource with a subpath and a query'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy/apis/storagemigration.k8s.io/v1/storageversionmigrations', 'a proxy subpath that looks like an API path'],
  ['/api/v1/namespaces/oracle/pods/@BACKEND@/proxy/a', 'the proxy subresource with a WebSocket upgrade', { headers: UPGRADE }],
  ['/api/v1/namespaces/oracle/services/oracle-svc/proxy/a', 'a service proxy'],
  ['/api/v1/nodes/oracle-node/proxy/a', 'a node proxy'],
  ['/api/v1/proxy/namespaces/oracle/pods/oracle-backend/a', 'the legacy proxy prefix: no subresource after it'],
  ['/api/v1/proxy/nodes/oracle-node', 'the legacy proxy prefix for a node'],
  ['/apis/apps/v1/namespaces/oracle/deployments/d/scale', 'scale'],
  [`${SVM}/storageversionmigrations/oracle-svm/status`, 'a peer-only resource: status'],
  [`${SVM}/storageversionmigrations/oracle-svm/other`, 'a peer-only resource: a made-up subresource'],
  ['/apis/batch/v1/namespaces/oracle/jobs/j/status', 'job status'],
  ['/apis/batch/v1/namespaces/oracle/cronjobs/c/status', 'cronjob status'],
  // Queries that look like paths.
  [`/api/v1/namespaces/oracle/configmaps?x=${SVM}/storageversionmigrations`, 'a query that looks like a path'],
  [`/api/v1/namespaces/oracle/configmaps?${SVM}/storageversionmigrations`, 'a query that is a path'],
  [`/api/v1/namespaces/oracle/configmaps?/../..${SVM}/storageversionmigrations`, 'a query with dot segments'],
  [`/api/v1/namespaces/oracle/configmaps?x=%2F..%2F`, 'a query with encoded slashes'],
  [`${SVM}/storageversionmigrations?x=/api/v1/namespaces`, 'a peer-only path, a core-looking query'],
  ['/api/v1/namespaces/oracle/configmaps?fieldSelector=metadata.name%3Doracle-cm', 'a list by name: the apiserver reads the name from the selector'],
  // Every watch spelling.
  ...(['true', '1', 't', 'T', 'True', 'TRUE', 'false', '0', 'f', 'yes', 'tRUE', ''] as const).map(
    (value): Row => [`/api/v1/namespaces/oracle/configmaps?watch=${value}&timeoutSeconds=1`, `watch=${value}`],
  ),
  ...(['true', '1', 'false'] as const).map((value): Row => [`${SVM}/storageversionmigrations?watch=${value}&timeoutSeconds=1`, `peer-only, watch=${value}`]),
  ['/api/v1/namespaces/oracle/configmaps?watch=true&watch=false&timeoutSeconds=1', 'two watch parameters'],
  ['/api/v1/namespaces/oracle/configmaps?timeoutSeconds=1&WATCH=true', 'an upper-case parameter name'],
  ['/api/v1/namespaces/oracle/configmaps?watch', 'a watch parameter without a value'],
  ['/api/v1/watch/namespaces/oracle/configmaps?timeoutSeconds=1', 'the legacy watch prefix'],
  ['/api/v1/watch/namespaces/oracle/configmaps/oracle-cm?timeoutSeconds=1', 'the legacy watch prefix, one object'],
  [`${SVM}/watch/storageversionmigrations?timeoutSeconds=1`, 'the legacy watch prefix, peer-only'],
  ['/api/v1/watch', 'the legacy watch prefix alone'],
  ['/api/v1/watch/', 'the legacy watch prefix and a slash'],
  ['/api/v1/watch/watch', 'watch of a resource named watch'],
  ['/api/v1/proxy', 'the legacy proxy prefix alone'],
  // Not resources.
  ['/', 'the root'],
  ['/api', 'core discovery'],
  ['/api/', 'core discovery, trailing slash'],
  ['/apis', 'group discovery'],
  ['/apis', 'aggregated group discovery (merged)', { headers: { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT } }],
  ['/apis/', 'group discovery, trailing slash', { headers: { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT } }],
  ['/apis%2F', 'group discovery, encoded trailing slash', { headers: { accept: AGGREGATED_DISCOVERY_JSON_ACCEPT } }],
  ['/api/v1', 'core group-version discovery'],
  ['/apis/storagemigration.k8s.io', 'a peer-only group document'],
  [SVM, 'a peer-only group-version document'],
  [`${SVM}/`, 'a peer-only group-version document, trailing slash'],
  ['/apis/storagemigration.k8s.io%2Fv1', 'a peer-only group-version document behind an encoded slash'],
  [`/openapi/v3/apis/storagemigration.k8s.io/v1`, 'a peer-only OpenAPI document'],
  ['/openapi/v3', 'the OpenAPI v3 index'],
  ['/openapi/v2', 'OpenAPI v2'],
  ['/version', 'the version'],
  ['/healthz', 'health'],
  ['/readyz/etcd', 'a readiness check'],
  ['/livez/../readyz', 'a dot-dot segment between health endpoints'],
  ['/metrics', 'metrics'],
  ['/.well-known/openid-configuration', 'OIDC discovery'],
  ['/apis/example.com/v1/widgets', 'a group nobody serves'],
  ['/apis/batch/v2/jobs', 'a version nobody serves'],
  ['/api/v2/pods', 'a core version nobody serves'],
  ['/apis/batch/v1/widgets', 'a resource nobody serves'],
  // Methods other than GET (nothing that could change a fixture).
  ['/api/v1/namespaces/oracle/configmaps', 'HEAD of a list', { method: 'HEAD' }],
  [`${SVM}/storageversionmigrations/oracle-svm`, 'HEAD of a peer-only object', { method: 'HEAD' }],
  ['/api/v1/namespaces/oracle/configmaps/does-not-exist', 'DELETE of nothing', { method: 'DELETE' }],
  [`${SVM}/storageversionmigrations/does-not-exist`, 'DELETE of nothing, peer-only', { method: 'DELETE' }],
  [`${SVM}/storageversionmigrations%2Fdoes-not-exist`, 'DELETE of nothing behind an encoded slash', { method: 'DELETE' }],
  ['/api/v1/namespaces/oracle/configmaps', 'POST without a body', { method: 'POST' }],
  // Characters HTTP does not allow in a request target.
  ['/api/v1/namespaces/oracle/configmaps/a#b', 'a fragment'],
  ['/api/v1/namespaces/oracle/configmaps?watch=true#b', 'a fragment after the query'],
  ['/api/v1/namespaces/oracle/configmaps/\u00e9', 'a raw non-ASCII byte'],
  ['/api/v1/namespaces/oracle/configmaps/a"b', 'a raw double quote'],
  ['/api/v1/namespaces/oracle/configmaps/a{b}|c^d`e', 'raw characters URLs must escape'],
  ['api/v1/namespaces/oracle/configmaps', 'no leading slash'],
  ['%2Fapi/v1/namespaces/oracle/configmaps', 'an encoded leading slash only'],
];

/** The regression table, numbered. */
export function handPickedCases(): OracleCase[] {
  return TABLE.map(([path, why, extra], i) => ({ id: `t${i}`, path, why, ...(extra ?? {}) }));
}

/** Small deterministic PRNG (mulberry32): the same seed gives the same cases on every machine. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HEADS = [
  '/api/v1',
  '/api/v1',
  '/apis/storagemigration.k8s.io/v1',
  '/apis/storagemigration.k8s.io/v1',
  '/apis/batch/v1',
  '/apis/apps/v1',
  '/apis/rbac.authorization.k8s.io/v1',
  '/apis/example.com/v1',
  '/apis/storagemigration.k8s.io',
  '/apis',
  '/api',
  '/openapi/v3/apis/storagemigration.k8s.io/v1',
  '/healthz',
  '',
];
const WORDS = [
  'namespaces',
  'namespaces',
  'oracle',
  'default',
  'storageversionmigrations',
  'storageversionmigrations',
  'oracle-svm',
  'configmaps',
  'oracle-cm',
  'jobs',
  'cronjobs',
  'pods',
  'oracle-backend',
  'clusterroles',
  'oracle\\backslash',
  'status',
  'finalize',
  'scale',
  'log',
  'proxy',
  'watch',
  'exec',
  'portforward',
  'ephemeralcontainers',
  'api',
  'apis',
  'v1',
  'x',
  '',
  '.',
  '..',
  'a:b',
  '@LONG@',
];
const SEPARATORS = ['/', '/', '/', '/', '/', '/', '//', '%2F', '%2f', '/./', '/../', '%5C', '%2F..%2F'];
const QUERIES = [
  '',
  '',
  '',
  '?watch=true&timeoutSeconds=1',
  '?watch=1&timeoutSeconds=1',
  '?watch=t&timeoutSeconds=1',
  '?watch=True&timeoutSeconds=1',
  '?watch=TRUE&timeoutSeconds=1',
  '?watch=false',
  '?x=/apis/storagemigration.k8s.io/v1/storageversionmigrations',
  '?x=%2F..%2F&y=..',
  '?fieldSelector=metadata.name%3Doracle-cm',
  '?limit=1',
];

/** Escapes one character as %XX, upper- or lower-case hex. */
function escapeChar(c: string, lower: boolean): string {
  const hex = (c.codePointAt(0) ?? 0).toString(16).padStart(2, '0');
  return `%${lower ? hex : hex.toUpperCase()}`;
}

/** `count` paths built from the table's ingredients by seeded choices: segments, separators, escapes, case, dots, queries. */
export function generatedCases(count: number, seed: number): OracleCase[] {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const cases: OracleCase[] = [];
  for (let i = 0; i < count; i++) {
    const words = Array.from({ length: Math.floor(next() * 6) }, () => pick(WORDS));
    let path = pick(HEADS);
    for (const word of words) path += next() < 0.75 ? `/${word}` : `${pick(SEPARATORS)}${word}`;
    if (path === '') path = '/';
    // Mutations, each with a small probability, applied to the path before the query.
    if (next() < 0.15) path = path.replace(/[a-z]/, (c) => c.toUpperCase());
    if (next() < 0.2) {
      const at = Math.floor(next() * path.length);
      const c = path[at] ?? '';
      if (/[A-Za-z0-9.\-_~]/.test(c)) path = `${path.slice(0, at)}${escapeChar(c, next() < 0.5)}${path.slice(at + 1)}`;
    }
    if (next() < 0.1) path = path.replace(/\./, '%2E');
    if (next() < 0.1) path = path.replace(/\//g, (s) => (next() < 0.2 ? '%2F' : s)).replace(/^%2F/, '/');
    if (next() < 0.15) path += pick(['/', '//', '/.', '/..', '%2F']);
    const method = next() < 0.1 ? 'HEAD' : 'GET';
    cases.push({ id: `g${seed}-${i}`, method, path: `${path}${pick(QUERIES)}` });
  }
  return cases;
}
