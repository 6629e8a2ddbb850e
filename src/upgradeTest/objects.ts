// The objects the test writes and the paths it uses: pure.
import { CRD_GROUP, GEN_ANNOTATION, RESOURCE_SPECS, TEST_NAMESPACE, type ResourceSpec } from './observations.js';

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
