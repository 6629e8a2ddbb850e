// Drains are agreed through the Kubernetes API, not kept by one replica: one
// ConfigMap (by default kube-system/mvproxy-drains) whose data keys are the
// drained apiservers' names (each value says who asked and when). Every
// replica watches it, so a drain asked on any node reaches every replica as
// fast as a watch event; each drain is a merge patch of its own key
// (configMapRecord.ts). An operator may also drain with kubectl alone:
//   kubectl -n kube-system patch configmap mvproxy-drains --type merge -p '{"data":{"cp-1":"by hand"}}'
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../util/log.js';
import type { ListWatchClient } from './listWatch.js';
import { ConfigMapWatcher, patchConfigMapData, type ConfigMapRef } from './configMapRecord.js';

export type DrainRecordRef = ConfigMapRef;

export const DEFAULT_DRAIN_RECORD: DrainRecordRef = { namespace: 'kube-system', name: 'mvproxy-drains' };

export interface DrainWatcherOptions {
  client: ListWatchClient;
  ref: DrainRecordRef;
  /**
   * Every apiserver drained now, sorted, and the note kept with each drain
   * (who asked, when: anyone who may write the record may write it); first
   * called once the record has been read (or found absent).
   */
  onChange: (draining: string[], notes: Readonly<Record<string, string>>) => void;
  logger: Logger;
}

/** Watches the drain record. */
export class DrainWatcher extends ConfigMapWatcher<{ names: string[]; notes: Record<string, string>; toJSON: () => string[] }> {
  constructor(options: DrainWatcherOptions) {
    super({
      ...options,
      // Only the names are the record's meaning (a changed note is no change: toJSON is what the watcher compares).
      decode: (data) => {
        const names = Object.keys(data).sort();
        return { names, notes: { ...data }, toJSON: () => names };
      },
      onChange: ({ names, notes }) => options.onChange(names, notes),
    });
  }
}

/** Writes drains into the record. */
export interface DrainWriter {
  /** Adds (draining) or removes apiserver's key; `note` is the value kept with a drain. */
  set(apiserver: string, draining: boolean, note: string): Promise<void>;
}

export function kubeDrainWriter(kubeConfig: KubeConfig, ref: DrainRecordRef): DrainWriter {
  return { set: (apiserver, draining, note) => patchConfigMapData(kubeConfig, ref, { [apiserver]: draining ? note : null }) };
}
