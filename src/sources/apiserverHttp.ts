// HTTPS GET to one apiserver at an operator-configured address, with the CA
// and client credentials of a kubeconfig. One keep-alive agent per apiserver:
// discovery is polled every second, a new TLS handshake each time would cost
// more than the (usually 304) answer.
import https from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import { formatHost, type NetworkAddress } from '../model/cluster.js';
import { startDeadline } from './deadline.js';
import { type TlsMaterial, tlsAgentKeeper, tlsMaterialOf } from './tlsAgent.js';

export interface HttpResponse {
  status: number;
  /** The ETag response header, if any. */
  etag?: string;
  body: string;
}

/**
 * Thrown when no usable response arrived. `fetch` and `timeout` are network
 * failures (connection, TLS, a response cut short or not complete in time):
 * nothing was answered. `too_large` is not: the apiserver answered (status
 * and headers came) with a body over the size limit, so it is reachable and
 * only this body is refused.
 */
export type HttpTransportErrorKind = 'fetch' | 'timeout' | 'too_large';

export class HttpTransportError extends Error {
  constructor(
    readonly kind: HttpTransportErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'HttpTransportError';
  }
}

/** The seam the discovery fetcher talks through; tests inject a fake. */
export interface HttpTransport {
  get(path: string, headers: Record<string, string>, signal: AbortSignal): Promise<HttpResponse>;
  /** Close idle keep-alive connections; the transport is unusable afterwards. */
  close(): void;
}

export interface ApiserverHttpsOptions {
  /** Per-request deadline, connect to last byte. */
  timeoutMs?: number;
  /**
   * Name to verify the serving certificate against (and SNI). Default: the
   * kubeconfig cluster's tls-server-name, else the address host.
   */
  tlsServerName?: string;
  /**
   * Verify the serving certificate's IP SANs against this address and send no
   * SNI, instead of tlsServerName: what a client that dialed this IP does (Go
   * sends no SNI to an IP host), a pod at the Service's ClusterIP.
   */
  identityIp?: string;
  /** Refuse larger bodies with a `too_large` error (a discovery document is a few hundred KiB; the serve config's discoveryMaxBodyBytes). */
  maxBodyBytes: number;
}

const DEFAULT_TIMEOUT_MS = 2000;

/**
 * Connections to one apiserver, all kept open between polls: a poll sends
 * four requests at once (`/api`, `/apis`, the OpenAPI index, `/readyz`:
 * discoveryFetcher.ts). Keeping fewer idle closed the rest after every poll
 * and opened them again a second later: three TLS handshakes per apiserver
 * per second, the largest share of the replica's CPU in the fan-out bench
 * after garbage collection (and as much work again in each apiserver).
 */
const CONNECTIONS_PER_APISERVER = 4;

/**
 * Transport that dials `address` directly (never the kubeconfig's server URL:
 * peer addresses come from the operator's config only), authenticating with the
 * kubeconfig's current user. Credentials are re-read per request so rotated
 * tokens and certificates are picked up; the agent is rebuilt when the TLS
 * material changes.
 */
export function createApiserverHttpsTransport(kubeConfig: KubeConfig, address: NetworkAddress, options: ApiserverHttpsOptions): HttpTransport {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const { maxBodyBytes, identityIp } = options;
  const checkIdentity =
    identityIp === undefined ? undefined : (_host: string, cert: PeerCertificate): Error | undefined => checkServerIdentity(identityIp, cert);
  const agents = tlsAgentKeeper({ sockets: CONNECTIONS_PER_APISERVER, idleSockets: CONNECTIONS_PER_APISERVER });
  let closed = false;

  async function credentials(): Promise<{ tls: TlsMaterial; headers: Record<string, string> }> {
    const opts: https.RequestOptions = {};
    await kubeConfig.applyToHTTPSOptions(opts);
    // applyToHTTPSOptions also builds an agent (possibly a proxy agent): unused, we dial the address directly.
    // '' (not undefined): no SNI, even when the kubeconfig names a tls-server-name.
    const tls = tlsMaterialOf(opts, options.identityIp === undefined ? options.tlsServerName : '');
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(opts.headers ?? {})) {
      if (typeof value === 'string' || typeof value === 'number') headers[name] = String(value);
    }
    if (opts.auth) headers['Authorization'] = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    return { tls, headers };
  }

  return {
    async get(path, headers, signal) {
      if (closed) throw new HttpTransportError('fetch', 'transport closed');
      let creds: { tls: TlsMaterial; headers: Record<string, string> };
      try {
        creds = await credentials();
      } catch (err) {
        throw new HttpTransportError('fetch', `reading kubeconfig credentials: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (closed) throw new HttpTransportError('fetch', 'transport closed');
      const requestAgent = agents.agentFor(creds.tls);
      return new Promise<HttpResponse>((resolve, reject) => {
        let timedOut = false;
        let tooLarge = false;
        const req = https.request({
          host: address.host,
          port: address.port,
          path,
          method: 'GET',
          agent: requestAgent,
          headers: { ...creds.headers, ...headers },
          ...(creds.tls.servername !== undefined ? { servername: creds.tls.servername } : {}),
          ...(checkIdentity ? { checkServerIdentity: checkIdentity } : {}),
        });
        // Not a plain timer: a stall of this process must not time out an answer that is waiting to be read (deadline.ts).
        const deadline = startDeadline(timeoutMs, () => {
          timedOut = true;
          req.destroy();
        });
        const onAbort = (): void => {
          req.destroy();
        };
        signal.addEventListener('abort', onAbort, { once: true });
        let settled = false;
        const finish = (): boolean => {
          if (settled) return false;
          settled = true;
          deadline.cancel();
          signal.removeEventListener('abort', onAbort);
          return true;
        };
        const fail = (err: Error): void => {
          if (!finish()) return;
          const target = `GET https://${formatHost(address)}${path}`;
          if (timedOut) reject(new HttpTransportError('timeout', `${target}: no complete response within ${timeoutMs} ms`));
          else if (tooLarge) reject(new HttpTransportError('too_large', `${target}: ${err.message}`));
          else if (signal.aborted) reject(new HttpTransportError('fetch', `${target}: aborted`));
          else reject(new HttpTransportError('fetch', `${target}: ${err.message}`));
        };
        req.on('error', fail);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          // Refused before reading a byte when the apiserver says how large it is.
          const declared = Number(res.headers['content-length']);
          if (Number.isFinite(declared) && declared > maxBodyBytes) {
            tooLarge = true;
            fail(
              new Error(
                `HTTP ${res.statusCode ?? 0} with a response body larger than ${maxBodyBytes} bytes (${declared} declared; refused; the apiserver did answer)`,
              ),
            );
            req.destroy();
            return;
          }
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > maxBodyBytes) {
              tooLarge = true;
              fail(new Error(`HTTP ${res.statusCode ?? 0} with a response body larger than ${maxBodyBytes} bytes (refused; the apiserver did answer)`));
              req.destroy();
              return;
            }
            chunks.push(chunk);
          });
          res.on('error', fail);
          res.on('close', () => {
            if (!res.complete) fail(new Error('connection closed before the response was complete'));
          });
          res.on('end', () => {
            if (!finish()) return;
            const etagHeader = res.headers.etag;
            const response: HttpResponse = { status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') };
            if (typeof etagHeader === 'string' && etagHeader !== '') response.etag = etagHeader;
            resolve(response);
          });
        });
        if (signal.aborted) req.destroy();
        req.end();
      });
    },
    close() {
      closed = true;
      agents.destroy();
    },
  };
}
