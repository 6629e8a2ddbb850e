// Entry module (docs/architecture.md, "The tools' way in"): the control plane
// as the tools run it: the `mvproxy` command they start (`mvproxy serve`, the
// command an operator runs), how a replica is configured and started
// (deploy/replica.ts, as kubeadm's static pods do), the kubeadm patches the
// sandbox renders its apiservers with (deploy/kubeadm.ts), what it loads, and its
// ext_proc service alone, for the bench.
import * as grpc from '@grpc/grpc-js';
import { fileURLToPath } from 'node:url';
import type { ExternalProcessorClient } from '../generated/envoy/service/ext_proc/v3/ExternalProcessor.js';
import { createMetrics } from '../metrics.js';
import { ExtProcServer } from '../servers/extProc.js';
import { createGrpcServer, listenUnix, shutdownGrpcServer } from '../servers/grpcListen.js';
import { DOCUMENT_PUSH_BUDGET_BYTES as PUSH_BUDGET } from '../translator/translator.js';
import { EXT_PROC_DOCUMENT_METADATA, EXT_PROC_NODE_METADATA } from '../translator/names.js';
import { silentLogger } from '../util/log.js';
import { envoyGrpc, envoyRoot } from '../xds/protos.js';

export {
  REPLICA_ENV,
  REPLICA_NODE_FLAGS,
  publishingSetting,
  replicaServeConfig,
  serveArgs,
  sidecarControlPlanes,
  type NodeApiserver,
  type ReplicaTuning,
} from '../deploy/replica.js';
export { apiserverPatch, endpointReconcilerPatch, kubeadmLayout } from '../deploy/kubeadm.js';
export { kubernetesServiceIp } from '../deploy/serviceRange.js';
export { serviceObjectsForConfig } from '../serve/kubernetesServiceManifest.js';

/** The built `mvproxy` command (dist/src/cli/main.js), run with node: `mvproxy serve --config FILE`. */
export const MVPROXY_CLI: string = fileURLToPath(new URL('../cli/main.js', import.meta.url));

/**
 * Loads what a replica loads before it watches anything (the control plane's
 * modules, the Kubernetes client, the Envoy API) and does nothing more: the
 * floor of a replica's memory, which the fan-out bench measures.
 */
export async function loadReplicaModules(): Promise<void> {
  await Promise.all([import('../serve/controlPlane.js'), import('@kubernetes/client-node')]);
  envoyRoot();
}

/**
 * The size (bytes) of one document's encoded set (the peer part of `/api`,
 * `/apis` or the OpenAPI index, xds/documentSet.ts) above which that document is answered
 * over ext_proc instead of pushed into its document filter: a limit the
 * fan-out bench reports.
 */
export const DOCUMENT_PUSH_BUDGET_BYTES: number = PUSH_BUDGET;

/** The control plane's ext_proc service, running alone (serveDocumentOverExtProc). */
export interface ExtProcDocumentService {
  /** A client of it, connected as a sidecar's Envoy connects. */
  client: ExternalProcessorClient;
  /** The gRPC metadata a sidecar's calls for one merged document carry (`document`: group-discovery, openapi-index). */
  callMetadata(node: string, document: string): grpc.Metadata;
  close(): Promise<void>;
}

/**
 * The control plane's ext_proc service alone, on the Unix socket
 * `socketPath` (absolute), answering every merged-document call (a GET with a
 * JSON Accept) with `document`: the service a sidecar calls for documents too
 * large to push, without a cluster behind it.
 */
export async function serveDocumentOverExtProc(socketPath: string, document: Buffer): Promise<ExtProcDocumentService> {
  const server = createGrpcServer();
  new ExtProcServer({
    logger: silentLogger(),
    metrics: createMetrics(),
    discovery: () => ({
      status: 200,
      headers: [
        ['content-type', 'application/json'],
        ['etag', '"document"'],
      ],
      body: document,
    }),
  }).addToServer(server);
  const address = await listenUnix(server, socketPath);
  const client = new (envoyGrpc().envoy.service.ext_proc.v3.ExternalProcessor)(address, grpc.credentials.createInsecure());
  return {
    client,
    callMetadata: (node, documentName) => {
      const metadata = new grpc.Metadata();
      metadata.set(EXT_PROC_NODE_METADATA, node);
      metadata.set(EXT_PROC_DOCUMENT_METADATA, documentName);
      return metadata;
    },
    close: async () => {
      client.close();
      await shutdownGrpcServer(server, 100);
    },
  };
}
