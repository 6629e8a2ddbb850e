// Which half of a change a sidecar must have first: its routes or its
// documents (the document filters' configurations, ECDS). A document lists
// what the routes send to a peer or answer 503 for (the peer part,
// discovery/peerPart.ts), so between the two pushes one of them is ahead:
//
// - routes first when they add something: a document never lists a resource
//   before a route serves it (the old rule, "ECDS goes last");
// - documents first when the routes only drop something: the new documents
//   no longer list what is dropped, and the old routes still serve all they
//   list, so no document lists a resource whose route already answers 404.
//
// Routes are compared by name: a route's name carries its rule and what it
// matches (translator/routes.ts), so a route that starts or stops serving
// something appears or disappears by name. A change that adds and drops at
// once goes routes first: what it adds must not be listed before it is served.
import { TYPE_URL, type Snapshot } from './snapshot.js';

export type ChangeOrder = 'routes-first' | 'documents-first';

/** Route names of a snapshot, by snapshot: asked on every flush of every stream. Weak: gone with the snapshots. */
const routeNamesOf = new WeakMap<Snapshot, ReadonlySet<string>>();

/** Every route's name in a snapshot's route configurations (virtual host and route). */
export function routeNames(snapshot: Snapshot): ReadonlySet<string> {
  const known = routeNamesOf.get(snapshot);
  if (known) return known;
  const names = new Set<string>();
  for (const config of snapshot.types[TYPE_URL.route].resources.values()) {
    if (config['@type'] !== TYPE_URL.route) continue;
    for (const host of config.virtual_hosts ?? [])
      for (const route of host.routes ?? []) names.add(`${config.name ?? ''}/${host.name ?? ''}/${route.name ?? ''}`);
  }
  routeNamesOf.set(snapshot, names);
  return names;
}

/**
 * The order of the change from the routes a sidecar holds (`held`: the
 * snapshot whose routes it last accepted; undefined when unknown) to `next`.
 */
export function changeOrder(held: Snapshot | undefined, next: Snapshot): ChangeOrder {
  if (held === undefined || held === next) return 'routes-first';
  const before = routeNames(held);
  const after = routeNames(next);
  for (const name of after) if (!before.has(name)) return 'routes-first';
  for (const name of before) if (!after.has(name)) return 'documents-first';
  return 'routes-first';
}
