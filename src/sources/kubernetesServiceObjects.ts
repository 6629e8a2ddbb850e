// The writer of the `kubernetes` Service's Endpoints and EndpointSlices
// (issue 21): reads, lists and replaces them in namespace default through
// the control plane's kubeconfig (kubeRequest.ts). It is an I/O edge like the
// drain and sync record writers beside it: every Kubernetes API client of
// the control plane lives in sources (servers are what sidecars and
// operators connect to, and may not reach the API). What to write, and
// whether to, is decided elsewhere (planner/publishedEndpoints.ts, by
// serve/kubernetesServicePublisher.ts); this module only carries it, with
// optimistic concurrency: a replace names the resourceVersion it read, and a
// conflict (409) or an object deleted meanwhile (404) comes back as
// KubeApiError for the caller to read again. It never creates one (issue 29,
// least privilege): the operator does (docs/operating.md).
import type { KubeConfig } from '@kubernetes/client-node';
import { canonicalObject, CONTENT_DIGEST_ANNOTATION, type ListedSlice, type ObservedObject, type ServiceObjectRef } from '../model/publication.js';
import { KubeApiError } from '../model/status.js';
import { isRecord } from '../util/json.js';
import { kubeRequest } from './kubeRequest.js';

const NAMESPACE = 'default';
const TIMEOUT_MS = 5000;
/** The field manager of mvproxy's writes (managedFields). */
export const FIELD_MANAGER = 'mvproxy-control-plane';
const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
const SERVICE_SELECTOR = 'kubernetes.io/service-name=kubernetes';

export interface ServiceObjectsClient {
  /** The object as it stands, or undefined when it does not exist. */
  read(ref: ServiceObjectRef): Promise<ObservedObject | undefined>;
  /** Every EndpointSlice labelled kubernetes.io/service-name=kubernetes in default (what kube-proxy reads), whoever wrote it. */
  listSlices(): Promise<ListedSlice[]>;
  /** `body.metadata.resourceVersion` is the one read; rejects with KubeApiError 409 when it changed, 404 when the object is gone. */
  replace(ref: ServiceObjectRef, body: Record<string, unknown>): Promise<void>;
}

export function objectsPath(ref: ServiceObjectRef): string {
  return ref.kind === 'Endpoints' ? `/api/v1/namespaces/${NAMESPACE}/endpoints` : `/apis/discovery.k8s.io/v1/namespaces/${NAMESPACE}/endpointslices`;
}

/** The slices of a list answer, reduced as decodeObserved does, with their names and managed-by labels. */
export function decodeSliceList(raw: unknown): ListedSlice[] {
  if (!isRecord(raw) || !Array.isArray(raw['items'])) throw new Error('not an EndpointSliceList');
  return raw['items'].flatMap((item: unknown): ListedSlice[] => {
    const observed = decodeObserved({ kind: 'EndpointSlice', name: '' }, item);
    if (!observed || !isRecord(item) || !isRecord(item['metadata'])) return [];
    const { name, labels } = item['metadata'];
    const managedBy = isRecord(labels) ? labels[MANAGED_BY_LABEL] : undefined;
    return [{ ...observed, name: typeof name === 'string' ? name : '', managedBy: typeof managedBy === 'string' ? managedBy : '' }];
  });
}

/** An object as read, reduced to what mvproxy decides; undefined when the answer is not a Kubernetes object. */
export function decodeObserved(ref: ServiceObjectRef, raw: unknown): ObservedObject | undefined {
  if (!isRecord(raw) || !isRecord(raw['metadata'])) return undefined;
  const metadata = raw['metadata'];
  const annotations = isRecord(metadata['annotations']) ? metadata['annotations'] : {};
  const digest = annotations[CONTENT_DIGEST_ANNOTATION];
  return {
    resourceVersion: typeof metadata['resourceVersion'] === 'string' ? metadata['resourceVersion'] : '',
    canonical: canonicalObject(ref.kind, raw),
    ...(typeof digest === 'string' ? { digest } : {}),
  };
}

export function kubeServiceObjectsClient(kubeConfig: KubeConfig): ServiceObjectsClient {
  const query = { fieldManager: FIELD_MANAGER };
  return {
    async read(ref) {
      let text: string;
      try {
        text = await kubeRequest(kubeConfig, { method: 'GET', path: `${objectsPath(ref)}/${ref.name}`, timeoutMs: TIMEOUT_MS });
      } catch (err) {
        if (err instanceof KubeApiError && err.statusCode === 404) return undefined;
        throw err;
      }
      const observed = decodeObserved(ref, JSON.parse(text) as unknown);
      if (!observed) throw new Error(`GET ${objectsPath(ref)}/${ref.name}: not a Kubernetes object`);
      return observed;
    },
    async listSlices() {
      const path = objectsPath({ kind: 'EndpointSlice', name: '' });
      const text = await kubeRequest(kubeConfig, { method: 'GET', path, query: { labelSelector: SERVICE_SELECTOR }, timeoutMs: TIMEOUT_MS });
      return decodeSliceList(JSON.parse(text) as unknown);
    },
    async replace(ref, body) {
      await kubeRequest(kubeConfig, { method: 'PUT', path: `${objectsPath(ref)}/${ref.name}`, query, body, timeoutMs: TIMEOUT_MS });
    },
  };
}
