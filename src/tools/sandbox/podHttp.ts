// What a pod's client does on the wire with the `kubernetes` Service, shared
// by the pod stand-ins (podClient.ts, podWatcher.ts): a GET on a new
// connection that verifies the serving certificate for the ClusterIP with the
// cluster CA (client-go's check for https://KUBERNETES_SERVICE_HOST: an IP
// SAN, no SNI), and the Service's EndpointSlices as kube-proxy reads them.
import { request } from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';

/** Who asks, and what the certificate must name. */
export interface PodIdentity {
  /** The cluster CA (PEM). */
  ca: string;
  token: string;
  /** The Service's ClusterIP. */
  clusterIp: string;
}

export interface PodAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** The `kubernetes` Service's slices, selected by label as kube-proxy selects them. */
export const SERVICE_SLICES_PATH = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes';

export function podGet(who: PodIdentity, host: string, port: number, path: string, timeoutMs = 5000): Promise<PodAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port,
        path,
        method: 'GET',
        ca: who.ca,
        agent: false,
        headers: { authorization: `Bearer ${who.token}`, accept: 'application/json' },
        // As client-go for https://<ClusterIP>: the name checked is the ClusterIP, whatever address was dialled.
        checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(who.clusterIp, cert),
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

export interface ListedSlice {
  name: string;
  ports: { name?: string; port?: number }[];
  addresses: string[];
  readyAddresses: string[];
}

interface SliceList {
  items: {
    metadata: { name: string };
    ports?: { name?: string; port?: number }[];
    endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[];
  }[];
}

/** An EndpointSliceList body: each slice's name, ports and every endpoint address. */
export function parseSlices(body: string): ListedSlice[] {
  return (JSON.parse(body) as SliceList).items.map((s) => ({
    name: s.metadata.name,
    ports: s.ports ?? [],
    addresses: (s.endpoints ?? []).flatMap((e) => e.addresses),
    // kube-proxy sends new connections only to ready endpoints; an absent condition means ready.
    readyAddresses: (s.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses),
  }));
}

/** Each `address:port` the Service leads to, once however many slices list it: kube-proxy serves the union of the Service's slices. */
export function serviceEndpoints(slices: readonly ListedSlice[], which: 'listed' | 'ready'): { address: string; port: number }[] {
  const endpoints = new Map<string, { address: string; port: number }>();
  for (const slice of slices) {
    const port = slice.ports[0]?.port;
    if (port === undefined) continue;
    for (const address of which === 'ready' ? slice.readyAddresses : slice.addresses) endpoints.set(`${address}:${port}`, { address, port });
  }
  return [...endpoints.values()];
}
