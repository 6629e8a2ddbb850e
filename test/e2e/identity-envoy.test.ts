// Certificate identity through a real Envoy sidecar (test/support/echoSidecar.ts):
// a verified client certificate becomes X-Remote-* over a front-proxy
// connection, forged identity headers never arrive, the identity table
// (test/support/identityCases.ts) end to end, resumed sessions, expiry on an
// open connection, and no ext_proc call for ordinary requests.
// Merged discovery documents through the same sidecar: merged-documents-envoy.test.ts.
import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { describe, test } from 'node:test';

import { testCa, testLeaf, type TestCert } from '../support/clientCerts.js';
import { alice, certs, echoed, extProcCalls, hanging, listenerPort, send, servingCa, sidecar, useEchoSidecar } from '../support/echoSidecar.js';
import { IDENTITY_CASES, type IdentityOutcome } from '../support/identityCases.js';

useEchoSidecar();

/** Identity headers a client may try to smuggle, in several spellings. */
const FORGED = {
  'X-Remote-User': 'mallory',
  'X-REMOTE-GROUP': 'system:masters',
  'x-remote-uid': '0',
  'X-Remote-Extra-Scopes': 'everything',
  'X-Remote-Extra-Authentication.kubernetes.io%2fcredential-id': 'X509SHA256=00',
  X_Remote_User: 'mallory',
  'X-Forwarded-Client-Cert': 'Hash=00;Cert="forged"',
};
const IDENTITY_HEADERS = [
  'x-remote-user',
  'x-remote-group',
  'x-remote-uid',
  'x-remote-extra-scopes',
  'x-remote-extra-authentication.kubernetes.io%2fcredential-id',
  'x_remote_user',
  'x-forwarded-client-cert',
];
const CREDENTIAL_ID = 'x-remote-extra-authentication.kubernetes.io%2fcredential-id';

function credentialId(cert: TestCert): string {
  return `X509SHA256=${createHash('sha256').update(new X509Certificate(cert.certPem).raw).digest('hex')}`;
}

describe('identity and merged documents through a real Envoy', () => {
  test('a client certificate arrives as X-Remote-User, one X-Remote-Group per O and the credential-id extra over a front-proxy connection; forged identity headers are gone', async () => {
    const echo = echoed(await send('/api/v1/namespaces/default/pods', { cert: alice, headers: FORGED }));
    assert.equal(echo.frontProxy, true);
    assert.deepEqual(echo.headers['x-remote-user'], ['alice']);
    assert.deepEqual(echo.headers['x-remote-group'], ['system:masters', 'team, a+b']);
    assert.equal(echo.headers['x-remote-uid'], undefined, 'alice has no UID attribute');
    assert.deepEqual(echo.headers[CREDENTIAL_ID], [credentialId(alice)]);
    for (const name of ['x-remote-extra-scopes', 'x_remote_user', 'x-forwarded-client-cert']) assert.equal(echo.headers[name], undefined, name);
    // Audit logs see the client (Envoy writes its own address for a loopback client).
    assert.equal(echo.headers['x-forwarded-for']?.length, 1);
  });

  for (const identityCase of IDENTITY_CASES) {
    test(`identity table: ${identityCase.name}`, async () => {
      const leaf = await testLeaf(certs.clientCa, { usages: ['client'], ...identityCase.leaf });
      if (identityCase.refusedAtHandshake) {
        await assert.rejects(send('/api/v1/pods', { cert: leaf }));
        return;
      }
      const reply = await send('/api/v1/pods', { cert: leaf, headers: FORGED });
      let outcome: IdentityOutcome;
      if (reply.status === 401) {
        const status = JSON.parse(reply.body.toString('utf8')) as { kind: string; code: number; reason: string };
        assert.deepEqual([status.kind, status.code, status.reason], ['Status', 401, 'Unauthorized']);
        outcome = { kind: 'rejected' };
      } else {
        const echo = echoed(reply);
        assert.equal(echo.frontProxy, true, 'a certificate request travels on a front-proxy connection');
        for (const name of ['x-remote-extra-scopes', 'x_remote_user', 'x-forwarded-client-cert']) assert.equal(echo.headers[name], undefined, name);
        // Node reads header bytes as Latin-1; the apiserver (Go) reads them as the UTF-8 they are.
        const utf8 = (values: string[] | undefined): string[] | undefined => values?.map((v) => Buffer.from(v, 'latin1').toString('utf8'));
        const user = utf8(echo.headers['x-remote-user']);
        const uid = utf8(echo.headers['x-remote-uid']);
        if (user === undefined) {
          assert.equal(echo.headers['x-remote-group'], undefined);
          assert.equal(echo.headers[CREDENTIAL_ID], undefined);
          outcome = { kind: 'none' };
        } else {
          assert.deepEqual(echo.headers[CREDENTIAL_ID], [credentialId(leaf)]);
          outcome = { kind: 'identity', user: user.join(','), groups: utf8(echo.headers['x-remote-group']) ?? [], ...(uid ? { uid: uid.join(',') } : {}) };
        }
      }
      assert.deepEqual(outcome, identityCase.expected);
    });
  }

  test('a certificate from another CA never completes the handshake', async () => {
    const otherCa = await testCa('another CA');
    const stranger = await testLeaf(otherCa, { name: [{ CN: ['alice'] }], usages: ['client'] });
    await assert.rejects(send('/api/v1/pods', { cert: stranger }));
  });

  test('a client without certificate arrives without identity headers, over a connection without the front-proxy certificate, and never calls ext_proc', async () => {
    const calls = await extProcCalls();
    for (const path of ['/api/v1/namespaces/default/pods', '/api/v1/namespaces/default/pods?watch=1']) {
      const echo = echoed(await send(path, { headers: { ...FORGED, Authorization: 'Bearer token' } }));
      assert.equal(echo.frontProxy, false, path);
      for (const name of IDENTITY_HEADERS) assert.equal(echo.headers[name], undefined, `${path}: ${name}`);
      assert.deepEqual(echo.headers['authorization'], ['Bearer token'], path);
    }
    assert.equal(await extProcCalls(), calls);
  });

  test('a resumed TLS session keeps its certificate identity', async () => {
    // Node's https.Agent caches TLS sessions: a new connection resumes the last one.
    const agent = new HttpsAgent({ keepAlive: false, maxCachedSessions: 10 });
    try {
      const replies = [];
      for (let i = 0; i < 4; i++) replies.push(await send('/api/v1/pods', { cert: alice, agent }));
      assert.ok(
        replies.slice(1).some((r) => r.resumed),
        'at least one connection resumed its session',
      );
      for (const reply of replies) {
        const echo = echoed(reply);
        assert.deepEqual([echo.frontProxy, echo.headers['x-remote-user']], [true, ['alice']], `resumed: ${reply.resumed}`);
      }
    } finally {
      agent.destroy();
    }
  });

  test('a certificate that expires while its connection stays open stops authenticating on that connection', async () => {
    const brief = await testLeaf(certs.clientCa, {
      name: [{ CN: ['brief'] }],
      usages: ['client'],
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 2_500),
    });
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
    try {
      assert.deepEqual(echoed(await send('/api/v1/pods', { cert: brief, agent })).headers['x-remote-user'], ['brief']);
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      const later = await send('/api/v1/pods', { cert: brief, agent });
      assert.equal(later.status, 401);
    } finally {
      agent.destroy();
    }
  });

  test('a certificate watch opens no ext_proc stream', async () => {
    // Every open stream would hold a request on the control-plane cluster.
    const active = async (): Promise<number> => {
      const text = (await sidecar.envoy.admin('/stats?filter=^cluster\\.mvproxy_xds\\.upstream_rq_active$')).body;
      return Number(/upstream_rq_active: (\d+)/.exec(text)?.[1] ?? NaN);
    };
    const idle = await active(); // the ADS stream (and the access log's, once it has logged)
    const watch = new Promise<number>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port: listenerPort,
          path: '/api/v1/pods?watch=hang',
          ca: servingCa.certPem,
          servername: 'localhost',
          cert: alice.certPem,
          key: alice.keyPem,
          agent: false,
        },
        (res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(await watch, 200);
    assert.equal(await active(), idle);
    for (const end of hanging.splice(0)) end();
  });

  test('two thousand quick certificate requests on keep-alive connections all get their identity', async () => {
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 8 });
    let next = 0;
    const failures: string[] = [];
    const worker = async (): Promise<void> => {
      while (next < 2000) {
        next++;
        const reply = await send('/api/v1/namespaces/default/pods', { cert: alice, agent });
        if (reply.status !== 200) failures.push(`${reply.status} ${reply.body.toString('utf8').slice(0, 120)}`);
        else if (echoed(reply).headers['x-remote-user']?.[0] !== 'alice') failures.push('no identity');
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker)).finally(() => agent.destroy());
    assert.deepEqual(failures, []);
  });
});
