// One request to the Kubernetes API with the control plane's kubeconfig
// (its server, CA and credentials), for what the client library's typed API
// makes awkward: lists read as raw JSON, merge patches. A non-2xx answer is a
// KubeApiError (src/model/status.ts) carrying the status and the Status
// message.
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, statusMessageSuffix } from '../model/status.js';
import { type TlsAgentKeeper, tlsAgentKeeper, tlsMaterialOf } from './tlsAgent.js';

export interface KubeRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  query?: Record<string, string>;
  /** Sent as JSON, with `contentType` (default application/json). */
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  timeoutMs: number;
}

/** The answer's body (text) for a 2xx answer; throws KubeApiError otherwise. */
export async function kubeRequest(kubeConfig: KubeConfig, request: KubeRequest): Promise<string> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(cluster.server.replace(/\/+$/, '') + request.path);
  for (const [k, v] of Object.entries(request.query ?? {})) url.searchParams.set(k, v);
  const payload = request.body === undefined ? undefined : JSON.stringify(request.body);
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (payload !== undefined) headers['Content-Type'] = request.contentType ?? 'application/json';
  const opts: https.RequestOptions = { method: request.method, headers, ...(request.signal ? { signal: request.signal } : {}) };
  await kubeConfig.applyToHTTPSOptions(opts);
  if (url.protocol === 'https:') reuseAgent(kubeConfig, opts);
  const what = `${request.method} ${request.path}`;
  return new Promise<string>((resolve, reject) => {
    const send = url.protocol === 'http:' ? http.request : https.request;
    const req = send(url, opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 299) reject(new KubeApiError(status, `${what}: HTTP ${status}${statusMessageSuffix(text)}`));
        else resolve(text);
      });
    });
    req.setTimeout(request.timeoutMs, () => req.destroy(new Error(`${what}: no response within ${request.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Idle connections kept to the API per kubeconfig: the records, lists and publisher of one replica rarely send more at once. */
const IDLE_CONNECTIONS = 4;

const agents = new WeakMap<KubeConfig, TlsAgentKeeper>();

/**
 * The library makes a new agent per request, so every request would open a
 * connection and parse the key and CA again; one keep-alive agent per
 * kubeconfig and TLS material instead (tlsAgent.ts). A proxy agent (the
 * kubeconfig's proxy-url) is used as the library made it.
 */
function reuseAgent(kubeConfig: KubeConfig, opts: https.RequestOptions): void {
  if (!(opts.agent instanceof https.Agent) || opts.agent.constructor !== https.Agent) return;
  let keeper = agents.get(kubeConfig);
  if (!keeper) {
    keeper = tlsAgentKeeper({ idleSockets: IDLE_CONNECTIONS });
    agents.set(kubeConfig, keeper);
  }
  opts.agent = keeper.agentFor(tlsMaterialOf(opts));
}
