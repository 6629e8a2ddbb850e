import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat, unlink } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect, createServer, type TLSSocket } from 'node:tls';

import { kubeconfigYaml, writeKubeconfig } from '../../../../src/tools/sandbox/kubeconfig.js';
import { SERVING_DNS_NAMES, ensureSandboxPki, type CertKeyPaths, type SandboxPki } from '../../../../src/tools/sandbox/pki.js';

const NAMES = ['apiserver-a', 'apiserver-b'];

async function cert(file: string): Promise<X509Certificate> {
  return new X509Certificate(await readFile(file));
}

/**
 * Whether a TLS peer trusting `caFile` accepts `presented` as a server's
 * certificate or as a client's: undefined if so, else OpenSSL's verify error
 * (the chain, then the purpose: serverAuth for a server, clientAuth for a client).
 */
async function verdict(caFile: string, presented: CertKeyPaths, as: 'server' | 'client'): Promise<string | undefined> {
  const [ca, mine] = await Promise.all([readFile(caFile), Promise.all([readFile(presented.cert), readFile(presented.key)])]);
  const [cert, key] = mine;
  // The other side: a client trusting ca, or a server asking for a client certificate signed by ca.
  const serving = pki.serving['apiserver-a'];
  assert.ok(serving);
  const server = createServer(
    as === 'server'
      ? { cert, key }
      : { cert: await readFile(serving.cert), key: await readFile(serving.key), ca, requestCert: true, rejectUnauthorized: false },
  );
  const accepted = new Promise<TLSSocket>((resolve) => server.once('secureConnection', resolve));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...(as === 'server' ? { ca } : { cert, key }) });
  try {
    await once(client, 'secureConnect');
    const judged = as === 'server' ? client : await accepted;
    return judged.authorized ? undefined : String(judged.authorizationError);
  } finally {
    client.destroy();
    server.close();
    void accepted.then((socket) => socket.destroy());
  }
}

/** Subject as attribute/value pairs (Node prints one "K=V" per line). */
function subjectAttrs(c: X509Certificate): Array<[string, string]> {
  return c.subject.split('\n').map((line) => {
    const i = line.indexOf('=');
    return [line.slice(0, i), line.slice(i + 1)];
  });
}

let root: string;
let pki: SandboxPki;

before(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'mvproxy-pki-'));
  pki = await ensureSandboxPki(path.join(root, 'pki'), {
    apiserverNames: NAMES,
    extraSans: { 'apiserver-b': ['10.200.0.2'] },
  });
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('ensureSandboxPki', () => {
  test('returns absolute paths inside dir, peer CA is the cluster CA', () => {
    assert.ok(path.isAbsolute(pki.dir));
    assert.equal(pki.peerCa, pki.ca.cert);
    assert.equal(pki.frontProxyClientName, 'front-proxy-client');
    assert.deepEqual(Object.keys(pki.serving).sort(), NAMES);
    assert.ok(path.dirname(pki.serving['apiserver-a']?.cert ?? '') === pki.dir);
  });

  test('serving cert verifies against the cluster CA and carries the SANs', async () => {
    const ca = await cert(pki.ca.cert);
    for (const name of NAMES) {
      const paths = pki.serving[name];
      assert.ok(paths);
      const s = await cert(paths.cert);
      assert.ok(s.verify(ca.publicKey), `${name} signed by cluster CA`);
      assert.ok(s.checkIssued(ca));
      assert.equal(s.ca, false);
      assert.deepEqual(subjectAttrs(s), [['CN', name]]);
      for (const dns of [...SERVING_DNS_NAMES, name]) assert.equal(s.checkHost(dns), dns, dns);
      for (const ip of ['127.0.0.1', '10.0.0.1']) assert.equal(s.checkIP(ip), ip, ip);
      assert.equal(s.checkHost('evil.example'), undefined);
      assert.deepEqual(s.keyUsage, ['1.3.6.1.5.5.7.3.1']); // serverAuth only
    }
  });

  test("extra SANs go only to their apiserver's serving cert", async () => {
    const a = await cert(pki.serving['apiserver-a']?.cert ?? '');
    const b = await cert(pki.serving['apiserver-b']?.cert ?? '');
    assert.equal(b.checkIP('10.200.0.2'), '10.200.0.2');
    assert.equal(a.checkIP('10.200.0.2'), undefined);
    assert.equal(a.checkHost('apiserver-b'), undefined);
  });

  test('front-proxy client cert is signed by the front-proxy CA and not by the cluster CA', async () => {
    const fp = await cert(pki.frontProxyClient.cert);
    const fpCa = await cert(pki.frontProxyCa.cert);
    const ca = await cert(pki.ca.cert);
    assert.ok(fp.verify(fpCa.publicKey));
    assert.equal(fp.verify(ca.publicKey), false);
    assert.deepEqual(subjectAttrs(fp), [['CN', 'front-proxy-client']]);
    assert.deepEqual(fp.keyUsage, ['1.3.6.1.5.5.7.3.2']); // clientAuth
  });

  test('front-proxy CA is a different CA from the cluster CA', async () => {
    const fpCa = await cert(pki.frontProxyCa.cert);
    const ca = await cert(pki.ca.cert);
    assert.notEqual(fpCa.subject, ca.subject);
    assert.equal(fpCa.verify(ca.publicKey), false);
    assert.ok(fpCa.ca && ca.ca);
  });

  test('admin cert has CN mvproxy-admin and O=system:masters', async () => {
    const admin = await cert(pki.admin.cert);
    assert.deepEqual(subjectAttrs(admin), [
      ['O', 'system:masters'],
      ['CN', 'mvproxy-admin'],
    ]);
    assert.ok(admin.verify((await cert(pki.ca.cert)).publicKey));
    assert.deepEqual(admin.keyUsage, ['1.3.6.1.5.5.7.3.2']);
  });

  test('user cert is CN alice with no O', async () => {
    const user = await cert(pki.user.cert);
    assert.deepEqual(subjectAttrs(user), [['CN', 'alice']]);
    assert.ok(user.verify((await cert(pki.ca.cert)).publicKey));
  });

  test('xDS server and per-sidecar client certs are signed by the cluster CA with the right usages, each client naming its apiserver', async () => {
    const ca = await cert(pki.ca.cert);
    const server = await cert(pki.xdsServer.cert);
    const client = await cert(pki.xdsClients['apiserver-a']?.cert ?? '');
    assert.ok(server.verify(ca.publicKey) && client.verify(ca.publicKey));
    assert.equal(server.checkHost('localhost'), 'localhost');
    assert.equal(server.checkIP('127.0.0.1'), '127.0.0.1');
    assert.deepEqual(server.keyUsage, ['1.3.6.1.5.5.7.3.1']);
    assert.deepEqual(subjectAttrs(client), [['CN', 'apiserver-a']]);
    assert.deepEqual(client.keyUsage, ['1.3.6.1.5.5.7.3.2']);
  });

  test('private keys are PKCS#8 PEM and match their certificates', async () => {
    const pairs = [pki.ca, pki.frontProxyCa, ...Object.values(pki.serving), pki.admin, pki.user];
    pairs.push(pki.frontProxyClient, pki.xdsServer, ...Object.values(pki.xdsClients));
    for (const p of pairs) {
      const keyPem = await readFile(p.key, 'utf8');
      assert.match(keyPem, /^-----BEGIN PRIVATE KEY-----\n/, p.key);
      assert.ok((await cert(p.cert)).checkPrivateKey(createPrivateKey(keyPem)), p.key);
    }
  });

  test('service-account key pair is RSA 2048, PKCS#8 private and SPKI public, and matches', async () => {
    const privPem = await readFile(pki.serviceAccount.privateKey, 'utf8');
    const pubPem = await readFile(pki.serviceAccount.publicKey, 'utf8');
    assert.match(privPem, /^-----BEGIN PRIVATE KEY-----\n/);
    assert.match(pubPem, /^-----BEGIN PUBLIC KEY-----\n/);
    const priv = createPrivateKey(privPem);
    assert.equal(priv.asymmetricKeyType, 'rsa');
    assert.equal(priv.asymmetricKeyDetails?.modulusLength, 2048);
    const data = Buffer.from('token');
    assert.ok(verify('sha256', data, createPublicKey(pubPem), sign('sha256', data, priv)));
  });

  test('private key files are mode 0600 and certificates 0644', async () => {
    const keys = [pki.ca.key, pki.frontProxyCa.key, pki.admin.key, pki.user.key, pki.serviceAccount.privateKey];
    keys.push(pki.frontProxyClient.key, pki.xdsServer.key, ...Object.values(pki.xdsClients).map((p) => p.key));
    for (const p of Object.values(pki.serving)) keys.push(p.key);
    for (const k of keys) assert.equal((await stat(k)).mode & 0o777, 0o600, k);
    for (const c of [pki.ca.cert, pki.admin.cert, pki.serviceAccount.publicKey]) {
      assert.equal((await stat(c)).mode & 0o777, 0o644, c);
    }
  });

  test('a second call reuses the files (same bytes)', async () => {
    const files = [pki.ca.cert, pki.ca.key, pki.serving['apiserver-a']?.cert ?? '', pki.serviceAccount.privateKey];
    const before = await Promise.all(files.map((f) => readFile(f)));
    const again = await ensureSandboxPki(pki.dir, {
      apiserverNames: NAMES,
      extraSans: { 'apiserver-b': ['10.200.0.2'] },
    });
    assert.deepEqual(again, pki);
    const afterBytes = await Promise.all(files.map((f) => readFile(f)));
    afterBytes.forEach((b, i) => {
      assert.ok(b.equals(before[i] ?? Buffer.alloc(0)), files[i]);
    });
  });

  test('concurrent calls on one directory yield one consistent set', async () => {
    const dir = path.join(root, 'concurrent');
    const [x, y] = await Promise.all([ensureSandboxPki(dir, { apiserverNames: ['a'] }), ensureSandboxPki(dir, { apiserverNames: ['a'] })]);
    assert.deepEqual(x, y);
    const ca = await cert(x.ca.cert);
    assert.ok((await cert(x.serving['a']?.cert ?? '')).verify(ca.publicKey));
  });

  test('a missing file regenerates everything, CA included', async () => {
    const dir = path.join(root, 'regen');
    const first = await ensureSandboxPki(dir, { apiserverNames: ['a'] });
    const oldCa = await readFile(first.ca.cert);
    await unlink(first.user.key);
    const second = await ensureSandboxPki(dir, { apiserverNames: ['a'] });
    const newCa = await cert(second.ca.cert);
    assert.equal(newCa.raw.equals(oldCa), false);
    assert.ok((await cert(second.serving['a']?.cert ?? '')).verify(newCa.publicKey));
    assert.ok((await cert(second.user.cert)).checkPrivateKey(createPrivateKey(await readFile(second.user.key))));
  });

  test('rejects an apiserver name that is not a DNS-1123 subdomain', async () => {
    await assert.rejects(ensureSandboxPki(path.join(root, 'bad'), { apiserverNames: ['../etc'] }), /invalid apiserver name/);
  });

  test("TLS handshakes (Node's OpenSSL) verify the chains and purposes", async () => {
    for (const p of [...Object.values(pki.serving), pki.xdsServer]) assert.equal(await verdict(pki.ca.cert, p, 'server'), undefined, p.cert);
    for (const p of [pki.admin, pki.user, ...Object.values(pki.xdsClients)]) assert.equal(await verdict(pki.ca.cert, p, 'client'), undefined, p.cert);
    assert.equal(await verdict(pki.frontProxyCa.cert, pki.frontProxyClient, 'client'), undefined);
    // The front-proxy client is not the cluster CA's, and no certificate serves the other purpose.
    assert.equal(await verdict(pki.ca.cert, pki.frontProxyClient, 'client'), 'UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    assert.equal(await verdict(pki.ca.cert, pki.admin, 'server'), 'INVALID_PURPOSE');
    assert.equal(await verdict(pki.ca.cert, pki.serving['apiserver-a'] ?? pki.admin, 'client'), 'INVALID_PURPOSE');
  });
});

describe('kubeconfig', () => {
  test('client-certificate kubeconfig names cluster, user and context after name', () => {
    const cfg: unknown = JSON.parse(
      kubeconfigYaml({ server: 'https://127.0.0.1:6443', caFile: '/p/ca.crt', user: { certFile: '/p/a.crt', keyFile: '/p/a.key' } }),
    );
    assert.deepEqual(cfg, {
      apiVersion: 'v1',
      kind: 'Config',
      preferences: {},
      clusters: [{ name: 'mvproxy', cluster: { server: 'https://127.0.0.1:6443', 'certificate-authority': '/p/ca.crt' } }],
      users: [{ name: 'mvproxy', user: { 'client-certificate': '/p/a.crt', 'client-key': '/p/a.key' } }],
      contexts: [{ name: 'mvproxy', context: { cluster: 'mvproxy', user: 'mvproxy' } }],
      'current-context': 'mvproxy',
    });
  });

  test('token kubeconfig carries the token and the given name', () => {
    const cfg = JSON.parse(kubeconfigYaml({ server: 'https://x:1', caFile: '/ca', user: { token: 't0k"en' }, name: 'alice' })) as {
      users: Array<{ name: string; user: Record<string, string> }>;
      'current-context': string;
    };
    assert.deepEqual(cfg.users, [{ name: 'alice', user: { token: 't0k"en' } }]);
    assert.equal(cfg['current-context'], 'alice');
  });

  // That kubectl accepts what it writes: test/e2e/kubeconfigKubectl.test.ts (the installer's kubectl).
  test('writeKubeconfig writes the kubeconfig, mode 0600', async () => {
    const file = path.join(root, 'kube', 'admin.kubeconfig');
    const options = { server: 'https://127.0.0.1:6443', caFile: pki.ca.cert, user: { certFile: pki.admin.cert, keyFile: pki.admin.key } };
    await writeKubeconfig(file, options);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal(await readFile(file, 'utf8'), kubeconfigYaml(options));
  });
});
