// `GetConfig`: what the control plane pushes to one sidecar, per xDS type, as
// `istioctl proxy-config` and `egctl config envoy-proxy` show it. Pure: from
// the sidecar's snapshot and its ADS state.
import type { SidecarConfig } from '../generated/mvproxy/admin/v1/SidecarConfig.js';
import { PUSH_ORDER, type ResourceTypeUrl, type Snapshot } from '../xds/snapshot.js';
import type { AdsNodeStatus } from './ads.js';

/** Proto3 JSON of a translated resource: bytes (the filter module, the pushed documents) become base64, as in Envoy's config dump. */
export function resourceJson(resource: object): string {
  return JSON.stringify(resource, function (this: Record<string, unknown>, key: string, value: unknown) {
    // JSON.stringify has already applied Buffer's toJSON to `value`; the holder still has the bytes.
    const original = key === '' ? value : this[key];
    return original instanceof Uint8Array ? Buffer.from(original).toString('base64') : value;
  });
}

export function sidecarConfig(sidecar: string, snapshot: Snapshot, ads: AdsNodeStatus | undefined, only?: ResourceTypeUrl): SidecarConfig {
  const connectedHere = (ads?.connected ?? 0) > 0;
  return {
    sidecar,
    types: PUSH_ORDER.filter((url) => only === undefined || url === only).map((url) => {
      const type = snapshot.types[url];
      return {
        type_url: url,
        version: type.version,
        version_acked: connectedHere ? (ads?.types[url]?.versionAcked ?? '') : '',
        resources_json: [...type.resources.values()].map(resourceJson),
      };
    }),
  };
}
