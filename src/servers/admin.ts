// The operator API (proto/mvproxy/admin/v1/admin.proto): status, explain and
// drain over gRPC, with server reflection so grpcurl works without the proto.
// The control plane implements AdminBackend; this module only checks input
// and maps answers and errors to gRPC.
import * as grpc from '@grpc/grpc-js';
import { KubeApiError } from '../model/status.js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import type { Logger } from '../util/log.js';
import { protoDir } from '../util/protoRoot.js';
import type { ProtoGrpcType } from '../generated/admin.js';
import type { AdminHandlers } from '../generated/mvproxy/admin/v1/Admin.js';
import type { Status } from '../generated/mvproxy/admin/v1/Status.js';
import type { Explanation } from '../generated/mvproxy/admin/v1/Explanation.js';
import { formatHost, type ClusterModel } from '../model/cluster.js';
import { standingIn, type Standings } from '../model/liveness.js';
import { resourceRoutesOf, type SidecarPlan } from '../planner/plan.js';
import type { RequestExplanation } from '../planner/explain.js';
import { isResourceTypeUrl, PUSH_ORDER, type ResourceTypeUrl } from '../xds/snapshot.js';
import type { SidecarConfig } from '../generated/mvproxy/admin/v1/SidecarConfig.js';
import type { AdsNodeStatus } from './ads.js';
import type { SidecarSyncReport } from '../model/syncReport.js';
import { compareStrings } from '../util/order.js';
import type { Event } from '../generated/mvproxy/admin/v1/Event.js';
import type { JournalEntry } from '../model/events.js';
import type { KubernetesServiceStatus } from '../generated/mvproxy/admin/v1/KubernetesServiceStatus.js';

const ADMIN_PROTO = 'mvproxy/admin/v1/admin.proto';
/** Longer paths are not requests an apiserver would accept either. */
const MAX_PATH_LENGTH = 8192;

export type { Status as AdminStatus } from '../generated/mvproxy/admin/v1/Status.js';

/** What the admin API asks of the control plane. */
export interface AdminBackend {
  status(): Status;
  /** Throws UnknownApiserverError for a sidecar that is not declared, NotPlannedYetError before the first plan. */
  explain(sidecar: string, path: string, peerProxied: boolean): RequestExplanation;
  /**
   * Both record the change in the drain record and resolve with every
   * apiserver being drained afterwards, sorted; both reject with
   * UnknownApiserverError, NotPlannedYetError (still starting) or the
   * Kubernetes API's refusal.
   */
  drain(apiserver: string): Promise<string[]>;
  undrain(apiserver: string): Promise<string[]>;
  /** The kept events, oldest first (the newest `limit` of them when given). */
  recentEvents(limit?: number): JournalEntry[];
  /** Calls `listener` with each new event until the returned function is called. */
  followEvents(listener: (entry: JournalEntry) => void): () => void;
  /** What is pushed to the sidecar, all types or one; throws as explain does. */
  pushedConfig(sidecar: string, only?: ResourceTypeUrl): SidecarConfig;
}

/** The control plane has not observed the cluster yet: nothing to explain. */
export class NotPlannedYetError extends Error {
  constructor() {
    super('the control plane has no plan yet (it is still reading the cluster); retry shortly');
    this.name = 'NotPlannedYetError';
  }
}

export class UnknownApiserverError extends Error {
  constructor(name: string, known: readonly string[]) {
    super(`no apiserver named ${JSON.stringify(name)} (declared: ${known.join(', ')})`);
    this.name = 'UnknownApiserverError';
  }
}

let definition: protoLoader.PackageDefinition | undefined;

/** The admin API's package definition (keepCase, defaults filled in for clients). */
function adminPackageDefinition(): protoLoader.PackageDefinition {
  definition ??= protoLoader.loadSync(ADMIN_PROTO, { keepCase: true, longs: String, enums: String, defaults: true, includeDirs: [protoDir(ADMIN_PROTO)] });
  return definition;
}

export function adminGrpc(): ProtoGrpcType {
  return grpc.loadPackageDefinition(adminPackageDefinition()) as unknown as ProtoGrpcType;
}

export function addAdminService(server: grpc.Server, backend: AdminBackend, logger: Logger): void {
  const fail = (code: grpc.status, details: string): grpc.ServerErrorResponse => ({ name: 'AdminError', message: details, code, details });
  // Maps the backend's known failures to gRPC codes; anything else is a bug, reported as INTERNAL.
  const failure = (err: unknown): grpc.ServerErrorResponse => {
    if (err instanceof UnknownApiserverError) return fail(grpc.status.NOT_FOUND, err.message);
    if (err instanceof NotPlannedYetError) return fail(grpc.status.UNAVAILABLE, err.message);
    if (err instanceof KubeApiError) return fail(grpc.status.UNAVAILABLE, `the drain record could not be written: ${err.message}`);
    logger.error({ err }, 'admin request failed');
    return fail(grpc.status.INTERNAL, `internal error: ${(err as Error).message}`);
  };
  const answer = <T>(callback: grpc.sendUnaryData<T>, produce: () => T): void => {
    let value: T;
    try {
      value = produce();
    } catch (err) {
      callback(failure(err));
      return;
    }
    callback(null, value);
  };
  const drainCall =
    (verb: 'drain' | 'undrain'): AdminHandlers['Drain'] =>
    (call, callback) => {
      const apiserver = call.request.apiserver ?? '';
      if (apiserver === '') return callback(fail(grpc.status.INVALID_ARGUMENT, 'apiserver: required'));
      // A backend that throws at once is answered like one that rejects.
      Promise.resolve()
        .then(() => backend[verb](apiserver))
        .then(
          (draining) => {
            logger.info({ apiserver, draining }, verb === 'drain' ? 'apiserver draining' : 'apiserver drain ended');
            callback(null, { draining });
          },
          (err: unknown) => callback(failure(err)),
        );
    };
  const handlers: AdminHandlers = {
    GetStatus: (_call, callback) => answer(callback, () => backend.status()),
    Explain: (call, callback) => {
      const { sidecar = '', path = '', peer_proxied: peerProxied = false } = call.request;
      const problem = sidecar === '' ? 'sidecar: required' : explainPathProblem(path);
      if (problem !== undefined) return callback(fail(grpc.status.INVALID_ARGUMENT, problem));
      answer(callback, () => explanationMessage(backend.explain(sidecar, path, peerProxied)));
    },
    Drain: drainCall('drain'),
    Undrain: drainCall('undrain'),
    WatchEvents: (call) => {
      const { follow = false, limit = 0 } = call.request;
      // Followed from before the recent ones are read, so none falls between; sent in order, each once.
      const pending: JournalEntry[] = [];
      let replayed = false;
      let last = 0;
      const send = (entry: JournalEntry): void => {
        if (entry.sequence <= last) return;
        last = entry.sequence;
        call.write(eventMessage(entry));
      };
      const stop = follow ? backend.followEvents((entry) => (replayed ? send(entry) : pending.push(entry))) : undefined;
      for (const entry of backend.recentEvents(limit > 0 ? limit : undefined)) send(entry);
      for (const entry of pending) send(entry);
      replayed = true;
      if (!stop) return call.end();
      const end = (): void => stop();
      call.on('cancelled', end);
      call.on('close', end);
      call.on('error', end);
    },
    GetConfig: (call, callback) => {
      const { sidecar = '', type_url: typeUrl = '' } = call.request;
      if (sidecar === '') return callback(fail(grpc.status.INVALID_ARGUMENT, 'sidecar: required'));
      if (typeUrl !== '' && !isResourceTypeUrl(typeUrl))
        return callback(
          fail(grpc.status.INVALID_ARGUMENT, `type_url: one of ${PUSH_ORDER.join(', ')}, or empty for all; got ${JSON.stringify(typeUrl.slice(0, 200))}`),
        );
      answer(callback, () => backend.pushedConfig(sidecar, typeUrl === '' ? undefined : typeUrl));
    },
  };
  server.addService(adminGrpc().mvproxy.admin.v1.Admin.service, handlers);
  new ReflectionService(adminPackageDefinition()).addToServer(server);
}

function explainPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return `path: must start with "/", got ${JSON.stringify(path.slice(0, 80))}`;
  if (path.length > MAX_PATH_LENGTH) return `path: longer than ${MAX_PATH_LENGTH} characters`;
  // Control characters cannot appear in a request line; Envoy would reject the request.
  if ([...path].some((c) => c.charCodeAt(0) <= 0x20 || c.charCodeAt(0) === 0x7f)) return 'path: contains whitespace or control characters';
  return undefined;
}

export function eventMessage(e: JournalEntry): Event {
  return { sequence: String(e.sequence), time: new Date(e.at).toISOString(), kind: e.kind, subject: e.subject, message: e.message };
}

function explanationMessage(e: RequestExplanation): Explanation {
  const { request: r, destination } = e;
  return {
    destination: destination.kind,
    apiservers: destination.kind === 'peers' ? destination.peers : destination.kind === 'unavailable' ? destination.servedBy : [],
    reason: e.reason,
    rule: e.rule,
    request: {
      resource_request: r.isResourceRequest,
      group: r.group,
      version: r.version,
      resource: r.resource ?? '',
      subresource: r.subresource ?? '',
      namespace: r.namespace ?? '',
      name: r.name ?? '',
      error: r.error ?? '',
    },
  };
}

export interface StatusInput {
  model: ClusterModel;
  plans: readonly SidecarPlan[];
  ads: Record<string, AdsNodeStatus>;
  draining: ReadonlySet<string>;
  /** Every apiserver's standing, as the reconcile that made `plans` computed it (model/liveness.ts). */
  standings: Standings;
  /** This replica's name, and what the others reported of the sidecars streaming from them (model/syncReport.ts). */
  replica: string;
  reports: ReadonlyMap<string, SidecarSyncReport>;
  /** The `kubernetes` Service's publisher's own status; absent while publishing is off. */
  kubernetesService?: KubernetesServiceStatus;
}

/** The status while publishing is off (kubernetesService.publish unset). */
export const PUBLISHING_OFF: KubernetesServiceStatus = {
  enabled: false,
  state: 'off',
  message: 'kubernetesService.publish is not set: the apiservers publish themselves (their endpoint reconciler)',
};

/** The GetStatus answer, from what the control plane holds. Pure. */
export function adminStatus(input: StatusInput): Status {
  const { model, plans, ads, draining, standings, replica, reports } = input;
  const apiservers = [...model.apiservers]
    .sort((a, b) => compareStrings(a.endpoint.name, b.endpoint.name))
    .map((a) => ({
      name: a.endpoint.name,
      hostname: a.endpoint.hostname,
      address: formatHost(a.endpoint.address),
      standing: standingIn(standings, a.endpoint.name),
      reachable: a.reachable,
      lease_holder_identity: a.lease?.holderIdentity ?? '',
      served_resources: a.servedSet.length,
      group_versions: [...new Set(a.servedSet.map((s) => (s.group === '' ? s.version : `${s.group}/${s.version}`)))].sort(compareStrings),
      draining: draining.has(a.endpoint.name),
      ready: a.ready === undefined ? '' : a.ready ? 'yes' : 'no',
      version: a.version ?? '',
    }));
  const sidecars = plans.map((plan) => {
    // The Envoys here that run this sidecar's config, the one named after it first.
    const envoys = Object.entries(ads)
      .filter(([, s]) => s.sidecar === plan.node && s.connected > 0)
      .sort(([a], [b]) => (a === plan.node ? -1 : b === plan.node ? 1 : compareStrings(a, b)));
    const node = envoys[0]?.[1] ?? ads[plan.node];
    const here = envoys.length > 0;
    // A sidecar that streams from another replica: that replica's word on what it ACKed.
    const report = here ? undefined : reports.get(plan.node);
    const elsewhere = report && report.replica !== replica ? report : undefined;
    const xds = PUSH_ORDER.map((url: ResourceTypeUrl) => {
      const type = node?.types[url];
      return {
        type_url: url,
        version_desired: node?.snapshot?.[url] ?? '',
        version_sent: elsewhere ? '' : (type?.versionSent ?? ''),
        version_acked: elsewhere ? (elsewhere.acked[url] ?? '') : (type?.versionAcked ?? ''),
        last_nack: type?.lastNack?.message ?? '',
      };
    });
    const connected = here || elsewhere !== undefined;
    const behind = envoys.filter(([, s]) => !ackedSnapshot(s)).map(([id]) => id);
    return {
      node: plan.node,
      connected,
      in_sync: connected && behind.length === 0 && xds.every((t) => t.version_desired !== '' && t.version_acked === t.version_desired),
      rerouted_routes: resourceRoutesOf(plan).filter((r) => r.action.kind === 'peers').length,
      unavailable_routes: resourceRoutesOf(plan).filter((r) => r.action.kind === 'unavailable').length,
      xds,
      replica: elsewhere?.replica ?? '',
      reported_at: elsewhere?.at ?? '',
      envoys: envoys.length,
      envoys_behind: behind,
    };
  });
  return { apiservers, sidecars, kubernetes_service: input.kubernetesService ?? PUBLISHING_OFF };
}

/** How a sidecar is connected, for people: "no", "yes", "yes (3 Envoys)" or "via <replica>". */
export function connectionText(s: { connected?: boolean; replica?: string; envoys?: number }): string {
  if (!s.connected) return 'no';
  // Streaming from another replica: as that replica last reported it.
  if (s.replica) return `via ${s.replica}`;
  return (s.envoys ?? 0) > 1 ? `yes (${s.envoys} Envoys)` : 'yes';
}

/** The node has ACKed every type of its sidecar's current snapshot. */
function ackedSnapshot(node: AdsNodeStatus): boolean {
  return PUSH_ORDER.every((url) => node.snapshot?.[url] !== undefined && node.types[url]?.versionAcked === node.snapshot[url]);
}
