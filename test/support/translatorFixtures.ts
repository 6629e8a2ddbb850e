// Translator settings for tests: throwaway certificate files, and the one
// shape of TranslatorSettings every test builds.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { Any } from '../../src/generated/google/protobuf/Any.js';
import type { GroupDocumentRoute, PlannedApiserver, ResourceRoute, SidecarPlan } from '../../src/planner/plan.js';
import { PEER_SERVER_NAME, type TranslatorSettings } from '../../src/translator/translator.js';
import { CONTROL_PLANE_CLUSTER } from '../../src/xds/bootstrap.js';
import { readIdentityFilterModule } from '../../src/xds/identityFilterModule.js';

export interface SidecarFiles {
  servingCert: string;
  servingKey: string;
  clientCa: string;
  frontProxyCert: string;
  frontProxyKey: string;
  peerCa: string;
}

export function sidecarSettings(port: number, files: SidecarFiles): TranslatorSettings {
  return {
    listener: { address: '127.0.0.1', port, servingCertPath: files.servingCert, servingKeyPath: files.servingKey, clientCaPath: files.clientCa },
    upstream: { frontProxyCertPath: files.frontProxyCert, frontProxyKeyPath: files.frontProxyKey, peerCaPath: files.peerCa, serverName: PEER_SERVER_NAME },
    controlPlaneCluster: CONTROL_PLANE_CLUSTER,
    // The real module: tests that hand the config to Envoy need one it loads.
    identityFilter: { module: readIdentityFilterModule() },
  };
}

/** Self-signed throwaway certificates in `dir` (enough for `envoy --mode validate`), and settings using them. */
export function throwawaySettings(dir: string, port = 6443): TranslatorSettings {
  const file = (name: string): string => join(dir, name);
  for (const name of ['serving', 'client-ca', 'front-proxy', 'peer-ca']) {
    const result = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-subj',
        '/CN=x',
        '-keyout',
        file(`${name}.key`),
        '-out',
        file(`${name}.crt`),
        '-days',
        '1',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(result.status, 0, result.stderr);
  }
  return sidecarSettings(port, {
    servingCert: file('serving.crt'),
    servingKey: file('serving.key'),
    clientCa: file('client-ca.crt'),
    frontProxyCert: file('front-proxy.crt'),
    frontProxyKey: file('front-proxy.key'),
    peerCa: file('peer-ca.crt'),
  });
}

/**
 * throwawaySettings in a new temporary directory, made when called (at a test
 * file's top level) and removed after that file's tests.
 */
export function throwawaySettingsForTestFile(prefix: string): TranslatorSettings {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return throwawaySettings(dir);
}

/** The fields of an Any in `{'@type', ...}` form, as message T. */
export function unpack<T>(any: Any | null | undefined, typeName: string): T {
  assert.ok(any && '@type' in any, `an Any of ${typeName}`);
  assert.equal(any['@type'], `type.googleapis.com/${typeName}`);
  return any as unknown as T;
}

// ---------------------------------------------------------------- golden cases

/**
 * Fixed fake certificate paths: the translator copies settings paths into its
 * output, so golden files translated with these do not depend on the machine.
 * (Envoy validation swaps them for throwawaySettings' real files.)
 */
const FIXED_FILES: SidecarFiles = {
  servingCert: '/etc/mvproxy/pki/serving.crt',
  servingKey: '/etc/mvproxy/pki/serving.key',
  clientCa: '/etc/mvproxy/pki/client-ca.crt',
  frontProxyCert: '/etc/mvproxy/pki/front-proxy.crt',
  frontProxyKey: '/etc/mvproxy/pki/front-proxy.key',
  peerCa: '/etc/mvproxy/pki/peer-ca.crt',
};

/** The certificate and key paths of settings, in a fixed order (to map one settings' files onto another's). */
export function settingsFilePaths(settings: TranslatorSettings): string[] {
  const { listener, upstream } = settings;
  return [
    listener.servingCertPath,
    listener.servingKeyPath,
    listener.clientCaPath,
    upstream.frontProxyCertPath,
    upstream.frontProxyKeyPath,
    upstream.peerCaPath,
  ];
}

export interface TranslatorGoldenCase {
  /** File name (without .json) under test/golden/translator/. */
  name: string;
  /** What the case shows, for test names and reviewers. */
  what: string;
  plan: SidecarPlan;
  /** Settings beyond the fixed ones (sidecarSettings(6443, FIXED_FILES)). */
  egressProxy?: { host: string; port: number };
}

function goldenApiserver(name: string, host: string): PlannedApiserver {
  return { name, address: { host, port: 6443 } };
}

const GOLDEN_A = goldenApiserver('a', '10.0.0.1');
const GOLDEN_B = goldenApiserver('b', '10.0.0.2');
const GOLDEN_C = goldenApiserver('c', '10.0.0.3');

function goldenPlan(routes: ResourceRoute[], groupDocuments: GroupDocumentRoute[] = [], peers: PlannedApiserver[] = [GOLDEN_B, GOLDEN_C]): SidecarPlan {
  return { node: 'a', local: GOLDEN_A, peers, routes, groupDocuments };
}

/**
 * The representative plans whose exact Envoy resources are pinned in
 * test/golden/translator/ (translatorGolden.test.ts).
 */
export const TRANSLATOR_GOLDEN_CASES: readonly TranslatorGoldenCase[] = [
  {
    name: 'no-peers',
    what: 'a sidecar alone: everything goes to the local apiserver',
    plan: goldenPlan([], [], []),
  },
  {
    name: 'reroutes',
    what: 'a rerouted core and non-core resource, with subresources routed apart from their resource (their groups stay partly local)',
    plan: goldenPlan([
      { group: '', version: 'v1', resource: 'pods', subresource: 'ephemeralcontainers', action: { kind: 'peers', peers: ['b'] } },
      { group: '', version: 'v1', resource: 'serviceaccounts', action: { kind: 'peers', peers: ['b', 'c'] } },
      { group: '', version: 'v1', resource: 'serviceaccounts', subresource: 'token', action: { kind: 'peers', peers: ['c'] } },
      { group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['b', 'c'] } },
      { group: 'batch', version: 'v1', resource: 'jobs', subresource: 'status', action: { kind: 'peers', peers: ['b'] } },
    ]),
  },
  {
    name: 'peer-only-group-version',
    what: 'a group-version only peers serve, with its group and group-version documents',
    plan: goldenPlan(
      [{ group: 'storagemigration.k8s.io', version: 'v1', resource: 'storageversionmigrations', action: { kind: 'peers', peers: ['c'] } }],
      [
        { group: 'storagemigration.k8s.io', action: { kind: 'peers', peers: ['c'] } },
        { group: 'storagemigration.k8s.io', version: 'v1', action: { kind: 'peers', peers: ['c'] } },
      ],
    ),
  },
  {
    name: 'unavailable',
    what: 'resources and group documents only unreachable peers serve: 503 from Envoy',
    plan: goldenPlan(
      [
        { group: '', version: 'v1', resource: 'pods', subresource: 'resize', action: { kind: 'unavailable', servedBy: ['b', 'c'] } },
        { group: 'apps', version: 'v1', resource: 'deployments', action: { kind: 'unavailable', servedBy: ['b'] } },
      ],
      [
        { group: 'apps', action: { kind: 'unavailable', servedBy: ['b'] } },
        { group: 'apps', version: 'v1', action: { kind: 'unavailable', servedBy: ['b'] } },
      ],
    ),
  },
  {
    name: 'local-down-fallback',
    what: 'the local apiserver is down: what it served goes to peers, what it would have answered to the fallback peers',
    plan: {
      ...goldenPlan([
        { group: '', version: 'v1', resource: 'pods', action: { kind: 'peers', peers: ['b'] } },
        { group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['b', 'c'] } },
      ]),
      fallback: { kind: 'peers', peers: ['b', 'c'] },
    },
  },
  {
    name: 'long-names',
    what: 'the longest built-in group, version, resource and subresource names',
    plan: goldenPlan([
      { group: '', version: 'v1', resource: 'namespaces', subresource: 'finalize', action: { kind: 'peers', peers: ['b'] } },
      {
        group: 'admissionregistration.k8s.io',
        version: 'v1alpha1',
        resource: 'validatingadmissionpolicies',
        subresource: 'status',
        action: { kind: 'unavailable', servedBy: ['b'] },
      },
      { group: 'admissionregistration.k8s.io', version: 'v1alpha1', resource: 'validatingadmissionpolicybindings', action: { kind: 'peers', peers: ['b'] } },
      {
        group: 'flowcontrol.apiserver.k8s.io',
        version: 'v1beta3',
        resource: 'prioritylevelconfigurations',
        subresource: 'status',
        action: { kind: 'peers', peers: ['b', 'c'] },
      },
    ]),
  },
  {
    name: 'egress-proxy',
    what: 'peers (each alone and as a set) reached through an HTTP CONNECT egress proxy, the local apiserver directly',
    plan: goldenPlan([{ group: 'batch', version: 'v1', resource: 'jobs', action: { kind: 'peers', peers: ['b', 'c'] } }]),
    egressProxy: { host: '10.0.0.254', port: 3128 },
  },
];

/** The settings a golden case is translated with: fixed paths, the real identity filter module. */
export function goldenSettings(goldenCase: TranslatorGoldenCase): TranslatorSettings {
  const settings = sidecarSettings(6443, FIXED_FILES);
  if (goldenCase.egressProxy === undefined) return settings;
  return { ...settings, upstream: { ...settings.upstream, egressProxy: goldenCase.egressProxy } };
}
