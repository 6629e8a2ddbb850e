// Merged documents through a real Envoy sidecar (test/support/echoSidecar.ts):
// aggregated discovery only after the local apiserver authorized the client,
// ETags and 304s, peer-only group documents answered by the peer,
// profile=nopeer, and the local apiserver's own answers while the control
// plane is gone. Certificate identity through the same sidecar: identity-envoy.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { shutdownGrpcServer } from '../../src/servers/grpcListen.js';
import {
  AGGREGATED,
  DISCOVERY_BODY,
  KNOWN_TOKEN,
  LOCAL_DOCUMENT,
  LOCAL_ETAG,
  MERGED_ETAG,
  NODE,
  PEER_GROUP,
  alice,
  discoveryCalls,
  echoed,
  extProcCalls,
  lastDiscoveryHeaders,
  send,
  sidecar,
  useEchoSidecar,
  type Echo,
} from '../support/echoSidecar.js';
import { AGGREGATED_DISCOVERY_NOPEER_JSON } from '../../src/model/discovery.js';

useEchoSidecar();

describe('identity and merged documents through a real Envoy', () => {
  test('the control-plane cluster that ext_proc streams share has its circuit breakers raised', async () => {
    const clusters = (await sidecar.envoy.admin('/clusters')).body;
    for (const limit of ['max_connections', 'max_pending_requests', 'max_requests', 'max_retries']) {
      assert.match(clusters, new RegExp(`^mvproxy_xds::default_priority::${limit}::1000000$`, 'm'), limit);
    }
  });

  test("a made-up bearer token on aggregated discovery gets the apiserver's own 401, never the merged document", async () => {
    discoveryCalls.length = 0;
    const reply = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: 'Bearer made-up' } });
    assert.equal(reply.status, 401);
    const status = JSON.parse(reply.body.toString('utf8')) as { kind: string; code: number };
    assert.deepEqual([status.kind, status.code], ['Status', 401]);
    assert.equal(reply.headers['etag'], undefined);
    assert.deepEqual(discoveryCalls, []);
  });

  test("aggregated discovery without credentials gets the apiserver's own 401", async () => {
    discoveryCalls.length = 0;
    const reply = await send('/api', { headers: { Accept: AGGREGATED } });
    assert.equal(reply.status, 401);
    assert.deepEqual(discoveryCalls, []);
  });

  test('an authenticated client gets the merged document, body bytes intact, with its ETag and Vary: Accept', async () => {
    discoveryCalls.length = 0;
    const reply = await send('/apis?timeout=32s', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN, 'If-None-Match': LOCAL_ETAG } });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, DISCOVERY_BODY);
    assert.equal(reply.headers['content-type'], 'application/vnd.kubernetes.protobuf');
    assert.equal(reply.headers['etag'], MERGED_ETAG);
    assert.equal(reply.headers['vary'], 'Accept');
    assert.deepEqual(discoveryCalls, [{ node: NODE, request: { document: 'group-discovery', accept: AGGREGATED, ifNoneMatch: LOCAL_ETAG } }]);
    // The apiserver answered in full: it never saw the client's If-None-Match.
    assert.equal(lastDiscoveryHeaders?.['if-none-match'], undefined);
    assert.equal(lastDiscoveryHeaders?.['authorization'], KNOWN_TOKEN);
  });

  test('If-None-Match with the merged ETag gets a 304 once the apiserver has authorized the client', async () => {
    const reply = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN, 'If-None-Match': MERGED_ETAG } });
    assert.equal(reply.status, 304);
    assert.equal(reply.headers['etag'], MERGED_ETAG);
    assert.equal(reply.body.length, 0);
    const refused = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: 'Bearer made-up', 'If-None-Match': MERGED_ETAG } });
    assert.equal(refused.status, 401);
  });

  test('a certificate client gets the merged document; the apiserver authenticated it by its asserted identity', async () => {
    discoveryCalls.length = 0;
    const reply = await send('/api', { cert: alice, headers: { Accept: AGGREGATED } });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, DISCOVERY_BODY);
    assert.equal(lastDiscoveryHeaders?.['x-remote-user'], 'alice');
    assert.equal(discoveryCalls.length, 1);
  });

  test('the group-version document of a peer-only group-version is answered by the peer, which sees the caller', async () => {
    discoveryCalls.length = 0;
    const calls = await extProcCalls();
    for (const path of [`/apis/${PEER_GROUP}/v1`, `/apis/${PEER_GROUP}`, `/apis/${PEER_GROUP}/v1/?timeout=32s`]) {
      const reply = await send(path, { headers: { Authorization: 'Bearer made-up' } });
      const echo = JSON.parse(reply.body.toString('utf8')) as Echo & { server?: string };
      assert.equal(echo.server, 'peer', path);
      assert.equal(echo.path, path);
      assert.deepEqual(echo.headers['authorization'], ['Bearer made-up']);
      assert.deepEqual(echo.headers['x-kubernetes-peer-proxied'], ['true']);
      assert.equal(echo.frontProxy, false, path);
    }
    assert.equal(await extProcCalls(), calls, 'token requests to a peer need no ext_proc');
    const withCert = JSON.parse((await send(`/apis/${PEER_GROUP}/v1`, { cert: alice })).body.toString('utf8')) as Echo & { server?: string };
    assert.equal(withCert.server, 'peer');
    assert.equal(withCert.frontProxy, true);
    assert.deepEqual(withCert.headers['x-remote-user'], ['alice']);
    assert.deepEqual(discoveryCalls, []);
  });

  test("discovery with profile=nopeer is the local apiserver's own answer, If-None-Match and certificate identity included", async () => {
    discoveryCalls.length = 0;
    const nopeer = AGGREGATED_DISCOVERY_NOPEER_JSON;
    const reply = await send('/apis', { cert: alice, headers: { Accept: nopeer } });
    assert.equal(reply.status, 200);
    assert.equal(reply.body.toString('utf8'), LOCAL_DOCUMENT);
    assert.equal(reply.headers['etag'], LOCAL_ETAG);
    assert.equal(lastDiscoveryHeaders?.['x-remote-user'], 'alice');
    const cached = await send('/apis', { headers: { Accept: nopeer, Authorization: KNOWN_TOKEN, 'If-None-Match': LOCAL_ETAG } });
    assert.equal(cached.status, 304);
    assert.deepEqual(discoveryCalls, []);
  });

  test('with the control plane gone, certificate identity still works, merged documents fall back to the local ones, token requests work', async () => {
    await shutdownGrpcServer(sidecar.grpcServer, 100);
    const withCert = echoed(await send('/api/v1/namespaces/default/pods', { cert: alice }));
    assert.deepEqual([withCert.frontProxy, withCert.headers['x-remote-user']], [true, ['alice']]);

    const discovery = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN } });
    assert.equal(discovery.status, 200);
    assert.equal(discovery.body.toString('utf8'), LOCAL_DOCUMENT);
    assert.equal(discovery.headers['etag'], LOCAL_ETAG);
    const discoveryWithCert = await send('/api', { cert: alice, headers: { Accept: AGGREGATED } });
    assert.equal(discoveryWithCert.status, 200);
    assert.equal(discoveryWithCert.body.toString('utf8'), LOCAL_DOCUMENT);
    const fallbacks = (await sidecar.envoy.admin('/stats?filter=ext_proc\\.mvproxy\\.failure_mode_allowed$')).body;
    assert.ok(Number(/: (\d+)/.exec(fallbacks)?.[1] ?? 0) >= 2, `Envoy counts the fallbacks: ${fallbacks}`);

    const echo = echoed(await send('/api/v1/namespaces/default/pods', { headers: { Authorization: 'Bearer token' } }));
    assert.equal(echo.headers['x-remote-user'], undefined);
    assert.equal(echo.frontProxy, false);
  });
});
