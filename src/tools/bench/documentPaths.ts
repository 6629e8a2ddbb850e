// Every path a merged discovery document takes through the sidecar, each
// measured against its floor, the minimal Envoy (bareEnvoy.ts) in front of
// the same request of the same apiserver (kas-a), in the same rounds, with
// the upstream connections each Envoy opened (envoyCounters.ts):
//   - revalidated: `/apis` with the exact aggregated Accept (bench.ts
//     measures it beside upstream and direct; its counts are taken here);
//   - `/openapi/v3`, the OpenAPI v3 index (its Accept names no aggregated
//     format, so the filter cannot revalidate: the apiserver answers 200);
//   - doubtful: `/apis` with an Accept whose negotiated format the filter
//     cannot be sure of (envoy/filters/assembly/mediaRanges.ts
//     revalidationFormat: a q-valued list whose aggregated range comes second
//     but outranks the first), so it asks without an ETag and gets 200;
//   - changed: the local document changed since the sidecar saw it
//     (changedDocument.ts).
import { readFileSync } from 'node:fs';
import { AGGREGATED_DISCOVERY_JSON, AGGREGATED_DISCOVERY_PROTOBUF } from '../../entry/discovery.js';
import { httpsRequest, type TlsFiles } from '../../util/https.js';
import type { BareEnvoy } from './bareEnvoy.js';
import { type ChangedDocumentMeasurement, type ChangedSide, measureChangedDocument } from './changedDocument.js';
import { type ConnectionCount, type CountedEnvoy, describeConnections, withConnectionCounts } from './envoyCounters.js';
import type { LoadTarget } from './load.js';
import { measureSides, type SidesConfig, type SidesMeasurement } from './sides.js';

/** A client that would take plain JSON but prefers aggregated discovery by quality: the aggregated range comes second. */
export const DOUBTFUL_ACCEPT_JSON = `application/json;q=0.9,${AGGREGATED_DISCOVERY_JSON}`;
export const DOUBTFUL_ACCEPT_PROTOBUF = `application/json;q=0.9,${AGGREGATED_DISCOVERY_PROTOBUF}`;
/** What kubectl sends for the OpenAPI v3 index. */
export const OPENAPI_ACCEPT = 'application/json';
export const OPENAPI_INDEX = '/openapi/v3';

/** A measurement of `measureSides`, with the upstream connections each Envoy opened meanwhile. */
export type CountedMeasurement = SidesMeasurement & { connections: Record<string, ConnectionCount> };

export interface DocumentPathsMeasurement {
  /** How the Accept of each path reads, as sent. */
  accept: Record<string, string>;
  openapiIndex: CountedMeasurement;
  apisDoubtfulJson: CountedMeasurement;
  apisDoubtfulProtobuf: CountedMeasurement;
  apisChanged: ChangedDocumentMeasurement;
}

export interface DocumentPathsOptions {
  cfg: SidesConfig;
  /** mvproxy's sidecar of kas-a. */
  sidecar: { url: string; adminSocket: string; listener: string; pid?: number; description: string };
  bare: BareEnvoy;
  bareDescription: string;
  /** A load target on `base` + `path` with this Accept, and the token. */
  target: (base: string, path: string, accept: string) => LoadTarget;
  /** kas-a directly, for the changed path's CRDs and polls. */
  direct: string;
  tls: TlsFiles;
  token: string;
  changedSamples: number;
  burst: number;
  /** The control plane stopped and started again around the changed path. */
  pauseControlPlane: () => void;
  resumeControlPlane: () => void;
}

/** The two Envoys whose counters every path reads: the sidecar (the candidate) and the minimal Envoy (the floor). */
export function countedEnvoys(o: Pick<DocumentPathsOptions, 'sidecar' | 'bare' | 'bareDescription'>): [ChangedSide, ChangedSide] {
  return [
    { side: 'mvproxy', adminSocket: o.sidecar.adminSocket, listener: o.sidecar.listener, url: o.sidecar.url, description: o.sidecar.description },
    { side: 'minimal', adminSocket: o.bare.adminSocket, listener: o.bare.listener, url: o.bare.url, description: o.bareDescription },
  ];
}

/** `measureSides` between two readings of both Envoys' counters. */
export async function measureCounted(
  what: string,
  sides: Parameters<typeof measureSides>[1],
  cfg: SidesConfig,
  envoys: readonly CountedEnvoy[],
): Promise<CountedMeasurement> {
  const { result, connections } = await withConnectionCounts(envoys, () => measureSides(what, sides, 'mvproxy', cfg));
  cfg.progress(describeConnections(what, connections));
  return { ...result, connections };
}

export async function measureDocumentPaths(o: DocumentPathsOptions): Promise<DocumentPathsMeasurement> {
  const envoys = countedEnvoys(o);
  const two = (path: string, accept: string) => [
    {
      name: 'mvproxy',
      description: o.sidecar.description,
      target: o.target(o.sidecar.url, path, accept),
      ...(o.sidecar.pid === undefined ? {} : { pid: o.sidecar.pid }),
    },
    { name: 'minimal', description: o.bareDescription, target: o.target(o.bare.url, path, accept), ...(o.bare.pid === undefined ? {} : { pid: o.bare.pid }) },
  ];
  await checkAnswers(o);
  const openapiIndex = await measureCounted('the OpenAPI v3 index', two(OPENAPI_INDEX, OPENAPI_ACCEPT), o.cfg, envoys);
  const apisDoubtfulJson = await measureCounted('/apis, doubtful Accept (JSON)', two('/apis', DOUBTFUL_ACCEPT_JSON), o.cfg, envoys);
  const apisDoubtfulProtobuf = await measureCounted('/apis, doubtful Accept (protobuf)', two('/apis', DOUBTFUL_ACCEPT_PROTOBUF), o.cfg, envoys);
  o.cfg.progress('pausing the control plane for the changed-document path ...');
  o.pauseControlPlane();
  let apisChanged: ChangedDocumentMeasurement;
  try {
    apisChanged = await measureChangedDocument({
      samples: o.changedSamples,
      burst: o.burst,
      sides: envoys,
      direct: o.direct,
      tls: o.tls,
      ca: readFileSync(o.tls.ca),
      token: o.token,
      progress: o.cfg.progress,
    });
  } finally {
    o.resumeControlPlane();
  }
  o.cfg.progress(describeConnections('/apis, the local document changed', apisChanged.connections));
  return {
    accept: {
      openapiIndex: OPENAPI_ACCEPT,
      apisDoubtfulJson: DOUBTFUL_ACCEPT_JSON,
      apisDoubtfulProtobuf: DOUBTFUL_ACCEPT_PROTOBUF,
      apisChanged: `${AGGREGATED_DISCOVERY_JSON} or ${AGGREGATED_DISCOVERY_PROTOBUF}`,
    },
    openapiIndex,
    apisDoubtfulJson,
    apisDoubtfulProtobuf,
    apisChanged,
  };
}

/** Every side answers each path right before it is timed: 200 in the format asked for (a fast wrong answer is no figure). */
async function checkAnswers(o: DocumentPathsOptions): Promise<void> {
  const cases: Array<[string, string, RegExp]> = [
    [OPENAPI_INDEX, OPENAPI_ACCEPT, /^/],
    ['/apis', DOUBTFUL_ACCEPT_JSON, /^application\/json;g=apidiscovery\.k8s\.io;v=v2;as=APIGroupDiscoveryList/],
    ['/apis', DOUBTFUL_ACCEPT_PROTOBUF, /^application\/vnd\.kubernetes\.protobuf;g=apidiscovery\.k8s\.io;v=v2;as=APIGroupDiscoveryList/],
  ];
  for (const base of [o.sidecar.url, o.bare.url]) {
    for (const [path, accept, contentType] of cases) {
      const res = await httpsRequest(base + path, o.tls, { headers: { authorization: `Bearer ${o.token}`, accept } });
      const type = String(res.headers['content-type'] ?? '');
      if (res.status !== 200 || !contentType.test(type)) throw new Error(`${base}${path} (Accept ${accept}): ${res.status} ${type} ${res.body.slice(0, 200)}`);
    }
  }
}
