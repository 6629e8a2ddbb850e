import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { ensureSandboxPki, type SandboxPki } from '../../../src/tools/sandbox/pki.js';
import { kubeRequest } from '../../../src/sources/kubeRequest.js';

let dir: string;
let pki: SandboxPki;

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'mvproxy-kube-request-'));
  pki = await ensureSandboxPki(dir, { apiserverNames: ['a'] });
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('requests with one kubeconfig reuse one connection: no TLS handshake per request', async () => {
  const serving = pki.serving['a'];
  assert.ok(serving);
  const server = https.createServer({ key: await readFile(serving.key), cert: await readFile(serving.cert) }, (_req, res) => res.end('{}'));
  let connections = 0;
  server.on('secureConnection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      { name: 'c', server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, caFile: pki.peerCa, tlsServerName: 'kubernetes.default.svc' },
    ],
    users: [{ name: 'u', certFile: pki.admin.cert, keyFile: pki.admin.key }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  try {
    for (let i = 0; i < 3; i++) assert.equal(await kubeRequest(kubeConfig, { method: 'GET', path: '/api/v1/namespaces', timeoutMs: 5000 }), '{}');
    assert.equal(connections, 1);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
