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
import { readFileSync } from 'node:fs';
import { type ListedSlice, parseSlices, podGet, SERVICE_SLICES_PATH, serviceEndpoints } from '../../src/tools/sandbox/podHttp.js';

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
  slices: ListedSlice[];
  answers: PodClientAnswer[];
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '{}') as PodClientInput;
  const who = { ...input, ca: readFileSync(input.ca, 'utf8') };
  const [host, port] = input.bootstrap.split(':') as [string, string];
  const listed = await podGet(who, host, Number(port), SERVICE_SLICES_PATH);
  if (listed.status !== 200) throw new Error(`reading the slices: ${listed.status} ${listed.body}`);
  const slices = parseSlices(listed.body);
  const answers: PodClientAnswer[] = [];
  for (const { address, port: slicePort } of serviceEndpoints(slices, 'listed')) {
    try {
      const version = await podGet(who, address, slicePort, '/version');
      const other = await podGet(who, address, slicePort, input.path);
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
  const report: PodClientReport = { slices, answers };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
