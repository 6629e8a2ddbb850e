// KEP-4020's two stories judged from what was read back: pure. The stories
// (stories.ts) delete namespaces holding objects only one apiserver serves,
// and give such objects dependents; the real kube-controller-manager's
// namespace controller and garbage collector then act, or fail to. What they
// did is read from the apiserver that serves the objects, directly, once the
// allowance for a Terminating namespace has passed.
import type { StoryResourceKey } from './observations.js';

/** The two moments: every apiserver up, and the sole server of the story resource restarting. */
export const STORIES = ['every apiserver up', 'sole server restarting'] as const;
export type StoryName = (typeof STORIES)[number];

/** What a read of one object answered: 200, 404, or anything else (no answer, an error). */
export type Presence = 'present' | 'gone' | 'unknown';

export function presenceOf(status: number): Presence {
  if (status === 200) return 'present';
  if (status === 404) return 'gone';
  return 'unknown';
}

/** A namespace as read: gone (404), Terminating (its deletion begun), active (never deleted), or unreadable. */
export type NamespaceState = 'gone' | 'terminating' | 'active' | 'unknown';

export function namespaceStateOf(status: number, body: string): NamespaceState {
  if (status === 404) return 'gone';
  if (status !== 200) return 'unknown';
  try {
    const ns = JSON.parse(body) as { metadata?: { deletionTimestamp?: string }; status?: { phase?: string } };
    return ns.metadata?.deletionTimestamp !== undefined || ns.status?.phase === 'Terminating' ? 'terminating' : 'active';
  } catch {
    return 'unknown';
  }
}

/** How many objects a list answer holds; undefined when it is not a 200 list. */
export function itemsIn(status: number, body: string): number | undefined {
  if (status !== 200) return undefined;
  try {
    const items = (JSON.parse(body) as { items?: unknown }).items;
    return Array.isArray(items) ? items.length : undefined;
  } catch {
    return undefined;
  }
}

/** A namespace a story deleted, read once the allowance had passed. */
export interface DeletedNamespaceReading {
  story: StoryName;
  namespace: string;
  /** The status of the story's DELETE of it (through the load balancer). */
  delete_status: number;
  state: NamespaceState;
  /** Story objects still stored in it, listed from their server; undefined when the list failed. */
  objects_left?: number;
}

/** An owner of the story resource and its ConfigMap dependent, read once the allowance had passed. */
export interface DependentReading {
  story: StoryName;
  namespace: string;
  owner: Presence;
  dependent: Presence;
}

export interface StoryCounts {
  /** Namespaces gone while objects of theirs are still stored: the namespace controller skipped a resource it could not see. */
  namespaces_left_with_garbage: number;
  /** Namespaces still there (Terminating, or never deleted) once the allowance had passed. */
  namespaces_stuck_terminating: number;
  /** Dependents gone while their owner still exists: the garbage collector took the owner for deleted. */
  dependents_wrongly_deleted: number;
}

export function judgeStories(namespaces: readonly DeletedNamespaceReading[], dependents: readonly DependentReading[]): StoryCounts {
  return {
    namespaces_left_with_garbage: namespaces.filter((n) => n.state === 'gone' && (n.objects_left ?? 0) > 0).length,
    namespaces_stuck_terminating: namespaces.filter((n) => n.state === 'terminating' || n.state === 'active').length,
    dependents_wrongly_deleted: dependents.filter((d) => d.dependent === 'gone' && d.owner === 'present').length,
  };
}

/** Readings that said nothing (an answer other than 200 or 404): a story they belong to is not judged on them. */
export function unreadable(namespaces: readonly DeletedNamespaceReading[], dependents: readonly DependentReading[]): number {
  const gcUnknown = dependents.filter((d) => d.owner === 'unknown' || d.dependent === 'unknown').length;
  const nsUnknown = namespaces.filter((n) => n.state === 'unknown' || (n.state === 'gone' && n.objects_left === undefined)).length;
  return gcUnknown + nsUnknown;
}

/** The stories of one run, as the JSON records them. */
export interface StoriesRecord {
  resource: StoryResourceKey;
  /** The apiserver that alone served the resource, restarted in the second story. */
  server: string;
  /** How long after the sole server was back in the load balancer a namespace may stay Terminating: the moment of judgement. */
  terminating_allowance_s: number;
  /** When each story's namespace was deleted, and when the readings were made (seconds since the mode's start). */
  deleted_at_s: Partial<Record<StoryName, number>>;
  /** How long each story's namespace stayed (Terminating) after its DELETE, read every second from the server; null: still there when judged. */
  terminating_s?: Partial<Record<StoryName, number | null>>;
  judged_at_s: number;
  namespaces: DeletedNamespaceReading[];
  dependents: DependentReading[];
  /** Story objects that could not be created (then their story says nothing). */
  setup_failures: string[];
  /** Readings that answered neither 200 nor 404. */
  unreadable: number;
}

/** Why a run has no stories. */
export interface NoStories {
  skipped: string;
}

export const NO_STORY_RESOURCE = 'the pair names no namespaced resource only its newer side serves';
