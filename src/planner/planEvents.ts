// The events of a change of plans: one per sidecar whose resource routes
// changed (src/model/events.ts has the event type and the model's events).
import { gvOf, listed, type ClusterEvent } from '../model/events.js';
import { compareStrings } from '../util/order.js';
import { resourceRoutesOf, type ResourceRoute, type SidecarPlan } from './plan.js';

/** One event per sidecar whose resource routes changed. */
export function planEvents(previous: readonly SidecarPlan[], next: readonly SidecarPlan[], at: number): ClusterEvent[] {
  const before = new Map(previous.map((p) => [p.node, p]));
  const events: ClusterEvent[] = [];
  for (const plan of next) {
    const old = before.get(plan.node);
    if (!old) continue;
    const [oldList, newList] = [resourceRoutesOf(old), resourceRoutesOf(plan)];
    const oldRoutes = new Map(oldList.map((r) => [routeKey(r), r]));
    const newRoutes = new Map(newList.map((r) => [routeKey(r), r]));
    const changed: string[] = [];
    for (const [key, route] of newRoutes) {
      const was = oldRoutes.get(key);
      if (!was || JSON.stringify(was.action) !== JSON.stringify(route.action)) changed.push(`${key} → ${target(route)}`);
    }
    for (const [key] of oldRoutes) if (!newRoutes.has(key)) changed.push(`${key} → local`);
    if (changed.length === 0) continue;
    const rerouted = newList.filter((r) => r.action.kind === 'peers').length;
    const unavailable = newList.filter((r) => r.action.kind === 'unavailable').length;
    const counts = `now ${rerouted} rerouted (${signed(rerouted - oldList.filter((r) => r.action.kind === 'peers').length)}), ${unavailable} unavailable (${signed(unavailable - oldList.filter((r) => r.action.kind === 'unavailable').length)})`;
    events.push({ at, kind: 'plan-changed', subject: plan.node, message: `${counts}: ${listed(changed.sort(compareStrings))}` });
  }
  return events;
}

function routeKey(r: ResourceRoute): string {
  return `${gvOf(r)} ${r.resource}${r.subresource ? `/${r.subresource}` : ''}`;
}

function target(r: ResourceRoute): string {
  return r.action.kind === 'peers' ? r.action.peers.join('|') : '503';
}

function signed(n: number): string {
  return n >= 0 ? `+${n}` : String(n);
}
