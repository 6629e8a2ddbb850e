// Drains are agreed through the Kubernetes API, not kept by one replica: one
// ConfigMap (by default kube-system/mvproxy-drains) whose data keys are the
// drained apiservers' names (each value says who asked and when). Every
// replica watches it, so a drain asked on any node reaches every replica as
// fast as a watch event. A drain is written as a JSON merge patch of its own
// key: the apiserver applies it atomically, so two replicas draining two
// apiservers at once never overwrite each other (no read-modify-write, hence
// no conflict to retry). An operator may also drain with kubectl alone:
//   kubectl -n kube-system patch configmap mvproxy-drains --type merge -p '{"data":{"cp-1":"by hand"}}'
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../util/log.js';
import { isRecord } from '../util/json.js';
import { Reflector, type ListWatchClient } from './listWatch.js';
import { KubeApiError, kubeRequest } from './kubeRequest.js';

export interface DrainRecordRef {
  namespace: string;
  name: string;
}

export const DEFAULT_DRAIN_RECORD: DrainRecordRef = { namespace: 'kube-system', name: 'mvproxy-drains' };

const WRITE_TIMEOUT_MS = 10_000;

function configMapsPath(ref: DrainRecordRef): string {
  return `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/configmaps`;
}

/** The drained apiservers a ConfigMap names (its data keys, sorted); undefined if it is not one. */
export function drainedNames(configMap: unknown): string[] | undefined {
  if (!isRecord(configMap)) return undefined;
  const data = configMap['data'];
  if (data === undefined || data === null) return [];
  if (!isRecord(data)) return undefined;
  return Object.keys(data).sort();
}

export interface DrainWatcherOptions {
  client: ListWatchClient;
  ref: DrainRecordRef;
  /** Every apiserver drained now, sorted; first called once the record has been read (or found absent). */
  onChange: (draining: string[]) => void;
  logger: Logger;
}

/** Watches the drain record. */
export class DrainWatcher {
  private readonly reflector: Reflector<string[]>;

  constructor(options: DrainWatcherOptions) {
    let last: string | undefined;
    this.reflector = new Reflector<string[]>({
      name: `configmap ${options.ref.namespace}/${options.ref.name}`,
      client: options.client,
      path: configMapsPath(options.ref),
      fieldSelector: `metadata.name=${options.ref.name}`,
      decode: drainedNames,
      onChange: (store) => {
        const draining = [...new Set([...store.values()].flat())].sort();
        const key = JSON.stringify(draining);
        if (key === last) return;
        last = key;
        options.onChange(draining);
      },
      logger: options.logger,
    });
  }

  /** Resolves after the first read attempt (drains arrive through onChange). */
  start(): Promise<void> {
    return this.reflector.start();
  }

  stop(): void {
    this.reflector.stop();
  }
}

/** Writes drains into the record. */
export interface DrainWriter {
  /** Adds (draining) or removes apiserver's key; `note` is the value kept with a drain. */
  set(apiserver: string, draining: boolean, note: string): Promise<void>;
}

export function kubeDrainWriter(kubeConfig: KubeConfig, ref: DrainRecordRef): DrainWriter {
  const patch = (data: Record<string, string | null>): Promise<string> =>
    kubeRequest(kubeConfig, {
      method: 'PATCH',
      path: `${configMapsPath(ref)}/${encodeURIComponent(ref.name)}`,
      body: { data },
      contentType: 'application/merge-patch+json',
      timeoutMs: WRITE_TIMEOUT_MS,
    });
  return {
    async set(apiserver, draining, note) {
      try {
        await patch({ [apiserver]: draining ? note : null });
        return;
      } catch (err) {
        // No record yet: nothing to undrain; create it to drain (then patch, in case another replica created it first).
        if (!(err instanceof KubeApiError && err.statusCode === 404)) throw err;
        if (!draining) return;
      }
      try {
        await kubeRequest(kubeConfig, {
          method: 'POST',
          path: configMapsPath(ref),
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ref.name, namespace: ref.namespace }, data: { [apiserver]: note } },
          timeoutMs: WRITE_TIMEOUT_MS,
        });
      } catch (err) {
        if (!(err instanceof KubeApiError && err.statusCode === 409)) throw err;
        await patch({ [apiserver]: note });
      }
    },
  };
}
