// Merged documents through a real Envoy sidecar (test/support/echoSidecar.ts):
// the document filters (the document module, its own VM) merge the peer part
// the control plane pushed over ECDS into the local apiserver's document at
// every request, only after the apiserver authorized the client, without any
// call out of Envoy: the local document's changes at once, ETags, 304s, the
// apiserver's headers, bodies over 1 MiB, gzip, and no new upstream connection per
// request; legacy /apis (APIGroupList) in JSON and protobuf; peer-only group documents answered by the peer; profile=nopeer; a
// document filter that traps; the last pushed parts while the control plane
// is gone; a document over the push budget answered over ext_proc.
// Certificate identity through the same sidecar: identity-envoy.test.ts.
import assert from 'node:assert/strict';
import { Agent as HttpsAgent } from 'node:https';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';

import { shutdownGrpcServer } from '../../src/servers/grpcListen.js';
import { decodeAggregatedProtobuf } from '../../src/discovery/protobufDecode.js';
import { eventually } from '../support/envoy.js';
import { APPS, BATCH, CRD_GROUP, list } from '../support/discoveryFixtures.js';
import { expectedEtag, localBodies, mergedByRule, mergedIndexByRule, setNodes } from '../support/documentFilterHarness.js';
import { LEGACY_JSON, LEGACY_PROTOBUF, groupListByRule, readGroupList } from '../support/legacyBodies.js';
import type { APIGroupList } from '../../src/model/legacyDiscovery.js';
import {
  AGGREGATED,
  AGGREGATED_PROTOBUF,
  APISERVER_HEADERS,
  CORE_PART,
  EXT_PROC_OPENAPI_BODY,
  GROUPS_PART,
  INDEX_PART,
  KNOWN_TOKEN,
  legacyGroupsOf,
  LOCAL_CORE,
  LOCAL_GROUPS,
  LOCAL_INDEX,
  NODE,
  PEER_GROUP,
  alice,
  discoveryCalls,
  echoed,
  envoyStat,
  extProcCalls,
  lastDiscoveryHeaders,
  localEtag,
  peerPartDocuments,
  send,
  setLocalGroups,
  sidecar,
  useEchoSidecar,
  type Echo,
} from '../support/echoSidecar.js';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_NOPEER_JSON, AGGREGATED_DISCOVERY_PROTOBUF } from '../../src/model/discovery.js';

useEchoSidecar();

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

const TOKEN = { Authorization: KNOWN_TOKEN };
const json = (body: Buffer): unknown => JSON.parse(body.toString('utf8'));

/** Connections Envoy opened to the local apiserver so far (every flavour of its cluster). */
async function localConnections(): Promise<number> {
  const body = (await sidecar.envoy.admin('/stats?filter=^cluster\\.local[^.]*\\.upstream_cx_total$')).body;
  return [...body.matchAll(/: (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe('merged documents through a real Envoy', () => {
  test('each document filter got its peer part over ECDS, in the document VM', async () => {
    for (const filter of ['groups', 'core', 'openapi']) {
      assert.ok((await envoyStat(`extension_config_discovery.http_filter.mvproxy.discovery.${filter}.config_reload`)) >= 1, filter);
      assert.equal(await envoyStat(`extension_config_discovery.http_filter.mvproxy.discovery.${filter}.config_fail`), 0, filter);
    }
  });

  test("a made-up bearer token gets the apiserver's own 401, never a merged document", async () => {
    await withoutExtProc(async () => {
      const reply = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: 'Bearer made-up' } });
      assert.equal(reply.status, 401);
      assert.equal(reply.headers['etag'], undefined);
    });
  });

  test('an authenticated client gets the local document with the peer part spliced in, the merged ETag and the apiserver’s headers', async () => {
    await withoutExtProc(async () => {
      const reply = await send('/apis?timeout=32s', { headers: { Accept: AGGREGATED, ...TOKEN, 'If-None-Match': '"stale"' } });
      assert.equal(reply.status, 200);
      assert.deepEqual(json(reply.body), json(localBodies(mergedByRule(LOCAL_GROUPS, GROUPS_PART)).json));
      assert.equal(reply.headers['content-type'], AGGREGATED_DISCOVERY_JSON);
      assert.equal(reply.headers['content-length'], String(reply.body.length));
      assert.equal(reply.headers['etag'], expectedEtag(localEtag('groups'), GROUPS_PART));
      assert.equal(reply.headers['vary'], 'Accept');
      assert.equal(reply.headers['audit-id'], APISERVER_HEADERS['audit-id']);
      assert.equal(reply.headers['x-kubernetes-pf-flowschema-uid'], APISERVER_HEADERS['x-kubernetes-pf-flowschema-uid']);
      assert.equal(reply.headers['x-kubernetes-pf-prioritylevel-uid'], APISERVER_HEADERS['x-kubernetes-pf-prioritylevel-uid']);
      assert.equal(reply.headers['warning'], APISERVER_HEADERS.warning.join(', '));
      assert.notEqual(lastDiscoveryHeaders?.['if-none-match'], '"stale"', "the client's If-None-Match never reaches the apiserver");
    });
  });

  test('legacy /apis (APIGroupList) merged in JSON and protobuf by the same rule: no ETag, the apiserver’s headers', async () => {
    await withoutExtProc(async () => {
      const expected = groupListByRule(legacyGroupsOf(LOCAL_GROUPS), setNodes(GROUPS_PART));
      const reply = await send('/apis', { headers: { Accept: LEGACY_JSON, ...TOKEN } });
      assert.equal(reply.status, 200);
      assert.deepEqual(json(reply.body), expected);
      assert.deepEqual(
        (json(reply.body) as APIGroupList).groups.map((g) => [g.name, g.versions.map((v) => v.version)]),
        [
          ['apps', ['v1', 'v1beta9']],
          ['batch', ['v1']],
          ['storagemigration.k8s.io', ['v1']],
        ],
      );
      assert.equal(reply.headers['content-length'], String(reply.body.length));
      assert.equal(reply.headers['etag'], undefined);
      assert.equal(reply.headers['audit-id'], APISERVER_HEADERS['audit-id']);
      const protobuf = await send('/apis', { headers: { Accept: LEGACY_PROTOBUF, ...TOKEN } });
      assert.equal(protobuf.status, 200);
      assert.equal(protobuf.headers['content-type'], LEGACY_PROTOBUF);
      assert.deepEqual(readGroupList(protobuf.body), expected.groups);
    });
  });

  test('the next request revalidates with the local ETag; the apiserver’s 304 gets the cached merged document with its headers', async () => {
    await withoutExtProc(async () => {
      // One connection, so one Envoy worker: each worker's VM has its own cache.
      const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
      const first = await send('/apis', { headers: { Accept: AGGREGATED, ...TOKEN }, agent });
      const again = await send('/apis', { headers: { Accept: AGGREGATED, ...TOKEN }, agent });
      agent.destroy();
      assert.equal(lastDiscoveryHeaders?.['if-none-match'], localEtag('groups'));
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, first.body);
      assert.equal(again.headers['etag'], first.headers['etag']);
      assert.equal(again.headers['audit-id'], APISERVER_HEADERS['audit-id']);
      assert.equal(again.headers['warning'], APISERVER_HEADERS.warning.join(', '));
    });
  });

  test('protobuf: the answer decodes to the structure the merge rule gives, with the same ETag as JSON', async () => {
    await withoutExtProc(async () => {
      const reply = await send('/apis', { headers: { Accept: AGGREGATED_PROTOBUF, ...TOKEN } });
      assert.equal(reply.status, 200);
      assert.equal(reply.headers['content-type'], AGGREGATED_DISCOVERY_PROTOBUF);
      assert.deepEqual(decodeAggregatedProtobuf(reply.body), decodeAggregatedProtobuf(localBodies(mergedByRule(LOCAL_GROUPS, GROUPS_PART)).protobuf));
      assert.equal(reply.headers['etag'], expectedEtag(localEtag('groups'), GROUPS_PART));
    });
  });

  test('If-None-Match with the merged ETag gets a 304 once the apiserver has authorized the client', async () => {
    await withoutExtProc(async () => {
      const merged = expectedEtag(localEtag('groups'), GROUPS_PART);
      const reply = await send('/apis', { headers: { Accept: AGGREGATED, ...TOKEN, 'If-None-Match': merged } });
      assert.equal(reply.status, 304);
      assert.equal(reply.headers['etag'], merged);
      assert.equal(reply.body.length, 0);
      // A doubtful Accept (no revalidation): the 304 is made in place from the apiserver's 200.
      const inPlace = await send('/apis', { headers: { Accept: `${AGGREGATED_DISCOVERY_JSON};q=0.9,application/json`, ...TOKEN, 'If-None-Match': merged } });
      assert.equal(inPlace.status, 304);
      assert.equal(inPlace.body.length, 0);
      const refused = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: 'Bearer made-up', 'If-None-Match': merged } });
      assert.equal(refused.status, 401);
    });
  });

  test('a CRD created on the local apiserver is listed through the sidecar at the next request, with a new ETag', async () => {
    await withoutExtProc(async () => {
      const before = await send('/apis', { headers: { Accept: AGGREGATED, ...TOKEN } });
      const withCrd = list([APPS, BATCH, CRD_GROUP]);
      const etag = setLocalGroups(withCrd);
      try {
        const after = await send('/apis', { headers: { Accept: AGGREGATED, ...TOKEN } });
        assert.deepEqual(json(after.body), json(localBodies(mergedByRule(withCrd, GROUPS_PART)).json));
        assert.equal(after.headers['etag'], expectedEtag(etag, GROUPS_PART));
        assert.notEqual(after.headers['etag'], before.headers['etag']);
      } finally {
        setLocalGroups(LOCAL_GROUPS);
      }
    });
  });

  test('a local document over 1 MiB is merged (Envoy buffers nothing: no 500), spliced then cached', async () => {
    await withoutExtProc(async () => {
      const expected = localBodies(mergedByRule(LOCAL_CORE, CORE_PART)).json;
      assert.ok(localBodies(LOCAL_CORE).json.length > 1024 * 1024);
      for (const accept of [`${AGGREGATED_DISCOVERY_JSON};q=0.9,application/json`, AGGREGATED, AGGREGATED]) {
        const reply = await send('/api', { cert: alice, headers: { Accept: accept } });
        assert.equal(reply.status, 200, accept);
        assert.deepEqual(json(reply.body), json(expected));
        assert.equal(reply.headers['etag'], expectedEtag(localEtag('core'), CORE_PART));
      }
      assert.equal(lastDiscoveryHeaders?.['x-remote-user'], 'alice');
    });
  });

  test('a client with Accept-Encoding: gzip gets the merged document over 128 KiB gzipped, which gunzips to the identity answer', async () => {
    await withoutExtProc(async () => {
      const identity = await send('/api', { cert: alice, headers: { Accept: AGGREGATED } });
      assert.ok(identity.body.length > 128 * 1024);
      // One connection (one Envoy worker, one cache): spliced, then the revalidation's local reply, then a doubtful Accept (in place, cached).
      const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
      try {
        for (const accept of [AGGREGATED, AGGREGATED, `${AGGREGATED_DISCOVERY_JSON};q=0.9,application/json`]) {
          const reply = await send('/api', { cert: alice, headers: { Accept: accept, 'Accept-Encoding': 'gzip' }, agent });
          assert.equal(reply.status, 200, accept);
          assert.equal(reply.headers['content-encoding'], 'gzip', accept);
          // Envoy may join the two Vary headers into one list: the same to HTTP.
          assert.deepEqual(
            reply.headers['vary']?.split(',').map((v) => v.trim()),
            ['Accept', 'Accept-Encoding'],
            accept,
          );
          assert.equal(reply.headers['etag'], identity.headers['etag'], accept);
          assert.ok(reply.body.length < identity.body.length / 4, `${reply.body.length} bytes`);
          assert.deepEqual(gunzipSync(reply.body), identity.body, accept);
        }
      } finally {
        agent.destroy();
      }
    });
  });

  test('the OpenAPI v3 index: local paths plus the peer paths it lacks', async () => {
    await withoutExtProc(async () => {
      const reply = await send('/openapi/v3', { headers: TOKEN });
      assert.equal(reply.status, 200);
      assert.deepEqual(json(reply.body), mergedIndexByRule(LOCAL_INDEX, INDEX_PART));
      assert.equal(reply.headers['etag'], expectedEtag(localEtag('index'), INDEX_PART));
    });
  });

  test('1,000 requests on each path open no new upstream connection per request', async () => {
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
    const paths: Array<[string, string, Record<string, string>]> = [
      ['spliced (no local ETag: merged at every request)', '/apis?noetag=1', { Accept: AGGREGATED, ...TOKEN }],
      ['cached (revalidated: the apiserver answers 304)', '/apis', { Accept: AGGREGATED, ...TOKEN }],
      ['doubtful Accept (a full 200 whose body is dropped)', '/apis', { Accept: `${AGGREGATED_DISCOVERY_JSON};q=0.9,application/json`, ...TOKEN }],
      ['the OpenAPI index', '/openapi/v3', TOKEN],
    ];
    try {
      for (const [name, path, headers] of paths) {
        const before = await localConnections();
        for (let i = 0; i < 1000; i++) {
          const reply = await send(path, { headers, agent });
          assert.equal(reply.status, 200, name);
        }
        const opened = (await localConnections()) - before;
        assert.ok(opened <= 2, `${name}: ${opened} upstream connections for 1,000 requests`);
      }
    } finally {
      agent.destroy();
    }
  });

  test('the group-version document of a peer-only group-version is answered by the peer, which sees the caller', async () => {
    await withoutExtProc(async () => {
      for (const path of [`/apis/${PEER_GROUP}/v1`, `/apis/${PEER_GROUP}`]) {
        const reply = await send(path, { headers: { Authorization: 'Bearer made-up' } });
        const echo = JSON.parse(reply.body.toString('utf8')) as Echo & { server?: string };
        assert.equal(echo.server, 'peer', path);
        assert.deepEqual(echo.headers['x-kubernetes-peer-proxied'], ['true']);
      }
    });
  });

  test("discovery with profile=nopeer is the local apiserver's own answer, If-None-Match included", async () => {
    await withoutExtProc(async () => {
      const nopeer = AGGREGATED_DISCOVERY_NOPEER_JSON;
      const reply = await send('/apis', { cert: alice, headers: { Accept: nopeer } });
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body, localBodies(LOCAL_GROUPS).json);
      assert.equal(reply.headers['etag'], localEtag('groups'));
      const cached = await send('/apis', { headers: { Accept: nopeer, ...TOKEN, 'If-None-Match': localEtag('groups') } });
      assert.equal(cached.status, 304);
      assert.equal(lastDiscoveryHeaders?.['if-none-match'], localEtag('groups'));
    });
  });

  test('a document filter that traps lets the local answer through; certificate requests still get their identity', async () => {
    const reloads = await groupsReloads();
    sidecar.push(peerPartDocuments(), await trappingModule());
    await eventually('Envoy takes the trapping module', 10_000, async () => ((await groupsReloads()) > reloads ? true : undefined));
    try {
      await withoutExtProc(async () => {
        const reply = await send('/apis', { headers: { Accept: AGGREGATED, ...TOKEN } });
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.body, localBodies(LOCAL_GROUPS).json);
        assert.equal(reply.headers['etag'], localEtag('groups'));
        const withCert = echoed(await send('/api/v1/namespaces/default/pods', { cert: alice }));
        assert.deepEqual([withCert.frontProxy, withCert.headers['x-remote-user']], [true, ['alice']]);
      });
    } finally {
      const restored = await groupsReloads();
      sidecar.push(peerPartDocuments());
      await eventually('Envoy takes the document module again', 10_000, async () => ((await groupsReloads()) > restored ? true : undefined));
    }
  });

  test('a document over the push budget is answered over ext_proc, after the apiserver authorized the client', async () => {
    sidecar.push(peerPartDocuments('openapi-index'));
    await eventually('the index goes over ext_proc', 10_000, async () => {
      const reply = await send('/openapi/v3', { headers: TOKEN });
      return reply.body.toString('utf8') === EXT_PROC_OPENAPI_BODY ? true : undefined;
    });
    assert.deepEqual(discoveryCalls.map((c) => [c.node, c.request.document]).slice(-1), [[NODE, 'openapi-index']]);
    sidecar.push(peerPartDocuments());
  });

  test('with the control plane gone, the last peer parts pushed are still merged, certificate identity and token requests work', async () => {
    // The last push (the previous test's) is in Envoy before the control plane goes.
    await eventually('the index is merged in Envoy again', 10_000, async () => {
      const reply = await send('/openapi/v3', { headers: TOKEN });
      return reply.body.toString('utf8') !== EXT_PROC_OPENAPI_BODY ? true : undefined;
    });
    await shutdownGrpcServer(sidecar.grpcServer, 100);
    await withoutExtProc(async () => {
      const index = await send('/openapi/v3', { headers: TOKEN });
      assert.equal(index.status, 200);
      assert.deepEqual(json(index.body), mergedIndexByRule(LOCAL_INDEX, INDEX_PART));
      const withCert = echoed(await send('/api/v1/namespaces/default/pods', { cert: alice }));
      assert.deepEqual([withCert.frontProxy, withCert.headers['x-remote-user']], [true, ['alice']]);
      const discovery = await send('/apis', { headers: { Accept: AGGREGATED, ...TOKEN } });
      assert.equal(discovery.status, 200);
      assert.deepEqual(json(discovery.body), json(localBodies(mergedByRule(LOCAL_GROUPS, GROUPS_PART)).json));
      const refused = await send('/apis', { headers: { Accept: AGGREGATED, Authorization: 'Bearer made-up' } });
      assert.equal(refused.status, 401);
    });
  });
});

/** A document module whose request callback traps (compiled here from AssemblyScript: it never ships). */
async function trappingModule(): Promise<Uint8Array> {
  const asc = (await import('assemblyscript/asc')).default;
  const result = await asc.compileString(TRAP_SOURCE, { runtime: 'stub', exportStart: '_initialize', use: ['abort='], optimizeLevel: 1 });
  assert.equal(result.error, null, String(result.stderr));
  return result.binary as Uint8Array;
}

const TRAP_SOURCE = `
export function proxy_abi_version_0_2_1(): void {}
export function proxy_on_memory_allocate(size: usize): usize { return heap.alloc(size); }
export function proxy_on_vm_start(_r: u32, _s: usize): bool { return true; }
export function proxy_on_context_create(_c: u32, _p: u32): void {}
export function proxy_on_configure(_r: u32, _s: usize): bool { return true; }
export function proxy_on_request_headers(_c: u32, _n: u32, _e: bool): i32 { unreachable(); return 0; }
export function proxy_on_done(_c: u32): bool { return true; }
export function proxy_on_log(_c: u32): void {}
export function proxy_on_delete(_c: u32): void {}
`;
