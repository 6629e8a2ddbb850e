// The path oracle's sandbox: its two apiservers, the objects some cases
// name, and the HTTP backend a pod's proxy subresource reaches.
import { createServer, type Server } from 'node:http';
import type { Agent } from 'node:https';
import { networkInterfaces } from 'node:os';
import { apiserverNamed, type TestSandbox } from './sandbox.js';
import { type Answer, send } from './pathOracleSend.js';

/** The apiserver whose sidecar is tested (v1.36.3) and its peer (v1.37.2), as test/support/sandbox.ts names them. */
export const LOCAL = 'kas-a';
export const PEER = 'kas-b';
export const ORACLE_APISERVERS = [
  { name: LOCAL, version: 'v1.36.3' },
  { name: PEER, version: 'v1.37.2' },
];

/** The oracle's fixtures: objects some cases name (each created once; a second run finds them). */
export async function createFixtures(tb: TestSandbox, agent: Agent, backend: Backend): Promise<void> {
  const state = tb.state();
  const create = async (apiserver: string, path: string, body: unknown, method: 'POST' | 'PATCH' = 'POST'): Promise<Answer & { body: string }> => {
    const url = new URL(apiserverNamed(state, apiserver).direct);
    const answer = await send(url, agent, { id: 'fixture', path, method }, 'mvproxy-oracle/fixtures', JSON.stringify(body));
    if (answer.status !== 201 && answer.status !== 200 && answer.status !== 409) throw new Error(`fixture ${method} ${path}: ${answer.status} ${answer.body}`);
    return answer;
  };
  await create(LOCAL, '/api/v1/namespaces', { metadata: { name: 'oracle' } });
  await create(LOCAL, '/api/v1/namespaces/oracle/serviceaccounts', { metadata: { name: 'default' } });
  await create(LOCAL, '/api/v1/namespaces/oracle/configmaps', { metadata: { name: 'oracle-cm' } });
  await create(LOCAL, '/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'oracle\\backslash' }, rules: [] });
  await create(PEER, '/apis/storagemigration.k8s.io/v1/storageversionmigrations', {
    metadata: { name: 'oracle-svm' },
    spec: { resource: { group: 'apps', resource: 'deployments' } },
  });
  await create(LOCAL, '/api/v1/namespaces/oracle/pods', {
    metadata: { name: 'oracle-backend' },
    spec: { automountServiceAccountToken: false, containers: [{ name: 'backend', image: 'oracle' }] },
  });
  if (backend.ip) {
    // No kubelet runs the pod; its status says it is at the backend's address, so its proxy subresource reaches the backend.
    const status = { podIP: backend.ip, podIPs: [{ ip: backend.ip }] };
    await create(LOCAL, '/api/v1/namespaces/oracle/pods/oracle-backend/status', [{ op: 'add', path: '/status', value: status }], 'PATCH');
  }
}

/** An HTTP server a pod's proxy subresource reaches; it records the path of each request by User-Agent. */
export interface Backend {
  server: Server;
  port: number;
  /** A non-loopback IPv4 address of this machine (the apiserver proxies only to global unicast addresses), if it has one. */
  ip?: string;
  received: Map<string, string>;
}

/**
 * Starts the backend on every address of this machine. In the sandbox's node
 * layout the apiservers reach it at a node address (relayed into the
 * sandbox's network namespace), as they would reach a pod on that node.
 */
export async function startBackend(tb?: TestSandbox): Promise<Backend> {
  const received = new Map<string, string>();
  const server = createServer((req, res) => {
    received.set(String(req.headers['user-agent'] ?? ''), req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('oracle backend\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const node = tb?.state().apiservers[0]?.nodeAddress;
  if (tb && node) {
    await tb.sandbox.net.reachHost(port, node);
    return { server, port, received, ip: node };
  }
  const ip = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
  return { server, port, received, ...(ip ? { ip } : {}) };
}

/** A case's path with its placeholders filled in: the backend's pod and port, a long name. */
export function substitute(path: string, backend: Backend): string {
  return path.replaceAll('@BACKEND@', `http:oracle-backend:${backend.port}`).replaceAll('@LONG@', 'l'.repeat(300));
}
