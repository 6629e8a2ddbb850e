// The objects of the `kubernetes` Service that the operator creates, because
// mvproxy's replicas never do (issue 29: least privilege; RBAC cannot limit
// `create` to names): the kubeadm switch renders mvproxy's own EndpointSlices
// (the Endpoints and the slice `kubernetes` exist already, written by the
// apiservers' lease reconciler: `mvproxy deploy kubeadm`, src/cli/deploy.ts);
// a cluster born without that reconciler (the sandbox) creates them all.
// Each lists nothing, with mvproxy's digest, so a replica fills it without
// taking it for someone else's write. Pure.
import { operatorObjects, sharedWithApiservers } from '../planner/publishedEndpoints.js';
import { parseServeConfig } from './config.js';

/** The file name, under `deploy kubeadm --out`, of what the kubeadm switch applies once. */
export const OWN_SLICES_MANIFEST = 'kubernetes-mvproxy-slices.yaml';

/**
 * A List of the objects for the plan a replica makes of this config (as
 * `mvproxy serve` reads it): all of them (a cluster where no apiserver ever
 * published) or mvproxy's own slices only; undefined when the config does not
 * publish.
 */
export function serviceObjectsForConfig(config: unknown, which: 'all' | 'mvproxy-slices'): Record<string, unknown> | undefined {
  const plan = parseServeConfig(config, '/', false).kubernetesService?.plan;
  if (!plan) return undefined;
  const objects = operatorObjects(plan).filter((o) => which === 'all' || !sharedWithApiservers(o.ref));
  return { apiVersion: 'v1', kind: 'List', items: objects.map((o) => o.body) };
}
