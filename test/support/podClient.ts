// A client that stands in for a pod (network mode `namespace`): run with node
// inside the sandbox's network namespace (nsenter), it does what in-cluster
// clients do with the `kubernetes` Service, minus kube-proxy: reads the
// Service's EndpointSlices through the API (at `bootstrap`, as kube-proxy
// reads them), then opens a new connection to every listed address, verifies
// the serving certificate for the ClusterIP with the cluster CA (client-go's
// check for https://KUBERNETES_SERVICE_HOST: an IP SAN, no SNI), and GETs
// /version and `path` there with the service-account token. Prints one JSON
// object (PodClientReport) on stdout.
// Usage: node podClient.js '{"bootstrap":...,"ca":...,"token":...,"clusterIp":...,"path":...}'
import { request } from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { readFileSync } from 'node:fs';

export interface PodClientInput {
  /** host:port the slices are read from. */
  bootstrap: string;
  /** The cluster CA file. */
  ca: string;
  token: string;
  /** What the certificate must name: the Service's ClusterIP. */
  clusterIp: string;
  /** A second path to GET at every address. */
  path: string;
}

export interface PodClientAnswer {
  address: string;
  port: number;
  versionStatus: number;
  gitVersion?: string;
  server?: string;
  pathStatus: number;
  error?: string;
}

export interface PodClientReport {
  slices: { name: string; ports: { name?: string; port?: number }[]; addresses: string[] }[];
  answers: PodClientAnswer[];
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(input: PodClientInput, ca: string, host: string, port: number, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port,
        path,
        method: 'GET',
        ca,
        agent: false,
        headers: { authorization: `Bearer ${input.token}`, accept: 'application/json' },
        // As client-go for https://<ClusterIP>: the name checked is the ClusterIP, whatever address was dialled.
        checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(input.clusterIp, cert),
        timeout: 5000,
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

interface SliceList {
  items: { metadata: { name: string }; ports?: { name?: string; port?: number }[]; endpoints?: { addresses: string[] }[] }[];
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '{}') as PodClientInput;
  const ca = readFileSync(input.ca, 'utf8');
  const [host, port] = input.bootstrap.split(':') as [string, string];
  const listed = await get(
    input,
    ca,
    host,
    Number(port),
    '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes',
  );
  if (listed.status !== 200) throw new Error(`reading the slices: ${listed.status} ${listed.body}`);
  const slices = (JSON.parse(listed.body) as SliceList).items.map((s) => ({
    name: s.metadata.name,
    ports: s.ports ?? [],
    addresses: (s.endpoints ?? []).flatMap((e) => e.addresses),
  }));
  const answers: PodClientAnswer[] = [];
  for (const slice of slices) {
    const slicePort = slice.ports[0]?.port;
    if (slicePort === undefined) continue;
    for (const address of slice.addresses) {
      try {
        const version = await get(input, ca, address, slicePort, '/version');
        const other = await get(input, ca, address, slicePort, input.path);
        const server = version.headers['server'];
        answers.push({
          address,
          port: slicePort,
          versionStatus: version.status,
          ...(version.status === 200 ? { gitVersion: (JSON.parse(version.body) as { gitVersion: string }).gitVersion } : {}),
          ...(typeof server === 'string' ? { server } : {}),
          pathStatus: other.status,
        });
      } catch (err) {
        answers.push({ address, port: slicePort, versionStatus: 0, pathStatus: 0, error: (err as Error).message });
      }
    }
  }
  const report: PodClientReport = { slices, answers };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
