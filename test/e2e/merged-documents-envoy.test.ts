// Merged documents through a real Envoy sidecar (test/support/echoSidecar.ts):
// the documents the control plane pushed over ECDS (the document filters)
// answer aggregated discovery only after the local apiserver authorized the
// client, with ETags, 304s and the gzip variant, without any call out of
// Envoy; peer-only group documents answered by the peer; profile=nopeer; the
// last pushed documents while the control plane is gone; a document over the
// push budget answered over ext_proc. Certificate identity through the same
// sidecar: identity-envoy.test.ts.
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { describe, test } from 'node:test';

import { shutdownGrpcServer } from '../../src/servers/grpcListen.js';
import { eventually } from '../support/envoy.js';
import {
  AGGREGATED,
  AGGREGATED_PROTOBUF,
  DISCOVERY_BODY,
  EXT_PROC_OPENAPI_BODY,
  KNOWN_TOKEN,
  LOCAL_DOCUMENT,
  LOCAL_ETAG,
  MERGED_CORE_ETAG,
  MERGED_CORE_JSON,
  MERGED_ETAG,
  MERGED_GROUPS_JSON,
  NODE,
  PEER_GROUP,
  alice,
  discoveryCalls,
  echoed,
  envoyStat,
  extProcCalls,
  lastDiscoveryHeaders,
  mergedDocuments,
  send,
  sidecar,
  useEchoSidecar,
  type Echo,
} from '../support/echoSidecar.js';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_NOPEER_JSON, AGGREGATED_DISCOVERY_PROTOBUF } from '../../src/model/discovery.js';

useEchoSidecar();

/** ECDS configuration updates Envoy applied to the `/apis` document filter. */
const groupsReloads = (): Promise<number> => envoyStat('extension_config_discovery.http_filter.mvproxy.discovery.groups.config_reload');

/** Runs `body` and asserts that no ext_proc stream was opened meanwhile. */
async function withoutExtProc<T>(body: () => Promise<T>): Promise<T> {
  const calls = await extProcCalls();
  discoveryCalls.length = 0;
  const result = await body();
  assert.equal(await extProcCalls(), calls, 'no ext_proc stream');
  assert.deepEqual(discoveryCalls, []);
  return result;
}

describe('identity and merged documents through a real Envoy', () => {
  test('the control-plane cluster that ext_proc streams share has its circuit breakers raised', async () => {
    const clusters = (await sidecar.envoy.admin('/clusters')).body;
    for (const limit of ['max_connections', 'max_pending_requests', 'max_requests', 'max_retries']) {
      assert.match(clusters, new RegExp(`^mvproxy_xds::default_priority::${limit}::1000000$`, 'm'), limit);
    }
  });

  test('the pushed documents are in place: each document filter got its configuration over ECDS', async () => {
    for (const filter of ['groups', 'core']) {
      assert.ok((await envoyStat(`extension_config_discovery.http_filter.mvproxy.discovery.${filter}.config_reload`)) >= 1, filter);
    }
    assert.equal(await envoyStat('extension_config_discovery.http_filter.mvproxy.discovery.groups.config_fail'), 0);
  });

  test("a made-up bearer token on aggregated discovery gets the apiserver's own 401, never the merged document", async () => {
    await withoutExtProc(async () => {
      const reply = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: 'Bearer made-up' } });
      assert.equal(reply.status, 401);
      const status = JSON.parse(reply.body.toString('utf8')) as { kind: string; code: number };
      assert.deepEqual([status.kind, status.code], ['Status', 401]);
      assert.equal(reply.headers['etag'], undefined);
    });
  });

  test("aggregated discovery without credentials gets the apiserver's own 401", async () => {
    await withoutExtProc(async () => {
      const reply = await send('/api', { headers: { Accept: AGGREGATED } });
      assert.equal(reply.status, 401);
      assert.equal(reply.headers['etag'], undefined);
    });
  });

  test('an authenticated client gets the merged document with its ETag and Vary: Accept; the apiserver never sees If-None-Match', async () => {
    await withoutExtProc(async () => {
      const reply = await send('/apis?timeout=32s', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN, 'If-None-Match': LOCAL_ETAG } });
      assert.equal(reply.status, 200);
      assert.equal(reply.body.toString('utf8'), MERGED_GROUPS_JSON);
      assert.equal(reply.headers['content-type'], AGGREGATED_DISCOVERY_JSON);
      assert.equal(reply.headers['etag'], MERGED_ETAG);
      assert.equal(reply.headers['vary'], 'Accept');
      // The apiserver answered in full: it never saw the client's If-None-Match.
      assert.equal(lastDiscoveryHeaders?.['if-none-match'], undefined);
      assert.equal(lastDiscoveryHeaders?.['authorization'], KNOWN_TOKEN);
    });
  });

  test('the protobuf variant, in the format the apiserver negotiated, reaches the client with its bytes intact', async () => {
    await withoutExtProc(async () => {
      const reply = await send('/apis', { headers: { Accept: AGGREGATED_PROTOBUF, Authorization: KNOWN_TOKEN } });
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body, DISCOVERY_BODY);
      assert.equal(reply.headers['content-type'], AGGREGATED_DISCOVERY_PROTOBUF);
      assert.equal(reply.headers['etag'], MERGED_ETAG);
    });
  });

  test('If-None-Match with the merged ETag gets a 304 once the apiserver has authorized the client', async () => {
    await withoutExtProc(async () => {
      const reply = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN, 'If-None-Match': MERGED_ETAG } });
      assert.equal(reply.status, 304);
      assert.equal(reply.headers['etag'], MERGED_ETAG);
      assert.equal(reply.body.length, 0);
      const refused = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: 'Bearer made-up', 'If-None-Match': MERGED_ETAG } });
      assert.equal(refused.status, 401);
      assert.equal(refused.headers['etag'], undefined);
    });
  });

  test('a client that accepts gzip gets the gzip variant of a document over 128 KiB; the apiserver never sees Accept-Encoding', async () => {
    await withoutExtProc(async () => {
      assert.ok(MERGED_CORE_JSON.length > 128 * 1024);
      const reply = await send('/api', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN, 'Accept-Encoding': 'deflate, gzip' } });
      assert.equal(reply.status, 200);
      assert.equal(reply.headers['content-encoding'], 'gzip');
      assert.equal(reply.headers['etag'], MERGED_CORE_ETAG);
      assert.match(String(reply.headers['vary']), /Accept-Encoding/i);
      assert.equal(gunzipSync(reply.body).toString('utf8'), MERGED_CORE_JSON);
      assert.equal(lastDiscoveryHeaders?.['accept-encoding'], undefined);
      assert.equal(lastDiscoveryHeaders?.['if-none-match'], undefined);
      // Not accepted: the identity variant; a small document has no gzip variant.
      const plain = await send('/api', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN } });
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.equal(plain.body.toString('utf8'), MERGED_CORE_JSON);
      const small = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN, 'Accept-Encoding': 'gzip' } });
      assert.equal(small.headers['content-encoding'], undefined);
      assert.equal(small.body.toString('utf8'), MERGED_GROUPS_JSON);
      assert.equal(lastDiscoveryHeaders?.['accept-encoding'], undefined);
      const cached = await send('/api', {
        headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN, 'Accept-Encoding': 'gzip', 'If-None-Match': MERGED_CORE_ETAG },
      });
      assert.equal(cached.status, 304);
      assert.equal(cached.body.length, 0);
    });
  });

  test('a certificate client gets the merged document; the apiserver authenticated it by its asserted identity', async () => {
    await withoutExtProc(async () => {
      const reply = await send('/api', { cert: alice, headers: { Accept: AGGREGATED_PROTOBUF } });
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body, DISCOVERY_BODY);
      assert.equal(reply.headers['etag'], MERGED_CORE_ETAG);
      assert.equal(lastDiscoveryHeaders?.['x-remote-user'], 'alice');
    });
  });

  test('the group-version document of a peer-only group-version is answered by the peer, which sees the caller', async () => {
    await withoutExtProc(async () => {
      for (const path of [`/apis/${PEER_GROUP}/v1`, `/apis/${PEER_GROUP}`, `/apis/${PEER_GROUP}/v1/?timeout=32s`]) {
        const reply = await send(path, { headers: { Authorization: 'Bearer made-up' } });
        const echo = JSON.parse(reply.body.toString('utf8')) as Echo & { server?: string };
        assert.equal(echo.server, 'peer', path);
        assert.equal(echo.path, path);
        assert.deepEqual(echo.headers['authorization'], ['Bearer made-up']);
        assert.deepEqual(echo.headers['x-kubernetes-peer-proxied'], ['true']);
        assert.equal(echo.frontProxy, false, path);
      }
      const withCert = JSON.parse((await send(`/apis/${PEER_GROUP}/v1`, { cert: alice })).body.toString('utf8')) as Echo & { server?: string };
      assert.equal(withCert.server, 'peer');
      assert.equal(withCert.frontProxy, true);
      assert.deepEqual(withCert.headers['x-remote-user'], ['alice']);
    });
  });

  test("discovery with profile=nopeer is the local apiserver's own answer, If-None-Match and certificate identity included", async () => {
    await withoutExtProc(async () => {
      const nopeer = AGGREGATED_DISCOVERY_NOPEER_JSON;
      const reply = await send('/apis', { cert: alice, headers: { Accept: nopeer } });
      assert.equal(reply.status, 200);
      assert.equal(reply.body.toString('utf8'), LOCAL_DOCUMENT);
      assert.equal(reply.headers['etag'], LOCAL_ETAG);
      assert.equal(lastDiscoveryHeaders?.['x-remote-user'], 'alice');
      const cached = await send('/apis', { headers: { Accept: nopeer, Authorization: KNOWN_TOKEN, 'If-None-Match': LOCAL_ETAG } });
      assert.equal(cached.status, 304);
      assert.equal(lastDiscoveryHeaders?.['if-none-match'], LOCAL_ETAG);
    });
  });

  test('a document over the push budget is answered over ext_proc, after the apiserver authorized the client', async () => {
    const calls = await extProcCalls();
    discoveryCalls.length = 0;
    const refused = await send('/openapi/v3', { headers: { Authorization: 'Bearer made-up' } });
    assert.equal(refused.status, 200, 'the fake apiserver lets anyone read the index');
    assert.equal(refused.body.toString('utf8'), EXT_PROC_OPENAPI_BODY);
    assert.equal(refused.headers['etag'], '"extproc"');
    assert.deepEqual(
      discoveryCalls.map((c) => [c.node, c.request.document]),
      [[NODE, 'openapi-index']],
    );
    assert.ok((await extProcCalls()) > calls);
  });

  test('with the control plane gone, the last documents pushed are still served, certificate identity and token requests work', async () => {
    // A second push: a new `/apis` document, which Envoy takes over ECDS.
    const reloads = await groupsReloads();
    const latest = { etag: '"merged-2"', json: MERGED_GROUPS_JSON.replace('"items":[', '"items":[{"metadata":{"name":"second.example.com"}},') };
    sidecar.push(mergedDocuments(latest));
    await eventually('Envoy takes the second push', 10_000, async () => ((await groupsReloads()) > reloads ? true : undefined));
    await shutdownGrpcServer(sidecar.grpcServer, 100);

    await withoutExtProc(async () => {
      const withCert = echoed(await send('/api/v1/namespaces/default/pods', { cert: alice }));
      assert.deepEqual([withCert.frontProxy, withCert.headers['x-remote-user']], [true, ['alice']]);

      const discovery = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN } });
      assert.equal(discovery.status, 200);
      assert.equal(discovery.body.toString('utf8'), latest.json);
      assert.equal(discovery.headers['etag'], latest.etag);
      const cached = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: KNOWN_TOKEN, 'If-None-Match': latest.etag } });
      assert.equal(cached.status, 304);
      const discoveryWithCert = await send('/api', { cert: alice, headers: { Accept: AGGREGATED } });
      assert.equal(discoveryWithCert.status, 200);
      assert.equal(discoveryWithCert.body.toString('utf8'), MERGED_CORE_JSON);
      const refused = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: 'Bearer made-up' } });
      assert.equal(refused.status, 401);

      const echo = echoed(await send('/api/v1/namespaces/default/pods', { headers: { Authorization: 'Bearer token' } }));
      assert.equal(echo.headers['x-remote-user'], undefined);
      assert.equal(echo.frontProxy, false);
    });
  });
});
