// PKI for the local sandbox: every certificate and key the sandbox's
// kube-apiservers, Envoy sidecars and the mvproxy control plane need.
//
// Trust layout (docs/identity.md):
// - cluster CA: signs apiserver serving certs, client certs (admin, alice)
//   and the xDS mTLS pair; it is every apiserver's --client-ca-file and the
//   peer CA Envoy verifies peer serving certs against;
// - front-proxy CA: a separate CA, the apiserver's
//   --requestheader-client-ca-file. It must differ from the cluster CA, or
//   Envoy's front-proxy cert would itself authenticate as a user.
import { type KeyObject, X509Certificate, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import type * as X509Types from '@peculiar/x509';
import { writeFileAtomicSync } from '../../util/atomicWrite.js';
import { kubernetesServiceIp } from '../../entry/controlPlane.js';
import { EC_SIGN_ALG, issueCa, loadX509, newKeyPair, randomSerial, toPem, validity, type IssuedCert, type X509Module } from './x509.js';

export interface CertKeyPaths {
  cert: string;
  key: string;
}

/** Absolute paths of every file ensureSandboxPki manages. */
export interface SandboxPki {
  dir: string;
  ca: CertKeyPaths;
  frontProxyCa: CertKeyPaths;
  /** CA that signs apiserver serving certs (the cluster CA's ca.crt). */
  peerCa: string;
  /** One serving pair per apiserver name. */
  serving: Record<string, CertKeyPaths>;
  /** CN mvproxy-admin, O system:masters. */
  admin: CertKeyPaths;
  /** CN alice, no groups. */
  user: CertKeyPaths;
  /** CN mvproxy-control-plane, no groups: the control plane's own identity, with only deploy/rbac.yaml's rights. */
  controlPlaneClient: CertKeyPaths;
  /** CN system:kube-controller-manager: the identity kubeadm gives kube-controller-manager (controller-manager.conf). */
  controllerManagerClient: CertKeyPaths;
  /** Signed by the front-proxy CA; Envoy presents it to apiservers. */
  frontProxyClient: CertKeyPaths;
  /** CN of frontProxyClient, for --requestheader-allowed-names. */
  frontProxyClientName: string;
  xdsServer: CertKeyPaths;
  /**
   * One xDS client pair per apiserver name, for its sidecar on the mutual-TLS
   * xDS listener: CN = the name, the only node id that stream may claim.
   */
  xdsClients: Record<string, CertKeyPaths>;
  /** publicKey: SPKI PEM (--service-account-key-file); privateKey: PKCS#8 PEM (--service-account-signing-key-file). */
  serviceAccount: { publicKey: string; privateKey: string };
}

export interface SandboxPkiOptions {
  /** Apiserver names: each becomes a serving cert's CN and a DNS SAN (DNS-1123 subdomain). */
  apiserverNames: string[];
  /**
   * Extra SANs (DNS names or IP addresses) per apiserver name, for example the
   * address of its network namespace, so clients can dial it by that address.
   */
  extraSans?: Record<string, string[]>;
}

/** The sandbox's --service-cluster-ip-range; its first address is kubernetes.default's IP. */
export const SANDBOX_SERVICE_CLUSTER_IP_RANGE = '10.0.0.0/24';
export const SANDBOX_KUBERNETES_SERVICE_IP = kubernetesServiceIp(SANDBOX_SERVICE_CLUSTER_IP_RANGE);
const FRONT_PROXY_CLIENT_NAME = 'front-proxy-client';
const ADMIN_USER = 'mvproxy-admin';
const ADMIN_GROUP = 'system:masters';
const ORDINARY_USER = 'alice';
/** The user deploy/rbac.yaml binds. */
export const CONTROL_PLANE_USER = 'mvproxy-control-plane';
/** The user the built-in ClusterRole system:kube-controller-manager is bound to. */
const CONTROLLER_MANAGER_USER = 'system:kube-controller-manager';

/** DNS SANs every apiserver serving cert carries (in-cluster names, as kubeadm issues them). */
export const SERVING_DNS_NAMES: readonly string[] = [
  'localhost',
  'kubernetes',
  'kubernetes.default',
  'kubernetes.default.svc',
  'kubernetes.default.svc.cluster.local',
];
const SERVING_IPS: readonly string[] = ['127.0.0.1', SANDBOX_KUBERNETES_SERVICE_IP];

// On reuse, regenerate when anything expires sooner than this.
const RENEW_BEFORE_MS = 24 * 60 * 60 * 1000;

// DNS-1123 subdomain: the name is both a DNS SAN and part of a file name.
const NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

// Serialise calls per directory inside this process, so two concurrent callers
// never interleave a regeneration and leave leaves signed by different CAs.
const locks = new Map<string, Promise<unknown>>();

/**
 * Create the sandbox PKI under `dir`, or reuse it when every file exists and
 * is consistent (parses, pairs with its key, chains to the right CA, carries
 * the required SANs, is not about to expire). Anything missing or
 * inconsistent regenerates everything, so the set always shares one CA pair.
 */
export async function ensureSandboxPki(dir: string, opts: SandboxPkiOptions): Promise<SandboxPki> {
  const abs = path.resolve(dir);
  const names = [...new Set(opts.apiserverNames)];
  for (const name of names) {
    if (name.length > 253 || !NAME_RE.test(name)) {
      throw new Error(`invalid apiserver name ${JSON.stringify(name)}: must be a DNS-1123 subdomain`);
    }
  }
  for (const [name, sans] of Object.entries(opts.extraSans ?? {})) {
    for (const san of sans) {
      if (isIP(san) === 0 && !NAME_RE.test(san)) {
        throw new Error(`invalid extra SAN ${JSON.stringify(san)} for ${name}: not an IP or DNS name`);
      }
    }
  }
  const layout = pkiLayout(abs, names);
  const sans = (name: string): string[] => [...SERVING_DNS_NAMES, name, ...SERVING_IPS, ...(opts.extraSans?.[name] ?? [])];

  const previous = locks.get(abs) ?? Promise.resolve();
  const run = previous
    .catch(() => undefined)
    .then(async () => {
      await mkdir(abs, { recursive: true, mode: 0o700 });
      if (!(await isReusable(layout, names, sans))) {
        await generate(layout, names, sans);
      }
      return layout;
    });
  locks.set(abs, run);
  try {
    return await run;
  } finally {
    if (locks.get(abs) === run) locks.delete(abs);
  }
}

function pkiLayout(dir: string, names: string[]): SandboxPki {
  const pair = (base: string): CertKeyPaths => ({
    cert: path.join(dir, `${base}.crt`),
    key: path.join(dir, `${base}.key`),
  });
  const ca = pair('ca');
  const serving: Record<string, CertKeyPaths> = {};
  const xdsClients: Record<string, CertKeyPaths> = {};
  for (const name of names) {
    serving[name] = pair(`serving-${name}`);
    xdsClients[name] = pair(`xds-client-${name}`);
  }
  return {
    dir,
    ca,
    frontProxyCa: pair('front-proxy-ca'),
    peerCa: ca.cert,
    serving,
    admin: pair('admin'),
    user: pair('user'),
    controlPlaneClient: pair('control-plane-client'),
    controllerManagerClient: pair('controller-manager-client'),
    frontProxyClient: pair('front-proxy-client'),
    frontProxyClientName: FRONT_PROXY_CLIENT_NAME,
    xdsServer: pair('xds-server'),
    xdsClients,
    serviceAccount: { publicKey: path.join(dir, 'sa.pub'), privateKey: path.join(dir, 'sa.key') },
  };
}

// ---------------------------------------------------------------- reuse check

interface Loaded {
  cert: X509Certificate;
  key: KeyObject;
}

async function loadPair(p: CertKeyPaths): Promise<Loaded> {
  const [certPem, keyPem] = await Promise.all([readFile(p.cert), readFile(p.key)]);
  return { cert: new X509Certificate(certPem), key: createPrivateKey(keyPem) };
}

function sanOk(cert: X509Certificate, san: string): boolean {
  return isIP(san) === 0 ? cert.checkHost(san, { wildcards: false }) !== undefined : cert.checkIP(san) !== undefined;
}

async function isReusable(layout: SandboxPki, names: string[], sans: (name: string) => string[]): Promise<boolean> {
  try {
    const now = Date.now();
    const fresh = (c: X509Certificate): boolean => new Date(c.validTo).getTime() - now > RENEW_BEFORE_MS && new Date(c.validFrom).getTime() <= now;
    const paired = (l: Loaded): boolean => l.cert.checkPrivateKey(l.key) && fresh(l.cert);

    const ca = await loadPair(layout.ca);
    const fpCa = await loadPair(layout.frontProxyCa);
    for (const c of [ca, fpCa]) {
      if (!paired(c) || !c.cert.ca || !c.cert.verify(c.cert.publicKey)) return false;
    }
    // The two CAs must not share a key, or the front-proxy cert would pass as a user cert.
    if (spkiDer(ca.cert.publicKey).equals(spkiDer(fpCa.cert.publicKey))) return false;

    const leafOk = (l: Loaded, issuer: Loaded): boolean => paired(l) && !l.cert.ca && l.cert.verify(issuer.cert.publicKey) && l.cert.checkIssued(issuer.cert);

    for (const name of names) {
      const p = layout.serving[name];
      const x = layout.xdsClients[name];
      if (p === undefined || x === undefined) return false;
      const s = await loadPair(p);
      if (!leafOk(s, ca) || !sans(name).every((san) => sanOk(s.cert, san))) return false;
      if (!leafOk(await loadPair(x), ca)) return false;
    }
    for (const p of [layout.admin, layout.user, layout.controlPlaneClient, layout.controllerManagerClient, layout.xdsServer]) {
      if (!leafOk(await loadPair(p), ca)) return false;
    }
    if (!leafOk(await loadPair(layout.frontProxyClient), fpCa)) return false;

    const saPriv = createPrivateKey(await readFile(layout.serviceAccount.privateKey));
    const saPub = createPublicKey(await readFile(layout.serviceAccount.publicKey));
    if (!spkiDer(createPublicKey(saPriv)).equals(spkiDer(saPub))) return false;
    return true;
  } catch {
    // Missing, truncated or unparsable file: regenerate everything.
    return false;
  }
}

function spkiDer(k: KeyObject): Buffer {
  return k.export({ type: 'spki', format: 'der' });
}

// ---------------------------------------------------------------- generation

export interface LeafSpec {
  commonName: string;
  organizations?: string[];
  usage: 'server' | 'client';
  sans?: string[];
}

export async function issueLeaf(x509: X509Module, issuer: IssuedCert, spec: LeafSpec): Promise<IssuedCert> {
  const keys = await newKeyPair();
  // O before CN, the usual DN order; Kubernetes reads groups from every O.
  const subject: X509Types.JsonName = [...(spec.organizations ?? []).map((o) => ({ O: [o] })), { CN: [spec.commonName] }];
  const issuerSki = issuer.cert.getExtension(x509.SubjectKeyIdentifierExtension);
  if (issuerSki === null) throw new Error('issuer CA lacks a subjectKeyIdentifier');
  const extensions: X509Types.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    // ECDSA keys do not encipher, so digitalSignature alone (keyEncipherment is RSA-only).
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension([spec.usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth], false),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    new x509.AuthorityKeyIdentifierExtension(issuerSki.keyId),
  ];
  if (spec.sans !== undefined && spec.sans.length > 0) {
    extensions.push(
      new x509.SubjectAlternativeNameExtension(
        spec.sans.map((v) => ({ type: isIP(v) === 0 ? ('dns' as const) : ('ip' as const), value: v })),
        false,
      ),
    );
  }
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject,
    issuer: issuer.cert.subjectName,
    ...validity(),
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: EC_SIGN_ALG,
    extensions,
  });
  return { ...toPem(cert, keys), cert, keys };
}

async function writePair(p: CertKeyPaths, issued: IssuedCert): Promise<void> {
  writeFileAtomicSync(p.key, issued.keyPem, { mode: 0o600 });
  writeFileAtomicSync(p.cert, issued.certPem, { mode: 0o644 });
}

async function generate(layout: SandboxPki, names: string[], sans: (name: string) => string[]): Promise<void> {
  const x509 = await loadX509();
  const ca = await issueCa('mvproxy-sandbox-ca');
  const fpCa = await issueCa('mvproxy-sandbox-front-proxy-ca');

  const serving = new Map<string, IssuedCert>();
  const xdsClients = new Map<string, IssuedCert>();
  for (const name of names) {
    serving.set(name, await issueLeaf(x509, ca, { commonName: name, usage: 'server', sans: sans(name) }));
    xdsClients.set(name, await issueLeaf(x509, ca, { commonName: name, usage: 'client' }));
  }
  const admin = await issueLeaf(x509, ca, { commonName: ADMIN_USER, organizations: [ADMIN_GROUP], usage: 'client' });
  const user = await issueLeaf(x509, ca, { commonName: ORDINARY_USER, usage: 'client' });
  const controlPlaneClient = await issueLeaf(x509, ca, { commonName: CONTROL_PLANE_USER, usage: 'client' });
  const controllerManagerClient = await issueLeaf(x509, ca, { commonName: CONTROLLER_MANAGER_USER, usage: 'client' });
  const fpClient = await issueLeaf(x509, fpCa, { commonName: FRONT_PROXY_CLIENT_NAME, usage: 'client' });
  const xdsServer = await issueLeaf(x509, ca, {
    commonName: 'mvproxy-xds',
    usage: 'server',
    sans: ['localhost', '127.0.0.1'],
  });

  // RSA for the service-account keys: every kube-apiserver version accepts RS256.
  const sa = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });

  // Everything is generated in memory first; files are written only once all succeeded.
  await writePair(layout.ca, ca);
  await writePair(layout.frontProxyCa, fpCa);
  for (const [name, issued] of serving) {
    const p = layout.serving[name];
    if (p !== undefined) await writePair(p, issued);
  }
  for (const [name, issued] of xdsClients) {
    const p = layout.xdsClients[name];
    if (p !== undefined) await writePair(p, issued);
  }
  await writePair(layout.admin, admin);
  await writePair(layout.user, user);
  await writePair(layout.controlPlaneClient, controlPlaneClient);
  await writePair(layout.controllerManagerClient, controllerManagerClient);
  await writePair(layout.frontProxyClient, fpClient);
  await writePair(layout.xdsServer, xdsServer);
  writeFileAtomicSync(layout.serviceAccount.privateKey, sa.privateKey, { mode: 0o600 });
  writeFileAtomicSync(layout.serviceAccount.publicKey, sa.publicKey, { mode: 0o644 });
}
