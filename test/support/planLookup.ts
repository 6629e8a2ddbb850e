// The planner's answer for one sidecar of a cluster model (see
// clusterModel.ts), and where that plan sends a request path.
import assert from 'node:assert/strict';

import type { ClusterModel } from '../../src/model/cluster.js';
import { parseRequestPath } from '../../src/model/requestInfo.js';
import type { RequestDestination, SidecarPlan } from '../../src/planner/plan.js';
import { destinationForRequest } from '../../src/planner/destination.js';
import { planSidecars } from '../../src/planner/planner.js';
import { plannerOptions } from './clusterModel.js';

/** The plan of `node`'s sidecar, with `draining` apiservers drained by the operator. */
export function planFor(node: string, m: ClusterModel, draining: string[] = []): SidecarPlan {
  const plan = planSidecars(m, plannerOptions(m, draining)).find((p) => p.node === node);
  assert.ok(plan, `a plan for ${node}`);
  return plan;
}

/** Where `plan` sends a request for `path`. */
export function destination(plan: SidecarPlan, path: string, alreadyProxied = false): RequestDestination {
  return destinationForRequest(plan, parseRequestPath(path), { alreadyProxied });
}

export const LOCAL: RequestDestination = { kind: 'local' };
