// The identity filter (envoy/filters, the identity module compiled to
// WebAssembly), run through a proxy-wasm host shim: requests as Envoy
// forwards them (with x-forwarded-client-cert for a verified client
// certificate) and what kube-apiserver would receive from the filter.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

import { readFilterModules } from '../../src/xds/filterModule.js';
import { formatXfcc, testCa, testLeaf, type LeafOptions, type TestCert } from './clientCerts.js';
import type { IdentityOutcome } from './identityCases.js';
import { pemOf } from './derBuilder.js';
import { ProxyWasmHost, type HeaderList, type HostOptions, type RequestResult } from './proxyWasmHost.js';

export const CREDENTIAL_ID = 'x-remote-extra-authentication.kubernetes.io%2fcredential-id';
export const BASE: HeaderList = [
  [':method', 'GET'],
  [':path', '/api/v1/pods'],
  [':authority', 'kas-a'],
];
/** A client that also sends a bearer token. */
export const BEARER: HeaderList = [['authorization', 'Bearer token']];

let wasm: Buffer | undefined;
let documentWasm: Buffer | undefined;
let clientCa: Promise<TestCert> | undefined;

/** The compiled identity module, read once per test process. */
export function filterModule(): Buffer {
  wasm ??= readFilterModules().identity;
  return wasm;
}

/** The compiled document module (the document filters), read once per test process. */
export function documentModule(): Buffer {
  documentWasm ??= readFilterModules().documents;
  return documentWasm;
}

export function newHost(opts: HostOptions = {}): ProxyWasmHost {
  return ProxyWasmHost.load(filterModule(), opts);
}

/** A client certificate (client authentication unless `usages` says otherwise) from the client CA, made once per test process. */
export async function leaf(opts: Partial<LeafOptions> & Pick<LeafOptions, 'name'>): Promise<TestCert> {
  clientCa ??= testCa('client-ca');
  return testLeaf(await clientCa, { usages: ['client'], ...opts });
}

/** Headers of a request Envoy forwards with this certificate (and extra client headers). */
export function withCert(certPem: string, extra: HeaderList = []): HeaderList {
  return [...BASE, ...extra, ['x-forwarded-client-cert', formatXfcc(certPem)]];
}

export function withXfcc(xfcc: string, extra: HeaderList = []): HeaderList {
  return [...BASE, ...extra, ['x-forwarded-client-cert', xfcc]];
}

export function values(result: RequestResult, name: string): string[] {
  return result.headers.filter(([k]) => k.toLowerCase() === name).map(([, v]) => v);
}

/** What the apiserver would receive: an identity, none, or a 401 from the filter. */
export function outcome(result: RequestResult): IdentityOutcome {
  if (result.localResponse !== undefined) {
    assert.equal(result.action, 'pause', 'a rejected request stops');
    return { kind: 'rejected' };
  }
  assert.equal(result.action, 'continue');
  assert.deepEqual(values(result, 'x-forwarded-client-cert'), [], 'x-forwarded-client-cert never reaches the apiserver');
  const identityHeaders = result.headers.filter(([k]) => k.toLowerCase().startsWith('x-remote-'));
  const user = values(result, 'x-remote-user');
  if (user.length === 0) {
    assert.deepEqual(identityHeaders, [], 'no identity headers without a user');
    return { kind: 'none' };
  }
  assert.equal(user.length, 1);
  const uid = values(result, 'x-remote-uid');
  assert.ok(uid.length <= 1);
  for (const [k] of identityHeaders) assert.ok(['x-remote-user', 'x-remote-group', 'x-remote-uid', CREDENTIAL_ID].includes(k), k);
  const out: IdentityOutcome = { kind: 'identity', user: user[0] as string, groups: values(result, 'x-remote-group') };
  if (uid.length === 1) out.uid = uid[0] as string;
  return out;
}

/** What the apiserver would receive for a request with a fresh client certificate. */
export async function outcomeOf(opts: Partial<LeafOptions> & Pick<LeafOptions, 'name'>): Promise<IdentityOutcome> {
  const cert = await leaf(opts);
  return outcome(newHost().request(withCert(cert.certPem)));
}

/** The x-forwarded-client-cert Envoy would write for a (hand-built) certificate. */
export function xfccOfDer(der: Buffer): string {
  return `Hash=${createHash('sha256').update(der).digest('hex')};Cert="${encodeURIComponent(pemOf(der))}"`;
}

export function outcomeOfDer(der: Buffer, host = newHost()): IdentityOutcome {
  return outcome(host.request(withXfcc(xfccOfDer(der))));
}
