// `mvproxy bootstrap`: prints the Envoy bootstrap for one apiserver's sidecar.
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { sidecarBootstrap, type ControlPlaneAddress } from '../xds/bootstrap.js';

export function runBootstrap(args: string[]): number {
  const { values } = parseArgs({
    args,
    options: {
      node: { type: 'string' },
      apiserver: { type: 'string' },
      'xds-socket': { type: 'string' },
      'xds-address': { type: 'string' },
      'xds-ca': { type: 'string' },
      'xds-cert': { type: 'string' },
      'xds-key': { type: 'string' },
      'xds-server-name': { type: 'string' },
      failover: { type: 'string', multiple: true },
      'admin-socket': { type: 'string' },
      'admin-port': { type: 'string' },
      'stats-port': { type: 'string' },
    },
    strict: true,
  });
  const problems: string[] = [];
  if (!values.node) problems.push('--node NAME (the apiserver name in the control plane config) is required');
  if (!!values['xds-socket'] === !!values['xds-address']) problems.push('give exactly one of --xds-socket PATH or --xds-address HOST:PORT');
  let controlPlane: ControlPlaneAddress | undefined;
  if (values['xds-socket']) controlPlane = { unixSocket: resolve(values['xds-socket']) };
  const tlsFiles = (): Extract<ControlPlaneAddress, { tls: unknown }>['tls'] | undefined => {
    const [ca, cert, key] = [values['xds-ca'], values['xds-cert'], values['xds-key']];
    if (!ca || !cert || !key) return undefined;
    return {
      ca: { filename: resolve(ca) },
      cert: { filename: resolve(cert) },
      key: { filename: resolve(key) },
      ...(values['xds-server-name'] ? { serverName: values['xds-server-name'] } : {}),
    };
  };
  const tcpAddress = (flag: string, value: string): ControlPlaneAddress | undefined => {
    const m = /^(.+):(\d+)$/.exec(value);
    const tls = tlsFiles();
    if (!m) problems.push(`${flag} ${JSON.stringify(value)} is not HOST:PORT`);
    if (!tls) problems.push(`${flag} needs --xds-ca, --xds-cert and --xds-key (mutual TLS)`);
    return m && tls ? { host: (m[1] ?? '').replace(/^\[|\]$/g, ''), port: Number(m[2]), tls } : undefined;
  };
  if (values['xds-address']) controlPlane = tcpAddress('--xds-address', values['xds-address']);
  // Other replicas (mutual TLS, same client files), tried in order when the one before fails.
  const failover = (values.failover ?? []).map((v) => tcpAddress('--failover', v)).filter((a): a is ControlPlaneAddress => a !== undefined);
  // Envoy's admin interface can stop the sidecar (/quitquitquit) and drop its
  // listeners: by default it is a Unix socket only its user can open, never a port
  // every local process can reach. --admin-port (loopback) only when asked for.
  let admin: { port: number } | { unixSocket: string } = {
    unixSocket: resolve(values['admin-socket'] ?? `/run/mvproxy/envoy-${values.node ?? 'node'}-admin.sock`),
  };
  if (values['admin-port'] !== undefined) {
    const adminPort = Number(values['admin-port']);
    if (values['admin-socket'] !== undefined) problems.push('give at most one of --admin-socket PATH or --admin-port N');
    if (!Number.isInteger(adminPort) || adminPort < 0 || adminPort > 65535) problems.push('--admin-port must be a port number');
    admin = { port: adminPort };
  }
  // Prometheus reads the sidecar's stats on a loopback listener that serves GET /stats/prometheus and nothing else.
  let stats: { port: number } | undefined;
  if (values['stats-port'] !== undefined) {
    const statsPort = Number(values['stats-port']);
    if (!Number.isInteger(statsPort) || statsPort < 1 || statsPort > 65535) problems.push('--stats-port must be a port number (1 to 65535)');
    if ('port' in admin && admin.port === 0)
      problems.push('--stats-port needs the admin interface at a known address: --admin-socket, or a fixed --admin-port');
    stats = { port: statsPort };
  }
  if (problems.length > 0 || !controlPlane || !values.node) throw new Error(`cannot make a bootstrap:\n  - ${problems.join('\n  - ')}`);
  process.stdout.write(
    `${JSON.stringify(sidecarBootstrap({ nodeId: values.node, ...(values.apiserver ? { apiserver: values.apiserver } : {}), controlPlane, ...(failover.length > 0 ? { failover } : {}), admin, ...(stats ? { stats } : {}) }), null, 2)}\n`,
  );
  return 0;
}
