// Loads the Envoy API (proto/envoy_api.proto and what it imports) once, both
// as gRPC service definitions and as a protobufjs root for encoding resources.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type protobuf from 'protobufjs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { loadProtoRoot, protoDir } from '../util/protoRoot.js';
import type { ProtoGrpcType } from '../generated/envoy_api.js';

const require = createRequire(import.meta.url);

const ENTRY = 'envoy_api.proto';

const xdsDeps = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');

/** proto/ comes first: it shadows files of the older bundled API snapshot. */
const PROTO_INCLUDE_DIRS: readonly string[] = [
  protoDir(ENTRY),
  join(xdsDeps, 'envoy-api'),
  join(xdsDeps, 'xds'),
  join(xdsDeps, 'googleapis'),
  join(xdsDeps, 'protoc-gen-validate'),
];

let grpcApi: ProtoGrpcType | undefined;
let root: protobuf.Root | undefined;

/** gRPC services and message constructors, keepCase (snake_case as in Envoy's docs). */
export function envoyGrpc(): ProtoGrpcType {
  if (!grpcApi) {
    const definition = protoLoader.loadSync(ENTRY, {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: false,
      oneofs: true,
      json: true,
      includeDirs: [...PROTO_INCLUDE_DIRS],
    });
    grpcApi = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
  }
  return grpcApi;
}

/** A protobufjs root with every Envoy type mvproxy uses, for encoding and JSON. */
export function envoyRoot(): protobuf.Root {
  if (!root) {
    root = loadProtoRoot([ENTRY], PROTO_INCLUDE_DIRS);
  }
  return root;
}
