// Service accounts and their tokens, made through an admin kubeconfig: how
// the sandbox, its tests and the benchmark get bearer-token clients.
import { KubeConfig, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';

export interface ServiceAccountTokenOptions {
  namespace: string;
  name: string;
  /** Bound cluster-wide to this ClusterRole when given (binding `<name>-<role>`). */
  clusterRole?: string;
  expirationSeconds: number;
}

/** Creates the service account (and binding) unless they exist, and returns a fresh token for it. */
export async function serviceAccountToken(adminKubeconfig: string, opts: ServiceAccountTokenOptions): Promise<string> {
  const kc = new KubeConfig();
  kc.loadFromFile(adminKubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const { namespace, name, clusterRole } = opts;
  await ignoreConflict(core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } }));
  if (clusterRole) {
    await ignoreConflict(
      kc.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
        body: {
          metadata: { name: `${name}-${clusterRole}` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
          subjects: [{ kind: 'ServiceAccount', name, namespace }],
        },
      }),
    );
  }
  const review = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: opts.expirationSeconds } },
  });
  const token = review.status?.token;
  if (!token) throw new Error(`the apiserver returned no token for service account ${namespace}/${name}`);
  return token;
}

/** Creating something that already exists (a second call, or a sandbox restarted on the same etcd) is fine. */
async function ignoreConflict(creation: Promise<unknown>): Promise<void> {
  try {
    await creation;
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
}
