// What changed and why, as events an operator reads (`mvproxy admin events`,
// the status page): derived here, purely, from two successive cluster models
// (src/planner/planEvents.ts derives those of two successive sets of plans).
// The control plane adds the events it witnesses itself (drains, NACKs,
// sidecar streams) with the helpers below.
import type { ApiserverObservation, ClusterModel, ServedResource } from './cluster.js';
import { standingIn, type PeerStanding, type Standings } from './liveness.js';
import { compareStrings } from '../util/order.js';

export type ClusterEventKind =
  | 'apiserver-arrived'
  | 'apiserver-left'
  | 'apiserver-restarted'
  | 'apiserver-readiness'
  | 'served-set-changed'
  | 'plan-changed'
  | 'nack'
  | 'drain'
  | 'undrain'
  | 'sidecar-connected'
  | 'sidecar-disconnected'
  | 'kubernetes-service'
  | 'kubernetes-service-stopped';

export interface ClusterEvent {
  /** Epoch milliseconds. */
  at: number;
  kind: ClusterEventKind;
  /** The apiserver or sidecar (node) it is about. */
  subject: string;
  /** One line, for a person. */
  message: string;
}

/** An event as kept in the control plane's journal: numbered in the order it was recorded (1, 2, ...). */
export interface JournalEntry extends ClusterEvent {
  sequence: number;
}

/** How many names a message lists (listed) before it says "and N more". */
const LISTED = 3;

/** A model and its apiservers' standings (liveness.ts apiserverStandings: computed once per reconcile). */
export interface StandingModel {
  model: ClusterModel;
  standings: Standings;
}

/** Apiserver events between two models; `previous` undefined means nothing was known before. */
export function modelEvents(previous: StandingModel | undefined, next: StandingModel): ClusterEvent[] {
  const at = next.model.now;
  const before = new Map((previous?.model.apiservers ?? []).map((a) => [a.endpoint.name, a]));
  const events: ClusterEvent[] = [];
  for (const a of [...next.model.apiservers].sort((x, y) => compareStrings(x.endpoint.name, y.endpoint.name))) {
    const name = a.endpoint.name;
    const old = before.get(name);
    const was: PeerStanding = old && previous ? standingIn(previous.standings, name) : 'gone';
    const now = standingIn(next.standings, name);
    const event = (kind: ClusterEventKind, message: string): void => {
      events.push({ at, kind, subject: name, message });
    };
    if (was !== 'available' && now === 'available') {
      const change = old?.version && a.version && old.version !== a.version ? ` (was ${old.version})` : '';
      event('apiserver-arrived', `available${a.version ? ` at ${a.version}` : ''}${change}, serving ${countResources(a.servedSet)}`);
    } else if (was === 'available' && now !== 'available') {
      event('apiserver-left', leftReason(a, now));
    } else if (was === 'available' && old) {
      const newHolder = old.lease && a.lease && old.lease.holderIdentity !== a.lease.holderIdentity;
      const newVersion = old.version !== undefined && a.version !== undefined && old.version !== a.version;
      if (newHolder || newVersion) {
        const version = newVersion ? ` at ${a.version} (was ${old.version})` : a.version ? ` at ${a.version}, same version` : '';
        event('apiserver-restarted', `restarted${version}${newHolder ? '' : ' (same lease holder)'}`);
      }
    }
    if (old && old.ready !== undefined && a.ready !== undefined && old.ready !== a.ready) {
      event('apiserver-readiness', a.ready ? 'ready (/readyz passes)' : 'not ready (starting, or in its shutdown delay): traffic moves off it as by a drain');
    }
    if (old && old.servedSet.length > 0 && a.servedSet.length > 0) {
      const change = servedSetChange(old.servedSet, a.servedSet);
      if (change) event('served-set-changed', change);
    }
  }
  return events;
}

function leftReason(a: ApiserverObservation, standing: PeerStanding): string {
  if (a.lease === undefined && a.leaseGoneAt !== undefined) {
    return standing === 'gone' ? 'gone (its lease left, grace period over)' : 'left: identity lease gone (shutdown); what only it serves answers 503 meanwhile';
  }
  return 'unreachable: what only it serves answers 503';
}

function countResources(set: readonly ServedResource[]): string {
  return `${set.length} resource${set.length === 1 ? '' : 's'}`;
}

/** "group/version", or the version alone for the core group. */
export function gvOf(r: { group: string; version: string }): string {
  return r.group === '' ? r.version : `${r.group}/${r.version}`;
}

/** "added storagemigration.k8s.io/v1 (storageversionmigrations); removed batch/v1 (cronjobs, jobs)", or undefined when equal. */
export function servedSetChange(before: readonly ServedResource[], after: readonly ServedResource[]): string | undefined {
  const key = (r: ServedResource): string => `${gvOf(r)}\u0000${r.resource}`;
  const oldKeys = new Set(before.map(key));
  const newKeys = new Set(after.map(key));
  const added = after.filter((r) => !oldKeys.has(key(r)));
  const removed = before.filter((r) => !newKeys.has(key(r)));
  if (added.length === 0 && removed.length === 0) return undefined;
  const parts: string[] = [];
  if (added.length > 0) parts.push(`added ${byGroupVersion(added)}`);
  if (removed.length > 0) parts.push(`removed ${byGroupVersion(removed)}`);
  return parts.join('; ');
}

function byGroupVersion(resources: readonly ServedResource[]): string {
  const groups = new Map<string, string[]>();
  for (const r of resources) groups.set(gvOf(r), [...(groups.get(gvOf(r)) ?? []), r.resource]);
  const names = [...groups.keys()].sort(compareStrings);
  const shown = names.slice(0, LISTED).map((gv) => `${gv} (${listed((groups.get(gv) ?? []).sort(compareStrings))})`);
  return `${shown.join(', ')}${names.length > LISTED ? ` and ${names.length - LISTED} more group-versions` : ''}`;
}

/** The first LISTED names, and "and N more" when there are more. */
export function listed(names: readonly string[]): string {
  return `${names.slice(0, LISTED).join(', ')}${names.length > LISTED ? ` and ${names.length - LISTED} more` : ''}`;
}

/** drain/undrain events between two sets of drained apiservers; `how` says, per apiserver, who asked, when known. */
export function drainEvents(before: ReadonlySet<string>, after: ReadonlySet<string>, at: number, how: (apiserver: string) => string): ClusterEvent[] {
  const events: ClusterEvent[] = [];
  for (const name of [...after].sort(compareStrings)) {
    if (!before.has(name)) events.push({ at, kind: 'drain', subject: name, message: `drained: traffic moves off it (${how(name)})` });
  }
  for (const name of [...before].sort(compareStrings)) {
    if (!after.has(name)) events.push({ at, kind: 'undrain', subject: name, message: `drain ended (${how(name)})` });
  }
  return events;
}

/** The short name of an xDS type URL: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration" -> "RouteConfiguration". */
export function shortTypeName(typeUrl: string): string {
  return typeUrl.slice(typeUrl.lastIndexOf('.') + 1);
}
