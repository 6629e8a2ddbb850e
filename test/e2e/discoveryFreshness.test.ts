// Issue 28, "Discovery never staler than the apiserver behind the sidecar",
// on the sandbox (kube-apiserver v1.36.3 and v1.37.2 sharing etcd, one Envoy
// sidecar each, the control plane): what a sidecar lists is its own
// apiserver's document as served at the request plus the peer part the
// control plane last pushed (src/discovery/peerPart.ts), so
// - with the control plane up, paused (SIGSTOP), dead (SIGKILL) or
//   restarting, every sidecar lists at least what its apiserver lists at that
//   moment, and every resource it lists answers a LIST (200, or 503 with
//   Retry-After), never 404;
// - a CRD created or deleted on an apiserver directly while the control plane
//   is paused shows through its sidecar as soon as the apiserver itself
//   shows it (by the next poll);
// - an apiserver restarted at another version while the control plane is
//   paused: its sidecar answers that apiserver's new document plus the peers'
//   last-known part;
// - the merged ETag is the same on sidecars whose inputs are the same, the
//   same in JSON and protobuf, and changes when the answer does.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CRDS_PATH as CRDS, namespacedCrd } from '../../src/tools/bench/documentScale.js';
import type { SandboxApiserverState, SandboxState } from '../../src/tools/sandbox/state.js';
import { httpsRequest } from '../../src/util/https.js';
import { addedNames, type DiscoveryFormat, listPath, mergedNames, missingNames, readDiscovery } from '../support/discoveryNames.js';
import { controlPlaneInSync as inSync, eventually, startTestSandbox, type TestSandbox } from '../support/sandbox.js';

/** Between two polls of the apiservers' and the sidecars' documents. */
const POLL_MS = 100;
/** How long past its apiserver a sidecar may fail to show a change before the test gives up (the rule is one poll). */
const GIVE_UP_MS = 20_000;

let tb: TestSandbox;
let state: SandboxState;
let token: string;
let kasA: SandboxApiserverState;
let kasB: SandboxApiserverState;

before(async () => {
  tb = await startTestSandbox([
    { name: 'kas-a', version: 'v1.36.3' },
    { name: 'kas-b', version: 'v1.37.2' },
  ]);
  state = tb.state();
  token = tb.sandbox.adminBearerToken();
  [kasA, kasB] = state.apiservers as [SandboxApiserverState, SandboxApiserverState];
});
after(() => tb?.sandbox.down());

const sidecarOf = (a: SandboxApiserverState): string => a.sidecar ?? '';
const own = (a: SandboxApiserverState, path: string) => readDiscovery(state.ca, a.direct, token, path, 'nopeer');
const merged = (a: SandboxApiserverState, path: string, format: DiscoveryFormat = 'json', headers: Record<string, string> = {}) =>
  readDiscovery(state.ca, sidecarOf(a), token, path, format, headers);

function api(base: string, method: string, path: string, body?: unknown) {
  return httpsRequest(
    base + path,
    { ca: state.ca },
    {
      method,
      headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      timeoutMs: 15_000,
    },
  );
}

/** A namespaced CRD `widgets.<group>` served at v1. */
const crd = (group: string): unknown => namespacedCrd(group, 'widgets', 'Widget');

async function createCrd(on: SandboxApiserverState, group: string): Promise<void> {
  const res = await api(on.direct, 'POST', CRDS, crd(group));
  assert.equal(res.status, 201, res.body.slice(0, 300));
}

async function deleteCrd(on: SandboxApiserverState, group: string): Promise<void> {
  const res = await api(on.direct, 'DELETE', `${CRDS}/widgets.${group}`);
  assert.equal(res.status, 200, res.body.slice(0, 300));
}

/** Until both sidecars are connected with every type ACKed. */
const controlPlaneInSync = (): Promise<void> => inSync(tb, ['kas-a', 'kas-b']);

/**
 * One sidecar in one window: its merged /api and /apis, JSON and protobuf,
 * read between two reads of its apiserver's own documents, list everything
 * the apiserver listed in both; every resource they list with the list verb
 * answers a LIST through the sidecar with 200, or 503 and Retry-After.
 * Returns what went wrong, and how many LISTs were made.
 */
async function checkSidecar(window: string, a: SandboxApiserverState): Promise<{ failures: string[]; lists: number }> {
  const failures: string[] = [];
  let lists = 0;
  for (const path of ['/api', '/apis']) {
    const before = await own(a, path);
    const answers = await Promise.all((['json', 'protobuf'] as const).map((format) => merged(a, path, format)));
    const afterwards = await own(a, path);
    if (before.status !== 200 || afterwards.status !== 200) {
      failures.push(`${window}: ${a.name}'s own ${path} answered ${before.status} and ${afterwards.status}`);
      continue;
    }
    const listedBoth = before.names.filter((name) => afterwards.names.includes(name));
    for (const [i, answer] of answers.entries()) {
      const format = i === 0 ? 'json' : 'protobuf';
      if (answer.status !== 200) {
        failures.push(`${window}: ${path} (${format}) through ${a.name}'s sidecar answered ${answer.status}`);
        continue;
      }
      const missing = missingNames(answer.names, listedBoth);
      if (missing.length > 0) failures.push(`${window}: ${path} (${format}) through ${a.name}'s sidecar lacks what ${a.name} lists: ${missing.join(', ')}`);
    }
    for (const resource of answers[0]?.resources ?? []) {
      if (!resource.verbs.includes('list')) continue;
      lists++;
      const res = await api(sidecarOf(a), 'GET', listPath(resource.name));
      const retryable = res.status === 503 && res.headers['retry-after'] !== undefined;
      if (res.status !== 200 && !retryable)
        failures.push(`${window}: LIST ${resource.name} through ${a.name}'s sidecar: ${res.status} ${res.body.slice(0, 120)}`);
    }
  }
  return { failures, lists };
}

async function checkEverySidecar(window: string): Promise<{ failures: string[]; lists: number }> {
  const results = await Promise.all([kasA, kasB].map((a) => checkSidecar(window, a)));
  return { failures: results.flatMap((r) => r.failures), lists: results.reduce((n, r) => n + r.lists, 0) };
}

/**
 * Polls every apiserver's own /apis and every sidecar's merged /apis together,
 * every POLL_MS, until `shows` holds for all of them (or GIVE_UP_MS past the
 * last apiserver); returns the first poll at which each showed it (by name:
 * the apiserver's, and `sidecar of NAME`).
 */
async function firstPollShowing(shows: (names: string[]) => boolean): Promise<Map<string, number>> {
  const first = new Map<string, number>();
  const sources: Array<[string, () => Promise<{ names: string[]; status: number }>]> = [kasA, kasB].flatMap(
    (a): Array<[string, () => Promise<{ names: string[]; status: number }>]> => [
      [a.name, () => own(a, '/apis')],
      [`sidecar of ${a.name}`, () => merged(a, '/apis')],
    ],
  );
  let apiserversAt: number | undefined;
  for (let poll = 0; ; poll++) {
    const reads = await Promise.all(sources.map(([, read]) => read()));
    reads.forEach((read, i) => {
      const name = sources[i]?.[0] ?? '';
      if (!first.has(name) && read.status === 200 && shows(read.names)) first.set(name, poll);
    });
    if (first.size === sources.length) return first;
    if (apiserversAt === undefined && first.has(kasA.name) && first.has(kasB.name)) apiserversAt = Date.now();
    if (apiserversAt !== undefined && Date.now() - apiserversAt > GIVE_UP_MS) return first;
    await sleep(POLL_MS);
  }
}

/** Each sidecar showed it no later than the poll after its own apiserver did. */
function assertNoLaterThanItsApiserver(first: Map<string, number>, what: string): void {
  const described = [...first].map(([name, poll]) => `${name} at poll ${poll}`).join(', ');
  for (const a of [kasA, kasB]) {
    const apiserver = first.get(a.name);
    const sidecar = first.get(`sidecar of ${a.name}`);
    assert.ok(apiserver !== undefined, `${a.name} never showed ${what} (${described})`);
    assert.ok(sidecar !== undefined && sidecar <= apiserver + 1, `${a.name}'s sidecar showed ${what} later than the poll after ${a.name} did (${described})`);
  }
}

describe('discovery through a sidecar is never staler than the apiserver behind it', () => {
  test('control plane up, paused, killed and restarting: every sidecar lists at least what its apiserver lists, and every resource it lists answers a LIST with 200 or 503 and Retry-After, never 404', async (t) => {
    const failures: string[] = [];
    const counted: string[] = [];
    const check = async (window: string): Promise<void> => {
      const result = await checkEverySidecar(window);
      failures.push(...result.failures);
      counted.push(`${window}: ${result.lists} LISTs`);
    };
    await controlPlaneInSync();
    await check('control plane up');
    tb.sandbox.pauseControlPlane();
    try {
      await check('control plane paused');
    } finally {
      await tb.sandbox.killControlPlane();
    }
    await check('control plane dead');
    const restarting = tb.sandbox.restartControlPlane();
    await check('control plane restarting');
    await restarting;
    await controlPlaneInSync();
    await check('control plane restarted');
    t.diagnostic(counted.join('; '));
    assert.deepEqual(failures, []);
  });

  test('a CRD created on kas-a while the control plane is paused is listed through every sidecar no later than the poll after its apiserver lists it, and one deleted in the pause is gone as soon as its apiserver stops listing it', async (t) => {
    const gone = 'gone.freshness.mvproxy.example';
    const fresh = 'fresh.freshness.mvproxy.example';
    const lists = (group: string) => (names: string[]) => names.includes(`${group}/v1/widgets`);
    // The one to delete is in place, and pushed, before the pause.
    await createCrd(kasA, gone);
    await eventually(async () => {
      for (const a of [kasA, kasB]) assert.ok(lists(gone)((await merged(a, '/apis')).names), `${a.name}'s sidecar lists ${gone}`);
    });
    await controlPlaneInSync();
    tb.sandbox.pauseControlPlane();
    try {
      await createCrd(kasA, fresh);
      const created = await firstPollShowing(lists(fresh));
      t.diagnostic(`created: first poll listing it: ${[...created].map(([name, poll]) => `${name} ${poll}`).join(', ')}`);
      assertNoLaterThanItsApiserver(created, `${fresh}/v1/widgets`);
      await deleteCrd(kasA, gone);
      const deleted = await firstPollShowing((names) => !lists(gone)(names));
      t.diagnostic(`deleted: first poll not listing it: ${[...deleted].map(([name, poll]) => `${name} ${poll}`).join(', ')}`);
      assertNoLaterThanItsApiserver(deleted, `${gone}/v1/widgets gone`);
    } finally {
      tb.sandbox.resumeControlPlane();
    }
    await controlPlaneInSync();
  });

  test("kas-a restarted at v1.37.2 while the control plane is paused: its sidecar answers kas-a's own new document plus the peers' last-known part", async (t) => {
    await controlPlaneInSync();
    // The peers' part as kas-a's sidecar last had it pushed: what its merged answer adds to kas-a's own.
    const peerPart = await eventually(async () => {
      const [ownBefore, mergedBefore, ownAfter] = [await own(kasA, '/apis'), await merged(kasA, '/apis'), await own(kasA, '/apis')];
      assert.deepEqual(ownBefore.names, ownAfter.names, "kas-a's own /apis changed while it was read");
      const added = addedNames(mergedBefore.names, ownAfter.names);
      assert.ok(added.includes('storagemigration.k8s.io/v1/storageversionmigrations'), `the peer part before the restart: ${added.join(', ')}`);
      return added;
    });
    t.diagnostic(`the peers' part before the restart: ${peerPart.join(', ')}`);
    tb.sandbox.pauseControlPlane();
    try {
      await tb.sandbox.stopApiserver('kas-a');
      await tb.sandbox.startApiserver('kas-a', { version: 'v1.37.2' });
      // kas-a's own document settles (its CRDs and aggregated groups come in over a few seconds); compare once it reads the same around the merged one.
      await eventually(
        async () => {
          const ownBefore = await own(kasA, '/apis');
          const answer = await merged(kasA, '/apis');
          const ownAfter = await own(kasA, '/apis');
          assert.deepEqual(ownBefore.names, ownAfter.names, "kas-a's own /apis changed while it was read");
          assert.equal(answer.status, 200);
          assert.ok(ownAfter.names.includes('storagemigration.k8s.io/v1/storageversionmigrations'), 'kas-a at v1.37.2 serves storagemigration.k8s.io/v1');
          assert.deepEqual(answer.names, mergedNames(ownAfter.names, peerPart));
        },
        30_000,
        500,
      );
    } finally {
      tb.sandbox.resumeControlPlane();
    }
    await controlPlaneInSync();
  });

  test('the merged /apis ETag is the same on sidecars whose apiservers list the same, the same in JSON and protobuf, and changes when the answer changes', async () => {
    // Both apiservers now run v1.37.2 (the test before): the same documents, and no peer part on either sidecar.
    const etags = async (): Promise<{ own: Array<string | undefined>; json: Array<string | undefined>; protobuf: Array<string | undefined> }> => {
      const owns = await Promise.all([kasA, kasB].map((a) => own(a, '/apis')));
      const json = await Promise.all([kasA, kasB].map((a) => merged(a, '/apis', 'json')));
      const protobuf = await Promise.all([kasA, kasB].map((a) => merged(a, '/apis', 'protobuf')));
      for (const read of [...owns, ...json, ...protobuf]) assert.equal(read.status, 200);
      return { own: owns.map((r) => r.etag), json: json.map((r) => r.etag), protobuf: protobuf.map((r) => r.etag) };
    };
    const settled = () =>
      eventually(async () => {
        const e = await etags();
        assert.ok(e.own[0] !== undefined && e.own[0] === e.own[1], `the apiservers' own ETags: ${e.own.join(' and ')}`);
        assert.ok(e.json[0] !== undefined && e.json[0] === e.json[1], `the sidecars' merged JSON ETags: ${e.json.join(' and ')}`);
        assert.deepEqual(e.protobuf, e.json, 'the protobuf ETags are the JSON ones');
        return e.json[0] ?? '';
      }, 60_000);
    const before = await settled();
    assert.equal((await etags()).json[0], before, 'unchanged when nothing changed');
    const notModified = await merged(kasA, '/apis', 'json', { 'if-none-match': before });
    assert.equal(notModified.status, 304);

    await createCrd(kasA, 'etag.freshness.mvproxy.example');
    const afterwards = await eventually(async () => {
      const etag = await settled();
      assert.notEqual(etag, before, 'the ETag changed with the answer');
      return etag;
    }, 60_000);
    assert.equal((await merged(kasB, '/apis', 'json', { 'if-none-match': before })).status, 200, 'the old ETag no longer matches');
    assert.equal((await merged(kasB, '/apis', 'json', { 'if-none-match': afterwards })).status, 304);
  });
});
