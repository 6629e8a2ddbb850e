import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { RequestListener } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import type { TLSSocket } from 'node:tls';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { KubeConfig } from '@kubernetes/client-node';

import { ensureSandboxPki, type SandboxPki } from '../../../src/tools/sandbox/pki.js';
import { HttpTransportError, createApiserverHttpsTransport } from '../../../src/sources/apiserverHttp.js';
import { AGGREGATED_DISCOVERY_ACCEPT } from '../../../src/model/discovery.js';
import { APIS_BODY } from '../../support/discoveryBodies.js';

/** Far above any body these tests send. */
const MAX_BODY_BYTES = 1024 * 1024;

describe('apiserver HTTPS transport', () => {
  let dir: string;
  let pki: SandboxPki;
  let kubeConfig: KubeConfig;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'mvproxy-sources-'));
    pki = await ensureSandboxPki(dir, { apiserverNames: ['a'] });
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://kubeconfig-server.invalid:1', caFile: pki.peerCa, skipTLSVerify: false }],
      users: [{ name: 'u', certFile: pki.admin.cert, keyFile: pki.admin.key }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function startServer(handler: RequestListener) {
    const servingPair = pki.serving['a'];
    assert.ok(servingPair);
    const server = https.createServer(
      {
        key: await readFile(servingPair.key),
        cert: await readFile(servingPair.cert),
        ca: await readFile(pki.ca.cert),
        requestCert: true,
        rejectUnauthorized: true,
      },
      handler,
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    return { server, port };
  }

  test('dials the configured address with the kubeconfig client certificate and returns status, ETag and body', async () => {
    let seen: { accept?: string; ifNoneMatch?: string; clientCn?: string; path?: string } = {};
    const { server, port } = await startServer((req, res) => {
      const socket = req.socket as TLSSocket;
      seen = {
        accept: req.headers.accept,
        ifNoneMatch: req.headers['if-none-match'] as string | undefined,
        clientCn: String(socket.getPeerCertificate().subject?.CN),
        path: req.url,
      };
      res.writeHead(200, { ETag: '"abc"', 'Content-Type': 'application/json' });
      res.end(APIS_BODY);
    });
    const transport = createApiserverHttpsTransport(kubeConfig, { host: '127.0.0.1', port }, { maxBodyBytes: MAX_BODY_BYTES });
    try {
      const response = await transport.get('/apis', { Accept: AGGREGATED_DISCOVERY_ACCEPT, 'If-None-Match': '"old"' }, new AbortController().signal);
      assert.deepEqual(response, { status: 200, etag: '"abc"', body: APIS_BODY });
      assert.deepEqual(seen, { accept: AGGREGATED_DISCOVERY_ACCEPT, ifNoneMatch: '"old"', clientCn: 'mvproxy-admin', path: '/apis' });
    } finally {
      transport.close();
      server.close();
    }
  });

  test('a poll of four requests at once reuses its four connections at the next poll: no new TLS handshake', async () => {
    const { server, port } = await startServer((_req, res) => {
      // Answered only once all four are in: each request holds a connection of its own.
      setTimeout(() => res.end('{}'), 20);
    });
    let connections = 0;
    server.on('secureConnection', () => connections++);
    const transport = createApiserverHttpsTransport(kubeConfig, { host: '127.0.0.1', port }, { maxBodyBytes: MAX_BODY_BYTES });
    try {
      const poll = () => Promise.all(['/api', '/apis', '/openapi/v3', '/readyz'].map((p) => transport.get(p, {}, new AbortController().signal)));
      await poll();
      assert.equal(connections, 4);
      await poll();
      await poll();
      assert.equal(connections, 4);
    } finally {
      transport.close();
      server.close();
    }
  });

  test('a body over the size limit gives a too_large error: the apiserver answered', async () => {
    const { server, port } = await startServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('x'.repeat(4096));
    });
    const transport = createApiserverHttpsTransport(kubeConfig, { host: '127.0.0.1', port }, { maxBodyBytes: 1024 });
    try {
      await assert.rejects(
        transport.get('/apis', {}, new AbortController().signal),
        (err: unknown) => err instanceof HttpTransportError && err.kind === 'too_large' && /larger than 1024 bytes/.test(err.message),
      );
    } finally {
      transport.close();
      server.closeAllConnections();
      server.close();
    }
  });

  test('a body declared over the size limit is refused at once, without reading it; the next request is served', async () => {
    const { server, port } = await startServer((req, res) => {
      if (req.url === '/apis') {
        // Says 100 MiB, sends nothing: only the declared length can refuse it before the deadline.
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(100 * 1024 * 1024) });
        res.flushHeaders();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
    const transport = createApiserverHttpsTransport(kubeConfig, { host: '127.0.0.1', port }, { maxBodyBytes: 1024 * 1024, timeoutMs: 5000 });
    try {
      const started = Date.now();
      await assert.rejects(
        transport.get('/apis', {}, new AbortController().signal),
        (err: unknown) => err instanceof HttpTransportError && err.kind === 'too_large' && /104857600 declared/.test(err.message),
      );
      assert.ok(Date.now() - started < 2000, 'refused on the headers, not at the deadline');
      assert.deepEqual(await transport.get('/api', {}, new AbortController().signal), { status: 200, body: '{}' });
    } finally {
      transport.close();
      server.closeAllConnections();
      server.close();
    }
  });

  test('a server that does not answer in time gives a timeout error', async () => {
    const { server, port } = await startServer(() => {
      // never answers
    });
    const transport = createApiserverHttpsTransport(kubeConfig, { host: '127.0.0.1', port }, { timeoutMs: 200, maxBodyBytes: MAX_BODY_BYTES });
    try {
      await assert.rejects(
        transport.get('/api', {}, new AbortController().signal),
        (err: unknown) => err instanceof HttpTransportError && err.kind === 'timeout',
      );
    } finally {
      transport.close();
      server.closeAllConnections();
      server.close();
    }
  });

  test('an answer that arrived while this process stood still past the deadline is read, not timed out', async () => {
    const { server, port } = await startServer((_req, res) => {
      res.end('{}');
      // The whole process stands still past the client's deadline, the answer already sent.
      const until = Date.now() + 500;
      while (Date.now() < until);
    });
    const transport = createApiserverHttpsTransport(kubeConfig, { host: '127.0.0.1', port }, { timeoutMs: 200, maxBodyBytes: MAX_BODY_BYTES });
    try {
      assert.equal((await transport.get('/api', {}, new AbortController().signal)).status, 200);
    } finally {
      transport.close();
      server.closeAllConnections();
      server.close();
    }
  });
});
