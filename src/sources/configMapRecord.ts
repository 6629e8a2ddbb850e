// What replicas agree on lives in ConfigMaps of the Kubernetes API, never in a
// file one replica owns: the drains (drainRecord.ts) and which config each
// sidecar has ACKed (syncRecord.ts). Each data key belongs to one writer at a
// time and is written as a JSON merge patch of that key alone: the apiserver
// applies it atomically, so writers of different keys never overwrite each
// other (no read-modify-write, hence no conflict to retry). Every replica
// watches the whole object.
import { compareStrings } from '../util/order.js';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../util/log.js';
import { isRecord } from '../util/json.js';
import { Reflector, type ListWatchClient } from './listWatch.js';
import { KubeApiError } from '../model/status.js';
import { kubeRequest } from './kubeRequest.js';

export interface ConfigMapRef {
  namespace: string;
  name: string;
}

const WRITE_TIMEOUT_MS = 10_000;

export function configMapsPath(ref: ConfigMapRef): string {
  return `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/configmaps`;
}

/** A ConfigMap's data (empty when it has none); undefined if the object is not one. */
export function configMapData(configMap: unknown): Record<string, string> | undefined {
  if (!isRecord(configMap)) return undefined;
  const data = configMap['data'];
  if (data === undefined || data === null) return {};
  if (!isRecord(data)) return undefined;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(data)) {
    if (typeof value !== 'string') return undefined;
    out[key] = value;
  }
  return out;
}

/** The entries of a record's data that `decode` reads, by key, in key order (one replica's or sidecar's entry per key). */
export function decodeEntries<T>(data: Readonly<Record<string, string>>, decode: (key: string, value: string) => T | undefined): Map<string, T> {
  const out = new Map<string, T>();
  for (const [key, value] of Object.entries(data).sort(([a], [b]) => compareStrings(a, b))) {
    const entry = decode(key, value);
    if (entry !== undefined) out.set(key, entry);
  }
  return out;
}

export interface ConfigMapWatcherOptions<T> {
  client: ListWatchClient;
  ref: ConfigMapRef;
  /** What the data means; called with {} while the ConfigMap does not exist. */
  decode: (data: Readonly<Record<string, string>>) => T;
  /** First called once the record has been read (or found absent), then on every change of decode's result. */
  onChange: (value: T) => void;
  logger: Logger;
}

/** Watches one ConfigMap by name and reports what its data means, once per change of meaning. */
export class ConfigMapWatcher<T> {
  private readonly reflector: Reflector<Record<string, string>>;

  constructor(options: ConfigMapWatcherOptions<T>) {
    let last: string | undefined;
    this.reflector = new Reflector<Record<string, string>>({
      name: `configmap ${options.ref.namespace}/${options.ref.name}`,
      client: options.client,
      path: configMapsPath(options.ref),
      fieldSelector: `metadata.name=${options.ref.name}`,
      decode: configMapData,
      onChange: (store) => {
        const value = options.decode(Object.assign({}, ...store.values()));
        const key = JSON.stringify(value, (_k, v: unknown) => (v instanceof Map ? [...v] : v));
        if (key === last) return;
        last = key;
        options.onChange(value);
      },
      logger: options.logger,
    });
  }

  /** Resolves after the first read attempt (values arrive through onChange). */
  start(): Promise<void> {
    return this.reflector.start();
  }

  stop(): void {
    this.reflector.stop();
  }
}

/**
 * Sets (string) or removes (null) data keys of the ConfigMap with one merge
 * patch, creating the ConfigMap when it does not exist yet and something is
 * to be set (then patching, in case another replica created it first).
 */
export async function patchConfigMapData(kubeConfig: KubeConfig, ref: ConfigMapRef, data: Record<string, string | null>): Promise<void> {
  const patch = (): Promise<string> =>
    kubeRequest(kubeConfig, {
      method: 'PATCH',
      path: `${configMapsPath(ref)}/${encodeURIComponent(ref.name)}`,
      body: { data },
      contentType: 'application/merge-patch+json',
      timeoutMs: WRITE_TIMEOUT_MS,
    });
  try {
    await patch();
    return;
  } catch (err) {
    if (!(err instanceof KubeApiError && err.statusCode === 404)) throw err;
  }
  const initial = Object.fromEntries(Object.entries(data).filter((e): e is [string, string] => e[1] !== null));
  // Removing keys from a ConfigMap that does not exist: nothing to do.
  if (Object.keys(initial).length === 0) return;
  try {
    await kubeRequest(kubeConfig, {
      method: 'POST',
      path: configMapsPath(ref),
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ref.name, namespace: ref.namespace }, data: initial },
      timeoutMs: WRITE_TIMEOUT_MS,
    });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.statusCode === 409)) throw err;
    await patch();
  }
}
