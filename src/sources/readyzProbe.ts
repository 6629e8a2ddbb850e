// The liveness probe of the `kubernetes` Service's publisher (issue 21): a
// fresh TLS connection to a sidecar (or an apiserver) at the address the
// operator publishes, verified as a pod verifies it, then GET /readyz: live
// only on a 200. A pod dials the Service's ClusterIP (client-go's in-cluster
// config: https://$KUBERNETES_SERVICE_HOST, an IP), so it sends no SNI and
// checks the certificate's IP SANs against the ClusterIP, with the cluster
// CA; the probe does the same (issue 29), so a certificate without the
// ClusterIP is not live. A fresh connection each time: a kept-alive one would
// not show that new connections (a pod's) are accepted.
import type { KubeConfig } from '@kubernetes/client-node';
import type { NetworkAddress } from '../model/cluster.js';
import { createApiserverHttpsTransport, type HttpTransport } from './apiserverHttp.js';

/** One probe: resolves true on a 200, false on any other answer or failure; never rejects. */
export type ReadyzProbe = () => Promise<boolean>;

export const PROBE_TIMEOUT_MS = 2000;
/** A /readyz body is a few KiB at most (`?verbose` is not asked for). */
const MAX_BODY_BYTES = 64 * 1024;

/** GET /readyz through a transport, which it closes afterwards. */
export async function probeReadyz(transport: HttpTransport): Promise<boolean> {
  try {
    const answer = await transport.get('/readyz', {}, new AbortController().signal);
    return answer.status === 200;
  } catch {
    return false;
  } finally {
    transport.close();
  }
}

/** A probe of `address` with the kubeconfig's CA and credentials, the certificate verified against `clusterIp` (the `kubernetes` Service's) with no SNI. */
export function readyzProbe(kubeConfig: KubeConfig, address: NetworkAddress, clusterIp: string): ReadyzProbe {
  return () =>
    probeReadyz(createApiserverHttpsTransport(kubeConfig, address, { identityIp: clusterIp, timeoutMs: PROBE_TIMEOUT_MS, maxBodyBytes: MAX_BODY_BYTES }));
}
