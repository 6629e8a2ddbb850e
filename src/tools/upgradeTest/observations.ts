// What the upgrade test sends and what it sees: the resources it exercises
// and the plain records the load generator writes. Pure data, shared by the
// I/O edge (load.ts, run.ts) and the pure judges (ledger, timeline, outcomes).

/** Every resource a run may put under load (a version pair picks its own: pairs.ts), one per API surface the issue names. */
export const RESOURCES = ['configmaps', 'deployments', 'jobs', 'storageversionmigrations', 'mutatingadmissionpolicies', 'widgets'] as const;
export type ResourceKey = (typeof RESOURCES)[number];

export interface ResourceSpec {
  key: ResourceKey;
  /** '' for the core group. */
  group: string;
  version: string;
  namespaced: boolean;
  kind: string;
}

/** The CRD the test creates at start: served by every apiserver version from shared storage. */
export const CRD_GROUP = 'upgradetest.mvproxy.dev';

export const RESOURCE_SPECS: Readonly<Record<ResourceKey, ResourceSpec>> = {
  configmaps: { key: 'configmaps', group: '', version: 'v1', namespaced: true, kind: 'ConfigMap' },
  deployments: { key: 'deployments', group: 'apps', version: 'v1', namespaced: true, kind: 'Deployment' },
  jobs: { key: 'jobs', group: 'batch', version: 'v1', namespaced: true, kind: 'Job' },
  storageversionmigrations: {
    key: 'storageversionmigrations',
    group: 'storagemigration.k8s.io',
    version: 'v1',
    namespaced: false,
    kind: 'StorageVersionMigration',
  },
  mutatingadmissionpolicies: {
    key: 'mutatingadmissionpolicies',
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    namespaced: false,
    kind: 'MutatingAdmissionPolicy',
  },
  widgets: { key: 'widgets', group: CRD_GROUP, version: 'v1', namespaced: true, kind: 'Widget' },
};

/**
 * Namespaced resources only the newer side of a pair serves, for the stories
 * of KEP-4020's two victims (stories.ts): the namespace controller and the
 * garbage collector. Not under load: the stories create and read them.
 */
export const STORY_RESOURCES = ['podcertificaterequests'] as const;
export type StoryResourceKey = (typeof STORY_RESOURCES)[number];

export const STORY_RESOURCE_SPECS: Readonly<Record<StoryResourceKey, { group: string; version: string; kind: string }>> = {
  podcertificaterequests: { group: 'certificates.k8s.io', version: 'v1', kind: 'PodCertificateRequest' },
};

/** The namespace every namespaced object of the test lives in. */
export const TEST_NAMESPACE = 'upgrade-test';

/** Annotation carrying each write's generation number: what "last acknowledged content" is compared on. */
export const GEN_ANNOTATION = 'upgrade-test.mvproxy.dev/gen';

export type Verb = 'get' | 'list' | 'create' | 'update' | 'delete' | 'watch' | 'discovery';
export type ClientKind = 'token' | 'cert';
/** Who sent a request: a client of the load balancer (by credential), or a pod through the `kubernetes` Service (podLoad.ts). */
export type RecordClient = ClientKind | 'pod';

/** One request and its answer. Times are milliseconds since the mode's start. */
export interface RequestRecord {
  t0: number;
  t1: number;
  /** The entry point the load balancer chose (apiserver name; in mode mvproxy its sidecar), or for a pod the node whose endpoint it dialled. */
  entry: string;
  client: RecordClient;
  verb: Verb;
  /** The resource, or for discovery the path (`/api`, `/apis`). */
  resource: ResourceKey | '/api' | '/apis';
  name?: string;
  /** HTTP status; 0 when the request failed in transport (reset, refused, timeout). */
  status: number;
  retryAfter: boolean;
  /** The first bytes of a failure's body or the transport error, for evidence. */
  detail?: string;
  /** Discovery only: the API groups the answer listed (aggregated /apis). */
  groups?: string[];
}

/** A write as the ledger keeps it. `ambiguous`: no definite answer (transport error, 5xx), it may or may not have happened. */
export type WriteOutcome = 'ack' | 'rejected' | 'ambiguous';

export interface WriteRecord {
  resource: ResourceKey;
  name: string;
  verb: 'create' | 'update' | 'delete';
  t0: number;
  t1: number;
  outcome: WriteOutcome;
  /** The content generation written (create, update). */
  gen?: number;
  /** The resourceVersion the acknowledgement carried (create, update). */
  rv?: string;
}

/** A watch event as a watcher received it. */
export interface WatchEventRecord {
  resource: ResourceKey;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  name: string;
  rv: string;
  t: number;
}

/** An operator step: one apiserver taken out of service, replaced by another version, put back. */
export interface StepRecord {
  apiserver: string;
  from: string;
  to: string;
  /** Operator begins taking it out (out of service from here). */
  outAt: number;
  /** The new version's /readyz answered 200 (the sandbox's start returned). */
  readyAt: number;
  /** Back in rotation (in service again from here): the health check's `rise` passes after the operator put it back. */
  inAt: number;
  /** A step that is no upgrade or rollback (a restart at the same version): why it was made. */
  purpose?: string;
}

/** A watch whose stream broke after its 200 (not cut by the load balancer): its client saw a failure. */
export interface BrokenWatch {
  t0: number;
  /** When it broke. */
  t: number;
  entry: string;
  resource: ResourceKey;
  error: string;
}

/** An object as read back at a check: its generation annotation. */
export type Snapshot = Partial<Record<ResourceKey, Map<string, number | undefined>>>;

export function classifyWrite(status: number): WriteOutcome {
  if (status >= 200 && status < 300) return 'ack';
  if (status === 0 || status >= 500) return 'ambiguous';
  return 'rejected';
}
