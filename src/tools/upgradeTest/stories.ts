// KEP-4020's two stories, told to the real kube-controller-manager the
// sandbox runs (its namespace controller and garbage collector), right after
// the sole server of a namespaced resource has come in: the first apiserver
// upgraded, the others still old. In every mode, alike:
//
// 1. "every apiserver up": a namespace holding two objects only that server
//    serves, and in another namespace such an owner with a ConfigMap
//    dependent; the first namespace deleted through the load balancer, and
//    waited for (at most the allowance) so that the next story's restart
//    does not overlap it.
// 2. "sole server restarting": the same again, then the operator restarts
//    that server at the same version (an operator step like the others:
//    out of the load balancer, stop, start, back in) and the namespace is
//    deleted through the load balancer right after it stopped.
//
// Once the server has been back for the allowance, what the controllers did
// is read from it directly and judged (storyJudgement.ts); then every story
// object and namespace is deleted, so the rest of the run goes on as before.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Answer, Balancer } from './balancer.js';
import type { ClusterReader } from './cluster.js';
import { newStoryObject, storyPath } from './objects.js';
import { STORY_RESOURCE_SPECS, type StoryResourceKey } from './observations.js';
import type { Operator } from './procedure.js';
import {
  itemsIn,
  judgeStories,
  namespaceStateOf,
  presenceOf,
  unreadable,
  type DeletedNamespaceReading,
  type DependentReading,
  type StoriesRecord,
  type StoryCounts,
  type StoryName,
} from './storyJudgement.js';

/** How long a namespace may stay Terminating after the sole server is back in the load balancer: the stories are judged then. */
export const TERMINATING_ALLOWANCE_S = 60;

export interface StoryParts {
  cluster: ClusterReader;
  balancer: Balancer;
  operator: Operator;
  resource: StoryResourceKey;
  /** The apiserver that alone serves `resource` (just upgraded). */
  server: string;
  /** Its version (the restart keeps it). */
  version: string;
  now: () => number;
  log: (line: string) => void;
  allowanceS?: number;
}

interface StorySet {
  story: StoryName;
  /** The namespace the story deletes, holding two objects of the resource. */
  deleted: string;
  /** The namespace of the owner and its dependent (not deleted by the story). */
  gc: string;
}

const SETS: Record<StoryName, StorySet> = {
  'every apiserver up': { story: 'every apiserver up', deleted: 'story-up-1', gc: 'story-gc-up' },
  'sole server restarting': { story: 'sole server restarting', deleted: 'story-restart-1', gc: 'story-gc-restart' },
};
const OWNER = 'owner';
const DEPENDENT = 'dependent';
/** An answer's status (0: none came) and body. */
type Reply = { status: number; body: string };

/** Tells both stories and judges them; the counts and what they were judged on. */
export async function runStories(p: StoryParts): Promise<{ counts: StoryCounts; record: StoriesRecord }> {
  const allowanceS = p.allowanceS ?? TERMINATING_ALLOWANCE_S;
  const setupFailures: string[] = [];
  const deleteStatus: Partial<Record<StoryName, number>> = {};
  const deletedAt: Partial<Record<StoryName, number>> = {};
  const deleteNamespace = async (set: StorySet): Promise<void> => {
    deletedAt[set.story] = p.operator.mark(`story: delete ${set.deleted}`) / 1000;
    const answer = await throughBalancer(p.balancer, 'DELETE', `/api/v1/namespaces/${set.deleted}`);
    deleteStatus[set.story] = answer.status;
    p.log(`story "${set.story}": DELETE namespace ${set.deleted} through the load balancer: ${answer.status}`);
  };

  const up = SETS['every apiserver up'];
  await setUp(p, up, setupFailures);
  await deleteNamespace(up);
  // With every apiserver up the controllers have until the allowance to finish: the restart must not overlap this story.
  const terminating: Partial<Record<StoryName, number | null>> = {};
  terminating[up.story] = await untilGone(p, up.deleted, p.now() + allowanceS * 1000, deletedAt[up.story]);

  const restart = SETS['sole server restarting'];
  await setUp(p, restart, setupFailures);
  const step = await p.operator.step(p.server, p.version, p.version, { purpose: 'story restart', afterStop: () => deleteNamespace(restart) });

  const judgeAt = step.inAt + allowanceS * 1000;
  p.log(`stories: judging ${allowanceS} s after ${p.server} came back`);
  terminating[restart.story] = await untilGone(p, restart.deleted, judgeAt, deletedAt[restart.story]);
  await sleep(Math.max(0, judgeAt - p.now()));
  const judgedAt = p.operator.mark('story: judged');
  const namespaces: DeletedNamespaceReading[] = [];
  const dependents: DependentReading[] = [];
  for (const set of [up, restart]) {
    namespaces.push(await readNamespace(p, set, deleteStatus[set.story] ?? 0));
    dependents.push(await readDependent(p, set));
  }
  await cleanUp(p, [up, restart]);
  const counts = judgeStories(namespaces, dependents);
  p.log(`stories: ${JSON.stringify(counts)}`);
  return {
    counts,
    record: {
      resource: p.resource,
      server: p.server,
      terminating_allowance_s: allowanceS,
      deleted_at_s: deletedAt,
      terminating_s: terminating,
      judged_at_s: judgedAt / 1000,
      namespaces,
      dependents,
      setup_failures: setupFailures,
      unreadable: unreadable(namespaces, dependents),
    },
  };
}

/**
 * Reads `namespace` from the server every second until it is gone or `until`
 * (on the run's clock) has come; how long it stayed from its DELETE at
 * `deletedAtS` (seconds on the same clock), or null when it was still there.
 */
async function untilGone(p: StoryParts, namespace: string, until: number, deletedAtS: number | undefined): Promise<number | null> {
  while (p.now() < until) {
    if ((await direct(p, 'GET', `/api/v1/namespaces/${namespace}`)).status === 404) {
      const stayedS = Math.round((p.now() / 1000 - (deletedAtS ?? p.now() / 1000)) * 10) / 10;
      p.log(`story: ${namespace} gone ${stayedS} s after its DELETE`);
      return stayedS;
    }
    await sleep(1000);
  }
  p.log(`story: ${namespace} still there at the judgement`);
  return null;
}

/** Both namespaces; two objects in the one the story deletes; the owner directly on the server, its dependent through the load balancer. */
async function setUp(p: StoryParts, set: StorySet, failures: string[]): Promise<void> {
  const expect = (what: string, res: Reply): Reply => {
    if (res.status !== 201) failures.push(`${what}: ${res.status} ${res.body.slice(0, 200)}`);
    return res;
  };
  for (const ns of [set.deleted, set.gc]) {
    expect(`namespace ${ns}`, await direct(p, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }));
  }
  for (const name of ['one', 'two']) {
    expect(`${p.resource} ${set.deleted}/${name}`, await direct(p, 'POST', storyPath(p.resource, set.deleted), newStoryObject(p.resource, name)));
  }
  const owner = expect(`${p.resource} ${set.gc}/${OWNER}`, await direct(p, 'POST', storyPath(p.resource, set.gc), newStoryObject(p.resource, OWNER)));
  const uid = owner.status === 201 ? (JSON.parse(owner.body) as { metadata?: { uid?: string } }).metadata?.uid : undefined;
  if (uid === undefined) return;
  const spec = STORY_RESOURCE_SPECS[p.resource];
  const dependent = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: DEPENDENT, ownerReferences: [{ apiVersion: `${spec.group}/${spec.version}`, kind: spec.kind, name: OWNER, uid }] },
  };
  expect(`configmap ${set.gc}/${DEPENDENT}`, await throughBalancer(p.balancer, 'POST', `/api/v1/namespaces/${set.gc}/configmaps`, dependent));
}

async function readNamespace(p: StoryParts, set: StorySet, deleteStatus: number): Promise<DeletedNamespaceReading> {
  const ns = await readable(() => direct(p, 'GET', `/api/v1/namespaces/${set.deleted}`));
  const left = await readable(() => direct(p, 'GET', storyPath(p.resource, set.deleted)));
  const objectsLeft = itemsIn(left.status, left.body);
  return {
    story: set.story,
    namespace: set.deleted,
    delete_status: deleteStatus,
    state: namespaceStateOf(ns.status, ns.body),
    ...(objectsLeft === undefined ? {} : { objects_left: objectsLeft }),
  };
}

async function readDependent(p: StoryParts, set: StorySet): Promise<DependentReading> {
  const owner = await readable(() => direct(p, 'GET', storyPath(p.resource, set.gc, OWNER)));
  const dependent = await readable(() => direct(p, 'GET', `/api/v1/namespaces/${set.gc}/configmaps/${DEPENDENT}`));
  return { story: set.story, namespace: set.gc, owner: presenceOf(owner.status), dependent: presenceOf(dependent.status) };
}

/** Every story object and namespace deleted, failures ignored: the rest of the run does not depend on them. */
async function cleanUp(p: StoryParts, sets: StorySet[]): Promise<void> {
  for (const set of sets) {
    for (const ns of [set.deleted, set.gc]) {
      await direct(p, 'DELETE', storyPath(p.resource, ns));
      await direct(p, 'DELETE', `/api/v1/namespaces/${ns}`);
    }
  }
}

/** A request to the server directly with the harness's admin access; status 0 when it could not be made. */
function direct(p: StoryParts, method: string, path: string, body?: unknown): Promise<Reply> {
  return p.cluster.direct(method, path, body, p.server).catch((err: Error) => ({ status: 0, body: err.message }));
}

/** Retried while it answers neither 200 nor 404 (a read that says nothing), at most 10 times. */
async function readable(read: () => Promise<Reply>): Promise<Reply> {
  let res = await read();
  for (let i = 0; i < 9 && res.status !== 200 && res.status !== 404; i++) {
    await sleep(500);
    res = await read();
  }
  return res;
}

/** A client's request through the load balancer, retried on no answer or a 5xx as client-go would, at most 10 times. */
async function throughBalancer(balancer: Balancer, method: string, path: string, body?: unknown): Promise<Answer> {
  let answer = await balancer.send(balancer.pick(), 'token', method, path, body);
  for (let i = 0; i < 9 && (answer.status === 0 || answer.status >= 500); i++) {
    await sleep(500);
    answer = await balancer.send(balancer.pick(), 'token', method, path, body);
  }
  return answer;
}
