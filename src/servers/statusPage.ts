// The data behind the status page (the admin HTTP address's `/`), built purely
// from what GetStatus and explain read: the model, the plans (which already
// say, per resource, where each sidecar sends it), the ADS state, the drains,
// the sync record and the recent events. The page itself
// (statusPageAssets.ts) only draws this JSON, as text, never as markup.
import { standingIn } from '../model/liveness.js';
import { resourceRoutesOf, type ResourceRouteAction } from '../planner/plan.js';
import { compareStrings } from '../util/order.js';
import { adminStatus, connectionText, type StatusInput } from './admin.js';
import type { JournalEntry } from '../model/events.js';
import type { KubernetesServiceStatus } from '../generated/mvproxy/admin/v1/KubernetesServiceStatus.js';

export interface StatusPageInput extends StatusInput {
  /** Recent events, oldest first. */
  events: readonly JournalEntry[];
}

export interface StatusPageApiserver {
  name: string;
  version: string;
  standing: string;
  ready: string;
  draining: boolean;
  leaseHolder: string;
  address: string;
  resources: number;
}

export interface StatusPageSidecar {
  node: string;
  /** "yes", "no" or "via REPLICA" (streaming from another replica, as the sync record says). */
  connected: string;
  inSync: boolean;
  rerouted: number;
  unavailable: number;
  /** Envoy's message of the last NACK, "" when none. */
  lastNack: string;
}

/** One group-version-resource some live apiserver serves: per column (apiserver), whether it serves it and where its sidecar sends it. */
export interface MatrixRow {
  /** "core" for the core group. */
  group: string;
  version: string;
  resource: string;
  served: boolean[];
  /** "local", the peers it goes to ("kas-b", "kas-b kas-c"), "503", or "" when that sidecar has no plan. */
  routes: string[];
  /** Not served by every column, or sent somewhere other than local by some sidecar: shown expanded. */
  notable: boolean;
}

/** A field of the publisher's status drawn as text: its proto name and its value. */
export interface PanelField {
  name: string;
  value: string;
}

/**
 * The `kubernetes` Service's publication (the admin status's
 * kubernetes_service): its state and why, then every other field, and per
 * apiserver every field of its node, by proto name as text, so that fields
 * added to KubernetesServiceStatus or PublishedNode show up without a change
 * to the page.
 */
export interface KubernetesServicePanel {
  /** The publisher's state ("off" while publishing is not turned on; admin.proto KubernetesServiceStatus.state). */
  state: string;
  message: string;
  fields: PanelField[];
  nodes: PanelField[][];
}

export interface StatusPageData {
  generatedAt: string;
  replica: string;
  apiservers: StatusPageApiserver[];
  sidecars: StatusPageSidecar[];
  matrix: { columns: string[]; rows: MatrixRow[] };
  kubernetesService: KubernetesServicePanel;
  /** Newest first. */
  events: Array<{ sequence: number; time: string; kind: string; subject: string; message: string }>;
}

/** How many events the page shows. */
export const PAGE_EVENTS = 200;

export function statusPageData(input: StatusPageInput): StatusPageData {
  const { model, plans, standings } = input;
  const status = adminStatus(input);
  const statusApiservers = status.apiservers ?? [];
  const columns = statusApiservers.map((a) => a.name ?? '');
  const live = model.apiservers.filter((a) => standingIn(standings, a.endpoint.name) !== 'gone');
  const servedBy = new Map<string, Set<string>>();
  const names = new Map<string, { group: string; version: string; resource: string }>();
  for (const a of live) {
    for (const r of a.servedSet) {
      const key = resourceKey(r.group, r.version, r.resource);
      names.set(key, { group: r.group, version: r.version, resource: r.resource });
      servedBy.set(key, (servedBy.get(key) ?? new Set()).add(a.endpoint.name));
    }
  }
  const routeOf = new Map<string, Map<string, ResourceRouteAction>>();
  for (const plan of plans) {
    const routes = new Map<string, ResourceRouteAction>();
    for (const r of resourceRoutesOf(plan)) if (r.subresource === undefined) routes.set(resourceKey(r.group, r.version, r.resource), r.action);
    routeOf.set(plan.node, routes);
  }
  const rows = [...names.entries()]
    .sort(([, a], [, b]) => compareStrings(a.group, b.group) || compareStrings(a.version, b.version) || compareStrings(a.resource, b.resource))
    .map(([key, r]): MatrixRow => {
      const served = columns.map((c) => servedBy.get(key)?.has(c) ?? false);
      const routes = columns.map((c) => {
        const plan = routeOf.get(c);
        if (!plan) return '';
        const action = plan.get(key);
        return action === undefined ? 'local' : action.kind === 'peers' ? action.peers.join(' ') : '503';
      });
      return {
        group: r.group === '' ? 'core' : r.group,
        version: r.version,
        resource: r.resource,
        served,
        routes,
        notable: served.some((s) => !s) || routes.some((to) => to !== 'local' && to !== ''),
      };
    });
  return {
    generatedAt: new Date(model.now || Date.now()).toISOString(),
    replica: input.replica,
    apiservers: statusApiservers.map((a) => ({
      name: a.name ?? '',
      version: a.version ?? '',
      standing: a.standing ?? '',
      ready: a.ready ?? '',
      draining: a.draining ?? false,
      leaseHolder: a.lease_holder_identity ?? '',
      address: a.address ?? '',
      resources: a.served_resources ?? 0,
    })),
    sidecars: (status.sidecars ?? []).map((s) => ({
      node: s.node ?? '',
      connected: connectionText(s),
      inSync: s.in_sync ?? false,
      rerouted: s.rerouted_routes ?? 0,
      unavailable: s.unavailable_routes ?? 0,
      lastNack: (s.xds ?? []).map((t) => t.last_nack ?? '').find((m) => m !== '') ?? '',
    })),
    matrix: { columns, rows },
    kubernetesService: kubernetesServicePanel(status.kubernetes_service ?? {}),
    events: input.events
      .slice(-PAGE_EVENTS)
      .reverse()
      .map((e) => ({ sequence: e.sequence, time: new Date(e.at).toISOString(), kind: e.kind, subject: e.subject, message: e.message })),
  };
}

/** Fields the panel draws apart (state, message, nodes) or not at all (enabled: the state says "off"). */
const PANEL_OWN_FIELDS = new Set(['enabled', 'state', 'message', 'nodes']);

export function kubernetesServicePanel(status: KubernetesServiceStatus): KubernetesServicePanel {
  return {
    state: status.state ?? '',
    message: status.message ?? '',
    fields: fieldsOf(status).filter((f) => !PANEL_OWN_FIELDS.has(f.name)),
    nodes: (status.nodes ?? []).map((n) => fieldsOf(n)),
  };
}

/** Every field of a status message as text: lists joined by ", ", booleans yes/no, a missing or empty value "-". */
function fieldsOf(message: object): PanelField[] {
  return Object.entries(message).map(([name, value]: [string, unknown]) => ({ name, value: fieldText(value) }));
}

function fieldText(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map(fieldText).join(', ');
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (value === undefined || value === null || value === '') return '-';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function resourceKey(group: string, version: string, resource: string): string {
  return JSON.stringify([group, version, resource]);
}
