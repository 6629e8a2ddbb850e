// The objects of the `kubernetes` Service that the operator creates, because
// mvproxy's replicas never do (issue 29: least privilege; RBAC cannot limit
// `create` to names): the kubeadm switch renders the fallback EndpointSlice
// (the Endpoints and the slice `kubernetes` exist already, written by the
// apiservers' lease reconciler: `mvproxy deploy kubeadm`, src/cli/deploy.ts);
// a cluster born without that reconciler (the sandbox) creates all three.
// Each lists nothing, with mvproxy's digest, so a replica fills it without
// taking it for someone else's write. Pure.
import { FALLBACK_SLICE, operatorObjects } from '../planner/publishedEndpoints.js';
import { parseServeConfig } from './config.js';

/** The file name, under `deploy kubeadm --out`, of what the kubeadm switch applies once. */
export const FALLBACK_MANIFEST = 'kubernetes-mvproxy-fallback.yaml';

/**
 * A List of the objects for the plan a replica makes of this config (as
 * `mvproxy serve` reads it): all three (a cluster where no apiserver ever
 * published) or the fallback slice only; undefined when the config does not
 * publish.
 */
export function serviceObjectsForConfig(config: unknown, which: 'all' | 'fallback'): Record<string, unknown> | undefined {
  const plan = parseServeConfig(config, '/', false).kubernetesService?.plan;
  if (!plan) return undefined;
  const objects = operatorObjects(plan).filter((o) => which === 'all' || o.ref.name === FALLBACK_SLICE);
  return { apiVersion: 'v1', kind: 'List', items: objects.map((o) => o.body) };
}
