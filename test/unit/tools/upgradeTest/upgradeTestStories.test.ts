// KEP-4020's stories in the upgrade test: the objects they create (a
// PodCertificateRequest kube-apiserver accepts from an administrator) and
// how what the real kube-controller-manager did is judged.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify } from 'node:crypto';
import { Ledger } from '../../../../src/tools/upgradeTest/ledger.js';
import { podCertificateRequest, STORY_SIGNER, storyPath, stubPkcs10Request } from '../../../../src/tools/upgradeTest/objects.js';
import { judgeMode, type ModeObservations } from '../../../../src/tools/upgradeTest/outcomes.js';
import { VERSION_PAIRS } from '../../../../src/tools/upgradeTest/pairs.js';
import {
  itemsIn,
  judgeStories,
  namespaceStateOf,
  NO_STORY_RESOURCE,
  presenceOf,
  unreadable,
  type DeletedNamespaceReading,
  type DependentReading,
  type StoriesRecord,
} from '../../../../src/tools/upgradeTest/storyJudgement.js';
import { INVARIANTS, MVPROXY_CLAIMS } from '../../../../src/tools/upgradeTest/summary.js';
import { emptyObservations, upgradeTimeline } from '../../../support/upgradeTimeline.js';

/** The elements of a DER constructed value (a SEQUENCE): each one's tag, whole encoding and content. */
function derChildren(buf: Buffer): Array<{ tag: number; whole: Buffer; content: Buffer }> {
  const header = (b: Buffer, i: number): { len: number; start: number } => {
    const first = b[i + 1] ?? 0;
    if (first < 0x80) return { len: first, start: i + 2 };
    const n = first & 0x7f;
    let len = 0;
    for (let k = 0; k < n; k++) len = len * 256 + (b[i + 2 + k] ?? 0);
    return { len, start: i + 2 + n };
  };
  const outer = header(buf, 0);
  const out: Array<{ tag: number; whole: Buffer; content: Buffer }> = [];
  for (let i = outer.start; i < outer.start + outer.len; ) {
    const { len, start } = header(buf, i);
    out.push({ tag: buf[i] ?? 0, whole: buf.subarray(i, start + len), content: buf.subarray(start, start + len) });
    i = start + len;
  }
  return out;
}

const namespace = (r: Partial<DeletedNamespaceReading>): DeletedNamespaceReading => ({
  story: 'sole server restarting',
  namespace: 'story-restart-1',
  delete_status: 200,
  state: 'gone',
  objects_left: 0,
  ...r,
});
const dependent = (r: Partial<DependentReading>): DependentReading => ({
  story: 'sole server restarting',
  namespace: 'story-gc-restart',
  owner: 'present',
  dependent: 'present',
  ...r,
});

describe('upgrade test stories: the PodCertificateRequest they create', () => {
  it('carries a stub PKCS#10 request signed by the Ed25519 key it holds', () => {
    const [info, algorithm, signature] = derChildren(stubPkcs10Request());
    assert.ok(info && algorithm && signature);
    assert.deepEqual([...algorithm.content], [0x06, 0x03, 0x2b, 0x65, 0x70], 'signed with id-Ed25519');
    const spki = derChildren(info.whole)[2];
    assert.ok(spki);
    const key = createPublicKey({ key: spki.whole, format: 'der', type: 'spki' });
    assert.equal(key.asymmetricKeyType, 'ed25519');
    assert.equal(signature.content[0], 0, 'no unused bits');
    assert.ok(verify(null, info.whole, key, signature.content.subarray(1)));
  });

  it('is a certificates.k8s.io/v1 request with every field v1 requires, for a signer outside kubernetes.io', () => {
    const pcr = podCertificateRequest('one') as { apiVersion: string; kind: string; spec: Record<string, unknown> };
    assert.equal(pcr.apiVersion, 'certificates.k8s.io/v1');
    assert.equal(pcr.kind, 'PodCertificateRequest');
    const required = ['signerName', 'podName', 'podUID', 'serviceAccountName', 'serviceAccountUID', 'nodeName', 'nodeUID', 'stubPKCS10Request'];
    for (const field of required) assert.ok(typeof pcr.spec[field] === 'string' && pcr.spec[field] !== '', field);
    assert.equal(pcr.spec['signerName'], STORY_SIGNER);
    assert.ok(!STORY_SIGNER.startsWith('kubernetes.io/'));
    assert.equal(pcr.spec['maxExpirationSeconds'], 86400);
  });

  it('lives under its namespace in certificates.k8s.io/v1', () => {
    assert.equal(storyPath('podcertificaterequests', 'ns', 'o'), '/apis/certificates.k8s.io/v1/namespaces/ns/podcertificaterequests/o');
  });

  it('is the story resource of 1.36 -> 1.37; 1.35 -> 1.36 differ by no namespaced resource and run no stories', () => {
    assert.equal(VERSION_PAIRS['1.36-1.37']?.storyResource, 'podcertificaterequests');
    assert.equal(VERSION_PAIRS['1.35-1.36']?.storyResource, undefined);
  });
});

describe('upgrade test stories: the judgement', () => {
  it('a deleted namespace gone while objects of it are still stored was left with garbage', () => {
    assert.equal(judgeStories([namespace({ objects_left: 2 })], []).namespaces_left_with_garbage, 1);
  });

  it('a deleted namespace gone with nothing of it stored counts nothing', () => {
    assert.deepEqual(judgeStories([namespace({})], []), { namespaces_left_with_garbage: 0, namespaces_stuck_terminating: 0, dependents_wrongly_deleted: 0 });
  });

  it('a deleted namespace still Terminating after the allowance is stuck', () => {
    assert.equal(judgeStories([namespace({ state: 'terminating', objects_left: 2 })], []).namespaces_stuck_terminating, 1);
  });

  it('a namespace whose deletion never took is still there, so stuck too', () => {
    assert.equal(judgeStories([namespace({ state: 'active', delete_status: 503 })], []).namespaces_stuck_terminating, 1);
  });

  it('a dependent gone while its owner still exists was wrongly deleted', () => {
    assert.equal(judgeStories([], [dependent({ dependent: 'gone' })]).dependents_wrongly_deleted, 1);
  });

  it('a dependent gone with its owner is no wrong deletion', () => {
    assert.equal(judgeStories([], [dependent({ owner: 'gone', dependent: 'gone' })]).dependents_wrongly_deleted, 0);
  });

  it('readings that answered neither 200 nor 404 count nothing, and are counted as unreadable', () => {
    const namespaces = [namespace({ state: 'unknown' }), namespace({ objects_left: undefined })];
    const dependents = [dependent({ owner: 'unknown', dependent: 'gone' })];
    assert.deepEqual(judgeStories(namespaces, dependents), { namespaces_left_with_garbage: 0, namespaces_stuck_terminating: 0, dependents_wrongly_deleted: 0 });
    assert.equal(unreadable(namespaces, dependents), 3);
  });

  it('reads a namespace with a deletionTimestamp as Terminating, a 404 as gone, anything else but 200 as unknown', () => {
    assert.equal(namespaceStateOf(200, JSON.stringify({ metadata: { deletionTimestamp: '2026-12-02T04:00:00Z' } })), 'terminating');
    assert.equal(namespaceStateOf(200, JSON.stringify({ metadata: {}, status: { phase: 'Active' } })), 'active');
    assert.equal(namespaceStateOf(404, ''), 'gone');
    assert.equal(namespaceStateOf(503, ''), 'unknown');
  });

  it('reads an object as present on 200, gone on 404, unknown otherwise', () => {
    assert.deepEqual([200, 404, 0, 503].map(presenceOf), ['present', 'gone', 'unknown', 'unknown']);
  });

  it('counts the items of a 200 list only', () => {
    assert.equal(itemsIn(200, JSON.stringify({ items: [{}, {}] })), 2);
    assert.equal(itemsIn(404, ''), undefined);
  });
});

describe('upgrade test stories: in the outcome and what is held to them', () => {
  const observations = (stories: ModeObservations['stories']): ModeObservations =>
    emptyObservations({ controllerManagerRestarts: 2, ...(stories === undefined ? {} : { stories }) });

  it('the outcome carries the stories’ counts, what they were judged on, and the controller-manager’s restarts', () => {
    const record: StoriesRecord = {
      resource: 'podcertificaterequests',
      server: 'kas-a',
      terminating_allowance_s: 60,
      deleted_at_s: {},
      judged_at_s: 1,
      namespaces: [namespace({ objects_left: 2 })],
      dependents: [dependent({ dependent: 'gone' })],
      setup_failures: [],
      unreadable: 0,
    };
    const counts = judgeStories(record.namespaces, record.dependents);
    const o = judgeMode(observations({ counts, record }), upgradeTimeline(), new Ledger());
    assert.deepEqual([o.namespaces_left_with_garbage, o.namespaces_stuck_terminating, o.dependents_wrongly_deleted], [1, 0, 1]);
    assert.deepEqual(o.stories, record);
    assert.equal(o.controller_manager_restarts, 2);
  });

  it('a run without stories says why and counts 0', () => {
    const o = judgeMode(observations({ skipped: NO_STORY_RESOURCE }), upgradeTimeline(), new Ledger());
    assert.deepEqual(o.stories, { skipped: NO_STORY_RESOURCE });
    assert.deepEqual([o.namespaces_left_with_garbage, o.namespaces_stuck_terminating, o.dependents_wrongly_deleted], [0, 0, 0]);
  });

  it('mvproxy claims all three at 0; they are no invariant, which the baselines may break', () => {
    for (const k of ['namespaces_left_with_garbage', 'namespaces_stuck_terminating', 'dependents_wrongly_deleted'] as const) {
      assert.ok((MVPROXY_CLAIMS as readonly string[]).includes(k), k);
      assert.ok(!(INVARIANTS as readonly string[]).includes(k), k);
    }
  });
});
