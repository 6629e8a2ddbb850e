// A minimal Envoy for reference: one TLS listener, the router, one route to
// one apiserver over TLS and HTTP/1.1, as the sidecar sends a token client's
// GET. Measured beside the sidecar, it separates the cost of any Envoy hop on
// this machine from the cost of mvproxy's configuration (filters, routes).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ManagedProcess } from '../sandbox/processes.js';
import { freePorts } from '../sandbox/ports.js';
import type { SandboxPki } from '../sandbox/pki.js';

const LISTENER = 'bare';

export interface BareEnvoy {
  url: string;
  /** The Envoy process, for its CPU time. */
  pid: number | undefined;
  /** Its admin interface (a Unix socket), for its counters (envoyCounters.ts). */
  adminSocket: string;
  /** The stat prefix of its listener's connection manager. */
  listener: string;
  stop: () => Promise<void>;
}

export async function startBareEnvoy(opts: { envoy: string; dir: string; pki: SandboxPki; servingName: string; upstreamPort: number }): Promise<BareEnvoy> {
  const serving = opts.pki.serving[opts.servingName];
  if (!serving) throw new Error(`no serving certificate for ${opts.servingName}`);
  const [port] = (await freePorts(1)) as [number];
  const file = (filename: string): { filename: string } => ({ filename });
  const adminSocket = join(opts.dir, 'bare-envoy-admin.sock');
  const config = {
    admin: { address: { pipe: { path: adminSocket } } },
    static_resources: {
      listeners: [
        {
          name: 'bare',
          address: { socket_address: { address: '127.0.0.1', port_value: port } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'envoy.filters.network.http_connection_manager',
                  typed_config: {
                    '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
                    stat_prefix: LISTENER,
                    route_config: {
                      virtual_hosts: [
                        {
                          name: 'all',
                          domains: ['*'],
                          routes: [
                            // Watches multiplexed over HTTP/2, as the sidecar sends them: the cheapest correct hop for thousands of them.
                            {
                              match: { prefix: '/', query_parameters: [{ name: 'watch', string_match: { exact: 'true' } }] },
                              route: { cluster: 'apiserver-h2', timeout: '0s', idle_timeout: '0s' },
                            },
                            { match: { prefix: '/' }, route: { cluster: 'apiserver', timeout: '0s' } },
                          ],
                        },
                      ],
                    },
                    http_filters: [
                      { name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } },
                    ],
                  },
                },
              ],
              transport_socket: {
                name: 'envoy.transport_sockets.tls',
                typed_config: {
                  '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
                  // HTTP/2 for h2load's clients, as the sidecar offers it.
                  common_tls_context: {
                    alpn_protocols: ['h2', 'http/1.1'],
                    tls_certificates: [{ certificate_chain: file(serving.cert), private_key: file(serving.key) }],
                  },
                },
              },
            },
          ],
        },
      ],
      clusters: [upstreamCluster('apiserver', 'http1', opts), upstreamCluster('apiserver-h2', 'h2', opts)],
    },
  };
  const configPath = join(opts.dir, 'bare-envoy.json');
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const proc = new ManagedProcess({
    name: 'bare-envoy',
    command: opts.envoy,
    args: ['-c', configPath, '--use-dynamic-base-id', '-l', 'warning'],
    logFile: join(opts.dir, 'bare-envoy.log'),
  });
  const url = `https://127.0.0.1:${port}`;
  // Listening is enough: any answer (even a TLS complaint) but a refused connection.
  await proc.waitReady(
    'reference Envoy',
    () =>
      fetch(url).then(
        () => true,
        (err: { cause?: { code?: string } }) => err.cause?.code !== 'ECONNREFUSED',
      ),
    30_000,
  );
  return { url, pid: proc.pid, adminSocket, listener: LISTENER, stop: () => proc.stop(2000) };
}

/** Envoy's default of 1,024 requests per cluster would turn thousands of watches into 503s: no limit, as the sidecar's clusters. */
const MANY = 1_000_000;

/** The apiserver over TLS, by HTTP/1.1 or HTTP/2 (at most kube-apiserver's 100 streams per connection, as the sidecar's HTTP/2 clusters). */
function upstreamCluster(name: string, protocol: 'http1' | 'h2', opts: { pki: SandboxPki; upstreamPort: number }): Record<string, unknown> {
  return {
    name,
    type: 'STATIC',
    connect_timeout: '1s',
    circuit_breakers: { thresholds: [{ max_connections: MANY, max_pending_requests: MANY, max_requests: MANY }] },
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: opts.upstreamPort } } } }] }],
    },
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        explicit_http_config: protocol === 'http1' ? { http_protocol_options: {} } : { http2_protocol_options: { max_concurrent_streams: 100 } },
      },
    },
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
        sni: 'kubernetes.default.svc',
        common_tls_context: {
          alpn_protocols: [protocol === 'http1' ? 'http/1.1' : 'h2'],
          validation_context: { trusted_ca: { filename: opts.pki.peerCa } },
        },
      },
    },
  };
}
