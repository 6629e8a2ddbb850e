// The objects the test writes and the paths it uses: pure (no I/O; new keys and UIDs are random).
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { CRD_GROUP, GEN_ANNOTATION, RESOURCE_SPECS, STORY_RESOURCE_SPECS, TEST_NAMESPACE, type ResourceSpec, type StoryResourceKey } from './observations.js';

export function collectionPath(s: ResourceSpec): string {
  const base = s.group === '' ? `/api/${s.version}` : `/apis/${s.group}/${s.version}`;
  return s.namespaced ? `${base}/namespaces/${TEST_NAMESPACE}/${s.key}` : `${base}/${s.key}`;
}

export function objectPath(s: ResourceSpec, name: string): string {
  return `${collectionPath(s)}/${name}`;
}

const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';

/** A new object of `resource` carrying generation `gen`. No controllers run in the sandbox: Deployments and Jobs stay objects. */
export function newObject(s: ResourceSpec, name: string, gen: number): Record<string, unknown> {
  const metadata = { name, annotations: { [GEN_ANNOTATION]: String(gen) }, labels: { app: name } };
  const apiVersion = s.group === '' ? s.version : `${s.group}/${s.version}`;
  const head = { apiVersion, kind: s.kind, metadata };
  const podSpec = (restartPolicy: string) => ({ restartPolicy, containers: [{ name: 'c', image: PAUSE_IMAGE }] });
  switch (s.key) {
    case 'configmaps':
      return { ...head, data: { gen: String(gen) } };
    case 'deployments':
      return {
        ...head,
        spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: podSpec('Always') } },
      };
    case 'jobs':
      return { ...head, spec: { template: { spec: podSpec('Never') } } };
    case 'storageversionmigrations':
      return { ...head, spec: { resource: { group: 'apps', resource: 'deployments' } } };
    case 'mutatingadmissionpolicies':
      // Bound to nothing, so it mutates nothing; it matches only a resource no one serves.
      return {
        ...head,
        spec: {
          matchConstraints: {
            resourceRules: [{ apiGroups: [CRD_GROUP], apiVersions: ['v1'], operations: ['CREATE'], resources: ['nothings'] }],
          },
          failurePolicy: 'Ignore',
          reinvocationPolicy: 'Never',
          mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{}' } }],
        },
      };
    case 'widgets':
      return { ...head, spec: { gen } };
  }
}

/** The update every write makes: a JSON merge patch of the generation annotation (no read-modify-write, so no conflicts). */
export function genPatch(gen: number): Record<string, unknown> {
  return { metadata: { annotations: { [GEN_ANNOTATION]: String(gen) } } };
}

export const MERGE_PATCH = 'application/merge-patch+json';

/** The CustomResourceDefinition of `widgets`: one version, served and stored, any content. */
export function widgetCrd(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `widgets.${RESOURCE_SPECS.widgets.group}` },
    spec: {
      group: RESOURCE_SPECS.widgets.group,
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  };
}

/** Reads `metadata.resourceVersion` and the generation annotation of an object's JSON, when it is one. */
export function readMeta(body: string): { name?: string; rv?: string; gen?: number } {
  try {
    const parsed = JSON.parse(body) as { metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> } };
    const gen = parsed.metadata?.annotations?.[GEN_ANNOTATION];
    return { name: parsed.metadata?.name, rv: parsed.metadata?.resourceVersion, gen: gen === undefined ? undefined : Number(gen) };
  } catch {
    return {};
  }
}

/** The groups an /apis answer lists, aggregated (APIGroupDiscoveryList) or legacy (APIGroupList). */
export function discoveryGroups(body: string): string[] | undefined {
  try {
    const doc = JSON.parse(body) as { items?: Array<{ metadata?: { name?: string } }>; groups?: Array<{ name?: string }> };
    const names = doc.items ? doc.items.map((i) => i.metadata?.name) : doc.groups?.map((g) => g.name);
    return names?.filter((n): n is string => typeof n === 'string');
  } catch {
    return undefined;
  }
}

/** The path of `resource` (a story resource) in `namespace`, or of one object of it. */
export function storyPath(resource: StoryResourceKey, namespace: string, name?: string): string {
  const s = STORY_RESOURCE_SPECS[resource];
  return `/apis/${s.group}/${s.version}/namespaces/${namespace}/${resource}${name === undefined ? '' : `/${name}`}`;
}

/** A new object of a story resource, valid for creation by an administrator. */
export function newStoryObject(resource: StoryResourceKey, name: string): Record<string, unknown> {
  switch (resource) {
    case 'podcertificaterequests':
      return podCertificateRequest(name);
  }
}

/** A signer outside kubernetes.io: nothing in the cluster acts on the requests. */
export const STORY_SIGNER = 'upgradetest.mvproxy.dev/signer';

/**
 * A certificates.k8s.io/v1 PodCertificateRequest for a pod that does not
 * exist: kube-apiserver only validates it (v1.37's
 * ValidatePodCertificateRequestCreate: names and UIDs well formed,
 * maxExpirationSeconds within [3600, 7862400], and spec.stubPKCS10Request a
 * PKCS#10 request with an Ed25519, ECDSA or RSA key whose signature verifies).
 * v1 has no pkixPublicKey/proofOfPossession (v1beta1's): the key goes in the
 * stub request, empty as kubelet's.
 */
export function podCertificateRequest(name: string): Record<string, unknown> {
  const podUID = randomUUID();
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'PodCertificateRequest',
    metadata: { name },
    spec: {
      signerName: STORY_SIGNER,
      podName: `${name}-pod`,
      podUID,
      serviceAccountName: 'default',
      serviceAccountUID: randomUUID(),
      nodeName: 'story-node',
      nodeUID: randomUUID(),
      maxExpirationSeconds: 86400,
      stubPKCS10Request: stubPkcs10Request().toString('base64'),
    },
  };
}

/** DER: a tag, its length, its content. */
function der(tag: number, content: Buffer): Buffer {
  const n = content.length;
  const length = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, content]);
}

/** id-Ed25519 (RFC 8410): 1.3.101.112. */
const ED25519_ALGORITHM = der(0x30, der(0x06, Buffer.from([0x2b, 0x65, 0x70])));

/** An empty PKCS#10 certification request (RFC 2986: version 0, no subject, no attributes) for a new Ed25519 key, signed with it. */
export function stubPkcs10Request(): Buffer {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const info = der(
    0x30,
    Buffer.concat([der(0x02, Buffer.from([0])), der(0x30, Buffer.alloc(0)), publicKey.export({ type: 'spki', format: 'der' }), der(0xa0, Buffer.alloc(0))]),
  );
  const signature = sign(null, info, privateKey);
  return der(0x30, Buffer.concat([info, ED25519_ALGORITHM, der(0x03, Buffer.concat([Buffer.from([0]), signature]))]));
}
