// `mvproxy admin ...`: the operator's client of the control plane's admin gRPC
// API (proto/mvproxy/admin/v1/admin.proto).
import { parseArgs } from 'node:util';
import { connectionText } from '../servers/admin.js';
import { call, localAdminSocket, waitInSync, withAdminClient } from '../entry/adminClient.js';
import type { AdminClient } from '../generated/mvproxy/admin/v1/Admin.js';
import type { Status__Output } from '../generated/mvproxy/admin/v1/Status.js';
import type { Explanation__Output } from '../generated/mvproxy/admin/v1/Explanation.js';
import { asksForHelp } from '../util/commandLine.js';
import { ADMIN_VERB_USAGE, COMMAND_USAGE } from './usage.js';
import { table } from './table.js';
import { configTypeUrl, formatConfig } from './adminConfig.js';
import { streamEvents } from './adminEvents.js';

const ADMIN_USAGE = COMMAND_USAGE['admin'] ?? '';

/** `invokedAs` names the command in help texts: `mvproxy admin`, or `kubectl mvproxy` for the kubectl plugin. */
export async function runAdmin(args: string[], invokedAs = 'mvproxy admin'): Promise<number> {
  const usage = (verb?: string): string => ((verb && ADMIN_VERB_USAGE[verb]) || ADMIN_USAGE).replaceAll('mvproxy admin', invokedAs);
  if (asksForHelp(args)) {
    process.stdout.write(usage(args.find((a) => !a.startsWith('-') && ADMIN_VERB_USAGE[a] !== undefined)));
    return 0;
  }
  const { values, positionals } = parseArgs({
    args,
    options: {
      socket: { type: 'string' },
      output: { type: 'string', short: 'o' },
      'peer-proxied': { type: 'boolean', default: false },
      wait: { type: 'boolean', default: false },
      follow: { type: 'boolean', short: 'f', default: false },
      timeout: { type: 'string', default: '60' },
      type: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [verb, ...operands] = positionals;
  const json = values.output === 'json';
  const outputs = verb === 'config' ? ['json', 'yaml'] : ['json'];
  if (values.output !== undefined && !outputs.includes(values.output))
    throw new Error(`-o: ${outputs.map((o) => JSON.stringify(o)).join(' or ')} for admin ${verb ?? ''}, got ${JSON.stringify(values.output)}`);
  if (values.type !== undefined && verb !== 'config') throw new Error('--type: only for admin config');
  const timeoutSeconds = Number(values.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0)
    throw new Error(`--timeout: a positive number of seconds, got ${JSON.stringify(values.timeout)}`);
  const expect = (count: number, names: string): string[] => {
    if (operands.length !== count) throw new Error(`${verb} needs ${names}\n\n${usage(verb)}`);
    return operands;
  };

  switch (verb) {
    case 'status': {
      expect(0, 'no operands');
      const status = await withClient(values.socket, (c) => call(c, 'GetStatus', {}));
      process.stdout.write(json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
      return 0;
    }
    case 'explain': {
      const [sidecar, path] = expect(2, 'SIDECAR and PATH') as [string, string];
      const explanation = await withClient(values.socket, (c) => call(c, 'Explain', { sidecar, path, peer_proxied: values['peer-proxied'] }));
      process.stdout.write(json ? `${JSON.stringify(explanation, null, 2)}\n` : formatExplanation(explanation));
      return 0;
    }
    case 'drain':
    case 'undrain': {
      const [apiserver] = expect(1, 'the apiserver NAME') as [string];
      return withClient(values.socket, async (c) => {
        const answer = await call(c, verb === 'drain' ? 'Drain' : 'Undrain', { apiserver });
        process.stderr.write(`draining: ${answer.draining.length > 0 ? answer.draining.join(', ') : 'none'}\n`);
        if (!values.wait) return 0;
        const status = await waitInSync(c, timeoutSeconds * 1000);
        const [connected, nowhere] = [status.sidecars.filter((s) => s.connected), status.sidecars.filter((s) => !s.connected)];
        const named = connected.map((s) => (s.replica ? `${s.node} via ${s.replica}` : s.node));
        process.stderr.write(`every connected sidecar runs the new routes (${named.join(', ')})\n`);
        if (nowhere.length > 0) process.stderr.write(`connected to no replica: ${nowhere.map((s) => s.node).join(', ')}\n`);
        return 0;
      });
    }
    case 'events': {
      expect(0, 'no operands');
      const stop = new AbortController();
      const onSignal = (): void => stop.abort();
      process.once('SIGINT', onSignal);
      try {
        await withClient(values.socket, (c) =>
          streamEvents(c, { follow: values.follow, json, signal: stop.signal }, (line) => process.stdout.write(`${line}\n`)),
        );
      } finally {
        process.off('SIGINT', onSignal);
      }
      return 0;
    }
    case 'config': {
      const [sidecar] = expect(1, 'the SIDECAR name') as [string];
      const typeUrl = values.type === undefined ? '' : configTypeUrl(values.type);
      const config = await withClient(values.socket, (c) => call(c, 'GetConfig', { sidecar, type_url: typeUrl }));
      process.stdout.write(formatConfig(config, values.output === 'json' ? 'json' : values.output === 'yaml' ? 'yaml' : 'table'));
      return 0;
    }
    case undefined:
      process.stdout.write(usage());
      return 2;
    default:
      throw new Error(`unknown verb ${JSON.stringify(verb)}\n\n${usage()}`);
  }
}

function adminSocket(flag: string | undefined): string {
  const chosen = flag ?? process.env['MVPROXY_ADMIN_SOCKET'];
  if (chosen !== undefined) return chosen;
  const fromSandbox = localAdminSocket();
  if (fromSandbox === undefined)
    throw new Error("no admin socket: pass --socket PATH (the admin.socket of the control plane's config) or set MVPROXY_ADMIN_SOCKET");
  return fromSandbox;
}

/** Calls `use` with a client of the admin socket given (--socket), or found (MVPROXY_ADMIN_SOCKET, the sandbox's). */
export async function withClient<T>(socketFlag: string | undefined, use: (client: AdminClient) => Promise<T>): Promise<T> {
  return withAdminClient(adminSocket(socketFlag), use);
}

function formatStatus(status: Status__Output): string {
  const apiservers = table(
    ['APISERVER', 'VERSION', 'STANDING', 'READY', 'DRAINING', 'RESOURCES', 'ADDRESS', 'LEASE HOLDER'],
    status.apiservers.map((a) => [
      a.name,
      a.version || '-',
      a.standing,
      a.ready || '-',
      a.draining ? 'yes' : 'no',
      String(a.served_resources),
      a.address,
      a.lease_holder_identity || '-',
    ]),
  );
  const sidecars = table(
    ['SIDECAR', 'CONNECTED', 'IN SYNC', 'TO PEERS', '503', 'LAST NACK'],
    status.sidecars.map((s) => [
      s.node,
      connectionText(s),
      s.in_sync ? 'yes' : 'no',
      String(s.rerouted_routes),
      String(s.unavailable_routes),
      s.xds.map((t) => t.last_nack).find((m) => m) ?? '-',
    ]),
  );
  return `${apiservers}\n${sidecars}${formatKubernetesService(status.kubernetes_service)}`;
}

/** The `kubernetes` Service's endpoints as this replica publishes them; nothing while publishing is off. */
export function formatKubernetesService(k: Status__Output['kubernetes_service']): string {
  if (!k?.enabled) return '';
  const nodes = table(
    ['APISERVER', 'PUBLISHED', 'SIDECAR LIVE', 'APISERVER READY', 'SIDECAR SEEN BY'],
    k.nodes.map((n) => [
      n.apiserver,
      n.published === 'sidecar' ? 'sidecar' : n.published === 'apiserver' ? 'apiserver (directly)' : 'no',
      n.sidecar_live ? 'yes' : 'no',
      n.apiserver_ready ? 'yes' : 'no',
      n.sidecar_seen_by.join(', ') || '-',
    ]),
  );
  // A node listed that nothing observes live: what a dead node looks like when every replica was down (docs/never-worse.md).
  const stale = k.nodes.filter((n) => (n.published === 'sidecar' && !n.sidecar_live) || (n.published === 'apiserver' && !n.apiserver_ready));
  const slices = table(
    ['ENDPOINTSLICE', 'WRITTEN BY', 'MANAGED BY', 'ADDRESSES'],
    k.slices.map((s) => [s.name, s.written_by_mvproxy ? 'mvproxy' : 'foreign', s.managed_by || '-', s.addresses.join(', ') || '-']),
  );
  const lines = [
    `\nkubernetes Service (default/kubernetes): ${k.state}: ${k.message}`,
    ...(k.ready ? [] : ['readiness: not ready (/readyz fails)']),
    ...(stale.length > 0 ? [`listed but not observed live: ${stale.map((n) => n.apiserver).join(', ')}`] : []),
    ...(k.other_addresses.length > 0 ? [`also listed (no config entry publishes them): ${k.other_addresses.join(', ')}`] : []),
    ...(k.endpoints_mismatch ? [`Endpoints differ from the EndpointSlices: ${k.endpoints_mismatch}`] : []),
    ...(k.lease_apiservers.length > 0 ? [`held for an apiserver on the lease reconciler: ${k.lease_apiservers.join(', ')}`] : []),
    ...(k.config_mismatches.length > 0 ? [`plan ${k.plan_digest} differs from live replicas': ${k.config_mismatches.join(', ')}`] : []),
    ...(k.foreign_writes > 0 ? [`rewritten by someone else ${k.foreign_writes} time(s) in the last 120 s`] : []),
    `confirmed: ${k.confirmed_at || 'never'}`,
  ];
  return `${lines.join('\n')}\n${nodes}${k.slices.length > 0 ? slices : 'no EndpointSlice labelled kubernetes.io/service-name=kubernetes\n'}`;
}

function formatExplanation(e: Explanation__Output): string {
  const r = e.request;
  const where = e.destination === 'local' ? 'local apiserver' : `${e.destination === 'peers' ? 'peers' : '503, served by'} ${e.apiservers.join(', ')}`;
  const parsed = r?.resource_request
    ? `resource ${r.group === '' ? 'core' : r.group}/${r.version} ${r.resource}${r.subresource ? `/${r.subresource}` : ''}${r.namespace ? ` in namespace ${r.namespace}` : ''}${r.name ? ` named ${r.name}` : ''}`
    : `not a resource request${r?.error ? ` (${r.error})` : ''}`;
  return `destination: ${where}\nrule:        ${e.rule}\nreason:      ${e.reason}\nrequest:     ${parsed}\n`;
}
