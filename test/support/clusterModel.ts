// Small cluster models for planner-level specifications: apiservers by name,
// what each serves, and whether it is reachable or has left.
import type { ApiserverObservation, ClusterModel, LocalOnlyGroupVersion, ServedResource } from '../../src/model/cluster.js';
import { apiserverStandings } from '../../src/model/liveness.js';
import type { PlannerOptions } from '../../src/planner/options.js';

export const NOW = 1_000_000;
export const GRACE_MS = 300_000;

/** The planner's options for a model: its apiservers' standings under GRACE_MS, and the operator's drains. */
export function plannerOptions(m: ClusterModel, draining: Iterable<string> = []): PlannerOptions {
  return { standings: apiserverStandings(m, GRACE_MS), draining: new Set(draining) };
}

export function served(group: string, version: string, resource: string, subresources: string[] = []): ServedResource {
  return { group, version, resource, namespaced: true, verbs: ['get', 'list', 'watch'], subresources };
}

export const CORE = [served('', 'v1', 'pods', ['log', 'status']), served('', 'v1', 'namespaces', ['finalize', 'status'])];
export const BATCH = [served('batch', 'v1', 'jobs', ['status']), served('batch', 'v1', 'cronjobs', ['status'])];

export interface ApiserverSpec {
  serves: ServedResource[];
  reachable?: boolean;
  /** Lease deleted this long ago (no lease now). */
  leaseGoneForMs?: number;
  /** Answering again for this long, after a poll that got no answer. */
  answeringForMs?: number;
  /** Its /readyz as last read. */
  ready?: boolean;
  /** Address host; 10.0.0.{index+1} by default. */
  host?: string;
}

function apiserver(name: string, spec: ApiserverSpec, index: number): ApiserverObservation {
  const observation: ApiserverObservation = {
    endpoint: { name, hostname: `host-${name}`, address: { host: spec.host ?? `10.0.0.${index + 1}`, port: 6443 } },
    servedSet: spec.serves,
    reachable: spec.reachable ?? true,
  };
  if (spec.leaseGoneForMs === undefined) {
    observation.lease = { name: `apiserver-${name}`, holderIdentity: `${name}-1`, renewTime: NOW - 1000 };
  } else {
    observation.leaseGoneAt = NOW - spec.leaseGoneForMs;
  }
  if (spec.answeringForMs !== undefined) observation.discoveryCurrentSince = NOW - spec.answeringForMs;
  if (spec.ready !== undefined) observation.ready = spec.ready;
  return observation;
}

/** Apiservers in the given order, addressed 10.0.0.1, 10.0.0.2, ... */
export function model(apiservers: Record<string, ApiserverSpec>, localOnly: LocalOnlyGroupVersion[] = []): ClusterModel {
  return { now: NOW, apiservers: Object.entries(apiservers).map(([name, spec], i) => apiserver(name, spec, i)), localOnly };
}
